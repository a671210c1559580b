import TracerModel
import TracerStore

extension Components.Schemas.SiteCalibration {
    /// The report, rounded as people read it (a tenth of a dB, a hundredth of the exponent);
    /// `room` names each kiosk's room.
    public init(_ report: CalibrationReport, room: (String) -> String?) {
        func r(_ x: Double, _ places: Double = 10) -> Double { (x * places).rounded() / places }
        let f = report.fit
        self.init(
            from: Timestamp(seconds: f.from).iso8601Seconds,
            to: Timestamp(seconds: f.to).iso8601Seconds,
            hearings: f.hearings,
            links: f.links,
            exponent: r(f.exponent, 100),
            exponentUncertainty: r(f.exponentUncertainty, 100),
            wallLoss: r(f.wallLoss),
            wallLossUncertainty: r(f.wallLossUncertainty),
            residual: r(f.residual),
            kiosks: f.kiosks.map { k in
                let known = k.heard + k.heardBy > 0
                return .init(
                    key: k.key,
                    room: room(k.key),
                    receiverOffset: known ? r(k.receiverOffset) : nil,
                    uncertainty: known ? r(k.uncertainty) : nil,
                    transmitOffset: k.heardBy > 0 ? r(k.transmitOffset) : nil,
                    heard: k.heard,
                    heardBy: k.heardBy
                )
            },
            changes: report.changes.map { .init(key: $0.key, shift: r($0.shift), uncertainty: r($0.uncertainty)) }
        )
    }
}

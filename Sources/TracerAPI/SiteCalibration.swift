import TracerModel
import TracerStore

extension Responses {
    /// `GET /v1/site/calibration`: the site's radio as its kiosks' hearings of each other fit it
    /// (the last hour), and the kiosks that changed in the last half hour.
    public struct SiteCalibration: Codable, Sendable {
        public struct Kiosk: Codable, Sendable {
            public var key: String
            @Null public var room: String?
            /// dB to add to its readings, and one standard error; null when nothing was heard
            /// of it or by it.
            @Null public var receiverOffset: Double?
            @Null public var uncertainty: Double?
            @Null public var transmitOffset: Double?
            public var heard: Int
            public var heardBy: Int
        }

        public struct Change: Codable, Sendable {
            public var key: String
            /// dB: positive when it reads lower than before (its offset rose).
            public var shift: Double
            public var uncertainty: Double
        }

        public var from: String
        public var to: String
        public var hearings: Int
        public var links: Int
        public var exponent: Double
        public var exponentUncertainty: Double
        public var wallLoss: Double
        public var wallLossUncertainty: Double
        public var residual: Double
        public var kiosks: [Kiosk]
        public var changes: [Change]

        /// The report, rounded as people read it (a tenth of a dB, a hundredth of the exponent);
        /// `room` names each kiosk's room.
        public init(_ report: CalibrationReport, room: (String) -> String?) {
            func r(_ x: Double, _ places: Double = 10) -> Double { (x * places).rounded() / places }
            let f = report.fit
            from = Timestamp(seconds: f.from).iso8601Seconds
            to = Timestamp(seconds: f.to).iso8601Seconds
            hearings = f.hearings
            links = f.links
            exponent = r(f.exponent, 100)
            exponentUncertainty = r(f.exponentUncertainty, 100)
            wallLoss = r(f.wallLoss)
            wallLossUncertainty = r(f.wallLossUncertainty)
            residual = r(f.residual)
            kiosks = f.kiosks.map { k in
                let known = k.heard + k.heardBy > 0
                return Kiosk(
                    key: k.key,
                    room: room(k.key),
                    receiverOffset: known ? r(k.receiverOffset) : nil,
                    uncertainty: known ? r(k.uncertainty) : nil,
                    transmitOffset: k.heardBy > 0 ? r(k.transmitOffset) : nil,
                    heard: k.heard,
                    heardBy: k.heardBy
                )
            }
            changes = report.changes.map { Change(key: $0.key, shift: r($0.shift), uncertainty: r($0.uncertainty)) }
        }
    }
}

import Foundation
import Hummingbird
import TracerAPI
import TracerModel
import TracerStore

extension API {
    /// The fit, up to now reused for `calibrationReuse` seconds (every kiosk asks for it).
    func siteCalibration(at: Timestamp?, heldExponent: Bool) async throws -> Components.Schemas.SiteCalibration {
        let now = clock().timeIntervalSince1970
        if at == nil, let kept = calibrations.withLock({ $0[heldExponent] }), now - kept.at < Self.calibrationReuse,
            now >= kept.at
        {
            return kept.fit
        }
        let fit = try await store.reading { db in try self.siteCalibration(at: at, heldExponent: heldExponent, in: db) }
        if at == nil { calibrations.withLock { $0[heldExponent] = (now, fit) } }
        return fit
    }

    /// `GET /v1/site/calibration[?at=TIME][&exponent=map]`: the last hour's fit of the site's
    /// radio from what its kiosks heard of each other, up to `at` (RFC 3339; by default now, or
    /// the last hearing stored if that is earlier), and the kiosks that changed in the last half
    /// hour. With `heldExponent`, the exponent is the map's (what kiosks range with), not fitted.
    func siteCalibration(
        at: Timestamp?,
        heldExponent: Bool = false,
        in db: StoreReader
    ) throws -> Components.Schemas.SiteCalibration {
        guard let site else {
            throw APIError(.notFound, .noSite, "no site is published on this server (tracer map publish FILE)")
        }
        let time: Double
        if let at {
            time = at.seconds
        } else {
            guard let last = try CalibrationReport.latest(in: db) else {
                throw APIError(
                    .notFound,
                    .noHearings,
                    "no kiosk has heard another anchor of the map yet: give kiosks a uuid, major and minor and run tracer advertise beside each daemon"
                )
            }
            time = min(clock().timeIntervalSince1970, last)
        }
        var exponent: Double?
        if heldExponent, case .logDistance(let n) = site.ranging.model { exponent = n }
        guard let report = try CalibrationReport.make(in: db, site: site, at: time, exponent: exponent) else {
            throw APIError(
                .notFound,
                .noHearings,
                "no kiosk heard another anchor of the map in the hour before \(Timestamp(seconds: time).iso8601Seconds)"
            )
        }
        return Components.Schemas.SiteCalibration(report) { site.anchor($0)?.room }
    }
}

import Foundation
import Hummingbird
import TracerAPI
import TracerModel
import TracerStore

extension API {
    /// `GET /v1/site/calibration[?at=TIME]`: the last hour's fit of the site's radio from what its
    /// kiosks heard of each other, up to `at` (RFC 3339; by default now, or the last hearing
    /// stored if that is earlier), and the kiosks that changed in the last half hour.
    func siteCalibration(at: Timestamp?, in db: StoreReader) throws -> Components.Schemas.SiteCalibration {
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
        guard let report = try CalibrationReport.make(in: db, site: site, at: time) else {
            throw APIError(
                .notFound,
                .noHearings,
                "no kiosk heard another anchor of the map in the hour before \(Timestamp(seconds: time).iso8601Seconds)"
            )
        }
        return Components.Schemas.SiteCalibration(report) { site.anchor($0)?.room }
    }
}

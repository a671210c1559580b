import Foundation
import Hummingbird
import HummingbirdTesting
import Testing
import TracerAPI
import TracerModel
import TracerSite
@_spi(Blocking) import TracerStore
import TracerTesting

@testable import TracerServer

/// `GET /v1/site/calibration`: the kiosks' hearings of each other, fitted, for the dashboard.
@Suite struct SiteCalibrationRouteTests {
    static func hear(_ f: ServerFixture, at end: Double, errors: [String: Double]) async throws {
        try await KioskHearingFixture.write(site: f.api.site!, into: f.store, at: end, errors: errors)
    }

    @Test func theDashboardReadsEveryKiosksFitAndWhoMayNot() async throws {
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        let clock = ManualClock(Timestamp(seconds: now.timeIntervalSince1970))
        let f = try await ServerFixture(now: now, clock: { Date(timeIntervalSince1970: clock.now().seconds) })
        try await f.app().test(.router) { client in
            func get(_ path: String, _ token: String?) async throws -> (HTTPResponse.Status, [UInt8]) {
                try await client.execute(
                    uri: path,
                    method: .get,
                    headers: token.map { ServerFixture.bearer($0) } ?? [:]
                ) {
                    ($0.status, Array($0.body.readableBytesView))
                }
            }
            // Nothing heard yet: a 404 that says what to do.
            let (none, noneBody) = try await get("/v1/site/calibration", f.admin)
            #expect(none == .notFound)
            #expect(String(decoding: noneBody, as: UTF8.self).contains("tracer advertise"))

            try await Self.hear(f, at: now.timeIntervalSince1970, errors: ["kiosk-lab": -4])
            let (status, body) = try await get("/v1/site/calibration", f.admin)
            #expect(status == .ok, "\(String(decoding: body, as: UTF8.self))")
            let c = try #require(APIJSON.decode(Components.Schemas.SiteCalibration.self, from: body))
            let lab = try #require(c.kiosks.first { $0.key == "kiosk-lab" })
            #expect(abs((lab.receiverOffset ?? 0) - 4) < 1, "reads 4 dB low: +4 to add")
            #expect(lab.room != nil && lab.heard > 0 && c.links > 0 && c.changes.isEmpty)

            // Its kiosks too (each follows its own offset), with the exponent held at the map's.
            let (held, heldBody) = try await get("/v1/site/calibration?exponent=map", f.kiosk)
            #expect(held == .ok, "\(String(decoding: heldBody, as: UTF8.self))")
            let h = try #require(APIJSON.decode(Components.Schemas.SiteCalibration.self, from: heldBody))
            #expect(h.exponent == 2 && h.exponentUncertainty == 0, "the example campus ranges at 2")
            #expect(abs((h.kiosks.first { $0.key == "kiosk-lab" }?.receiverOffset ?? 0) - 4) < 1)

            // Up to now, worked out once every five minutes: hearings stored since are in the next.
            try await Self.hear(f, at: now.timeIntervalSince1970, errors: ["kiosk-lab": -10])
            let (_, again) = try await get("/v1/site/calibration", f.admin)
            #expect(again == body, "the same fit, not worked out again")
            clock.advance(seconds: API.calibrationReuse)
            let (_, later) = try await get("/v1/site/calibration", f.admin)
            let l = try #require(APIJSON.decode(Components.Schemas.SiteCalibration.self, from: later))
            #expect(abs((l.kiosks.first { $0.key == "kiosk-lab" }?.receiverOffset ?? 0) - 10) < 1.5)

            // Nobody else; a bad time or exponent is a 400 naming it.
            #expect(try await get("/v1/site/calibration", f.device).0 == .forbidden)
            #expect(try await get("/v1/site/calibration", nil).0 == .unauthorized)
            let (bad, badBody) = try await get("/v1/site/calibration?at=soon", f.admin)
            #expect(bad == .badRequest && String(decoding: badBody, as: UTF8.self).contains("at takes"))
            let (badExponent, badExponentBody) = try await get("/v1/site/calibration?exponent=2.2", f.admin)
            #expect(
                badExponent == .badRequest
                    && String(decoding: badExponentBody, as: UTF8.self).contains(
                        "a parameter is none of the values it takes"
                    ),
                "\(String(decoding: badExponentBody, as: UTF8.self))"
            )
        }
    }
}

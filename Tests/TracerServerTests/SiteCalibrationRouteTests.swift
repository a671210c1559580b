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
    /// An hour of every example-campus kiosk hearing every other anchor of its building, as the
    /// model has it, with `errors` (dB added to what a kiosk hears and to what it sends).
    static func hear(_ f: ServerFixture, at end: Double, errors: [String: Double]) throws {
        let site = f.api.site!
        var batch = WriteBatch()
        for rx in site.anchors where rx.kind == .kiosk {
            let ri = site.rooms.firstIndex { $0.key == rx.room }!
            for tx in site.anchors where tx.key != rx.key {
                let ti = site.rooms.firstIndex { $0.key == tx.room }!
                guard site.rooms[ri].building == site.rooms[ti].building else { continue }
                let walls = Double(Room.walls(from: tx.position, in: ti, to: rx.position, in: ri, rooms: site.rooms))
                let mean =
                    -59 - 20 * log10(max(0.5, tx.position.distance(to: rx.position))) - 5 * walls
                    + (errors[rx.key] ?? 0) + (tx.kind == .kiosk ? errors[tx.key] ?? 0 : 0)
                for slot in stride(from: end - 3600, to: end, by: 300) {
                    let h = KioskHearing(
                        receiver: rx.key,
                        emitter: tx.key,
                        rssi: mean,
                        count: 120,
                        spread: 3,
                        weakest: -110,
                        measuredPower: -59,
                        start: slot,
                        end: slot + 300
                    )
                    batch.set(try Collections.hearings(at: rx.key).document(Hearing.id(h)), Hearing.data(h))
                }
            }
        }
        try f.store.commit(batch)
    }

    @Test func theDashboardReadsEveryKiosksFitAndWhoMayNot() async throws {
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        let f = try await ServerFixture(now: now)
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

            try Self.hear(f, at: now.timeIntervalSince1970, errors: ["kiosk-lab": -4])
            let (status, body) = try await get("/v1/site/calibration", f.admin)
            #expect(status == .ok, "\(String(decoding: body, as: UTF8.self))")
            let c = try #require(APIJSON.decode(Components.Schemas.SiteCalibration.self, from: body))
            let lab = try #require(c.kiosks.first { $0.key == "kiosk-lab" })
            #expect(abs((lab.receiverOffset ?? 0) - 4) < 1, "reads 4 dB low: +4 to add")
            #expect(lab.room != nil && lab.heard > 0 && c.links > 0 && c.changes.isEmpty)

            // Only the site's admins; a bad time is a 400 naming it.
            #expect(try await get("/v1/site/calibration", f.device).0 == .forbidden)
            #expect(try await get("/v1/site/calibration", f.kiosk).0 == .forbidden)
            #expect(try await get("/v1/site/calibration", nil).0 == .unauthorized)
            let (bad, badBody) = try await get("/v1/site/calibration?at=soon", f.admin)
            #expect(bad == .badRequest && String(decoding: badBody, as: UTF8.self).contains("at takes"))
        }
    }
}

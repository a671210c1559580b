import Foundation
import TracerModel
import TracerSite
import TracerStore

/// What the site server fits its kiosks from, made to order: an hour of every kiosk of a site
/// hearing every other anchor of its building as the log-distance model has it (exponent 2,
/// 5 dB a wall), in 5-minute slots, for the fit (`GET /v1/site/calibration`) to recover.
public enum KioskHearingFixture {
    /// Writes the hour ending at `end` into `store`; `errors` are dB added to what a kiosk hears
    /// and to what it sends (a kiosk reading 4 dB low: -4, fitted as +4).
    public static func write(
        site: Site,
        into store: DocumentStore,
        at end: Double,
        errors: [String: Double]
    ) async throws {
        var batch = WriteBatch()
        for rx in site.anchors where rx.kind == .kiosk {
            guard let ri = site.rooms.firstIndex(where: { $0.key == rx.room }) else { continue }
            for tx in site.anchors where tx.key != rx.key {
                guard let ti = site.rooms.firstIndex(where: { $0.key == tx.room }),
                    site.rooms[ri].building == site.rooms[ti].building
                else { continue }
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
        let whole = batch
        try await store.writing { db in try db.commit(whole) }
    }
}

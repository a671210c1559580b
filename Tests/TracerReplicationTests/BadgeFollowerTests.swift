import Foundation
import Logging
import Testing
import TracerBadges
import TracerModel
@_spi(Blocking) import TracerStore
import TracerTesting

@testable import TracerReplication

/// A kiosk's days of badge ids: those older than a fortnight are deleted from its store and its
/// resolver, the rest kept.
@Suite struct BadgeFollowerTests {
    @Test func aKioskForgetsDaysOlderThanAFortnightAndKeepsTheRest() async throws {
        let (store, dir) = try DocumentStore.temporary()
        let today = BadgeIDDay.day(of: Date().timeIntervalSince1970)
        let badges = [BadgeKey(serial: "abcdefgh", number: 1, key: .init(data: [UInt8](repeating: 5, count: 16)))]
        let offsets = [-20, -15, -14, -1, 0, 1]
        for offset in offsets {
            let day = UInt32(Int(today) + offset * 86_400)
            try await store.writing { db in
                try db.set(BadgeIDDays.path(day), BadgeIDDays.data(BadgeIDDay(badges: badges, day: day, version: 1)))
            }
        }
        try "tracer_x".write(toFile: dir.file("token"), atomically: true, encoding: .utf8)
        // No server is asked: forgetting is the kiosk's own.
        let upstream = try Upstream("http://127.0.0.1:9", tokenFile: dir.file("token"))
        let follower = try await BadgeFollower.kiosk(
            upstream: upstream,
            store: store,
            bits: 10,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        #expect(follower.resolver.days.count == offsets.count)
        await follower.forget(before: today - 14 * 86_400)
        let kept = [-14, -1, 0, 1].map { UInt32(Int(today) + $0 * 86_400) }
        #expect(try await store.reading { db in try BadgeIDDays.load(from: db) }.map(\.day).sorted() == kept)
        #expect(follower.resolver.days == kept)
        try await upstream.shutdown()
    }
}

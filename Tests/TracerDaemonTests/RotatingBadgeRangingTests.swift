import Crypto
import Foundation
import Testing
import TracerBadges

@testable import TracerDaemon
@testable import TracerRanging
@testable import TracerSite

/// A kiosk ranging rotating badges: a badge whose id changes inside a window is one person in
/// one window; an id no badge has, or two badges share, is counted and dropped.
@Suite struct RotatingBadgeRangingTests {
    static let uuid = UUIDBytes("5a1e0b5c-7e2d-4c1a-9b8e-3f6d2a9c4e71")!
    static let boundary = 1_795_700_736.0  // a multiple of 1,024: an epoch starts here

    static func advert(_ t: Double, major: UInt16, minor: UInt16, rssi: Int = -60) -> Advert {
        var data: [UInt8] = [0x02, 0x15]
        withUnsafeBytes(of: uuid.high.bigEndian) { data += $0 }
        withUnsafeBytes(of: uuid.low.bigEndian) { data += $0 }
        data += [UInt8(major >> 8), UInt8(major & 0xFF), UInt8(minor >> 8), UInt8(minor & 0xFF), 0xC5]
        return Advert(time: t, rssi: rssi, manufacturerData: [(company: 0x004C, data: data)])
    }

    @Test func aWindowAcrossAChangeOfIDIsOnePersonAndStrangersAreCounted() throws {
        #expect(Self.boundary.truncatingRemainder(dividingBy: 1024) == 0)
        var site = try Site.load(file: DaemonReplayTests.mapPath)
        site.badgeUUID = Self.uuid
        let key = { (s: String) in RotatingID.badgeKey(siteKey: Array(repeating: 9, count: 32), serial: s) }
        let badges = [
            BadgeKey(serial: "alice", number: 1, key: key("alice")),
            BadgeKey(serial: "bob", number: 2, key: key("bob")),
            // Two badges programmed with one key: their ids resolve to neither.
            BadgeKey(serial: "twin1", number: 3, key: key("twin")),
            BadgeKey(serial: "twin2", number: 4, key: key("twin")),
        ]
        var ranger = try Ranger(site: site, mode: .gateway(anchor: "kiosk-lab"))
        ranger.badges = ResolutionTable(badges: badges, now: Self.boundary)
        var out: [InteractionSummary] = []
        var expected = (unknown: 0, collided: 0)
        // Alice and Bob a metre or so from the kiosk for 40 s across the epoch's start, an advert
        // every half second, each with the id of the epoch it is sent in.
        for step in 0..<80 {
            let t = Self.boundary - 20 + Double(step) / 2
            let epoch = RotatingID.epochStart(t)
            for (i, b) in badges.prefix(2).enumerated() {
                let id = RotatingID.id(key: b.key, epochStart: epoch)
                ranger.add(Self.advert(t + Double(i) * 0.1, major: id.major, minor: id.minor), into: &out)
            }
            let twin = RotatingID.id(key: badges[2].key, epochStart: epoch)
            ranger.add(Self.advert(t + 0.2, major: twin.major, minor: twin.minor), into: &out)
            expected.collided += 1
            if step % 4 == 0 {
                // A badge of another site, or one revoked.
                ranger.add(Self.advert(t + 0.3, major: UInt16(step), minor: 4242), into: &out)
                expected.unknown += 1
            }
        }
        ranger.closeAll(into: &out)
        #expect(ranger.counts.badgeCollisions == expected.collided)
        #expect(ranger.counts.badgesUnresolved == expected.unknown)
        #expect(ranger.counts.attributed == 160)
        #expect(Set(out.map(\.deviceID)) == ["badge:alice", "badge:bob"])
        for device in ["badge:alice", "badge:bob"] {
            let windows = out.filter { $0.deviceID == device }.sorted { $0.start < $1.start }
            // 30-s windows aligned to the clock: the one holding the change of id is one window
            // with the adverts of both ids, and no window is split by it.
            let slots = Set(windows.map { ($0.start / 30).rounded(.down) })
            #expect(slots.count == windows.count, "\(device): \(windows.map { ($0.start, $0.end) })")
            #expect(windows.contains { $0.start < Self.boundary && $0.end > Self.boundary }, "\(device)")
            #expect(windows.map(\.samples).reduce(0) { $0 + $1 } == 80)
        }
    }

    /// Without a table (none given yet) a badge's adverts are unresolved, never taken for a static device.
    @Test func noTableResolvesNobody() throws {
        var site = try Site.load(file: DaemonReplayTests.mapPath)
        site.badgeUUID = Self.uuid
        var ranger = try Ranger(site: site, mode: .gateway(anchor: "kiosk-lab"))
        var out: [InteractionSummary] = []
        ranger.add(Self.advert(Self.boundary, major: 1, minor: 2), into: &out)
        ranger.closeAll(into: &out)
        #expect(out.isEmpty && ranger.counts.badgesUnresolved == 1)
    }
}

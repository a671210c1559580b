import Crypto
import Foundation
import Testing
import TracerBadges
import TracerTesting

/// The rotating ids against an implementation written elsewhere (Python's `cryptography`: HKDF
/// and AES-ECB), byte for byte, and the kiosk's table that resolves them.
@Suite struct RotatingIDTests {
    static let siteKey = (0..<32).map { UInt8($0 * 7 + 3) }

    /// What the design's construction gives, computed by Python's `cryptography` (Debian's
    /// python3-cryptography): "SERIAL BITS START MAJOR MINOR" lines.
    static func reference(_ cases: [(serial: String, bits: Int, start: UInt32)]) async throws -> [String] {
        let script = """
            import sys
            from cryptography.hazmat.primitives import hashes
            from cryptography.hazmat.primitives.kdf.hkdf import HKDF
            from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
            site = bytes((i * 7 + 3) % 256 for i in range(32))
            for line in sys.argv[1:]:
                serial, bits, start = line.rsplit(" ", 2)
                key = HKDF(algorithm=hashes.SHA256(), length=16, salt=None, info=b"tracer badge " + serial.encode()).derive(site)
                block = bytes(11) + bytes([int(bits)]) + int(start).to_bytes(4, "big")
                e = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
                out = e.update(block) + e.finalize()
                print(serial, bits, start, int.from_bytes(out[0:2], "big"), int.from_bytes(out[2:4], "big"))
            """
        let r = try await TracerProcess.running(
            ["-c", script] + cases.map { "\($0.serial) \($0.bits) \($0.start)" },
            program: "/usr/bin/python3"
        )
        try #require(r.status == 0, "\(r.stderr)")
        return r.stdout.split(separator: "\n").map(String.init)
    }

    @Test func idsAreTheDesignsByteForByte() async throws {
        let cases: [(serial: String, bits: Int, start: UInt32)] = [
            ("0001", 10, RotatingID.epochStart(1_795_700_000)), ("0001", 10, RotatingID.epochStart(1_795_701_024)),
            ("B-42", 10, 0), ("B-42", 8, RotatingID.epochStart(1_795_700_000, bits: 8)),
            ("badge été", 10, UInt32.max & ~1023), ("9", 12, RotatingID.epochStart(1_000_000_000, bits: 12)),
        ]
        let expected = try await Self.reference(cases)
        #expect(expected.count == cases.count)
        for (c, line) in zip(cases, expected) {
            let id = RotatingID.id(
                key: RotatingID.badgeKey(siteKey: Self.siteKey, serial: c.serial),
                epochStart: c.start,
                bits: c.bits
            )
            #expect("\(c.serial) \(c.bits) \(c.start) \(id.major) \(id.minor)" == line)
        }
    }

    static func badges(_ n: Int) -> [BadgeKey] {
        (0..<n).map { i in
            BadgeKey(
                serial: String(format: "%04d", i),
                number: UInt32(i + 1),
                key: RotatingID.badgeKey(siteKey: siteKey, serial: "\(i)")
            )
        }
    }

    @Test func epochsStartAtMultiplesOfTwoToTheK() {
        #expect(RotatingID.epochStart(1023.9) == 0)
        #expect(RotatingID.epochStart(1024) == 1024)
        #expect(RotatingID.epochStart(1_795_700_000) == 1_795_699_712)
        #expect(RotatingID.epochStart(1_795_700_000, bits: 8) == 1_795_699_968)
        #expect(RotatingID.deviceID(serial: "0001") == "badge:0001")
    }

    /// A badge resolves in its epoch and two each side (a drifting clock), not three away; an id
    /// nobody has is unknown; one two badges share resolves to neither.
    @Test func theTableResolvesTheEpochsAroundNowOnly() {
        let now = 1_795_700_000.0
        let badges = Self.badges(200)
        let table = ResolutionTable(badges: badges, now: now)
        #expect(table.count >= 200 * 5 - 2)
        let start = RotatingID.epochStart(now)
        for (i, badge) in badges.enumerated().prefix(20) {
            for step in -2...2 {
                let id = RotatingID.id(key: badge.key, epochStart: UInt32(Int(start) + step * 1024))
                #expect(table.resolve(major: id.major, minor: id.minor) == .badge(serial: badges[i].serial))
            }
            let later = RotatingID.id(key: badge.key, epochStart: start + 3 * 1024)
            #expect(table.resolve(major: later.major, minor: later.minor) != .badge(serial: badges[i].serial))
        }
        // Two badges with one key share every id: neither is taken for the other.
        let twins = ResolutionTable(
            badges: [
                BadgeKey(serial: "a", number: 1, key: badges[0].key),
                BadgeKey(serial: "b", number: 2, key: badges[0].key),
            ],
            now: now
        )
        let id = RotatingID.id(key: badges[0].key, epochStart: start)
        #expect(twins.resolve(major: id.major, minor: id.minor) == .collision)
        var unknown = 0
        for m in UInt16(0)..<200 where table.resolve(major: m, minor: 12_345) == .unknown { unknown += 1 }
        #expect(unknown >= 199)
    }

    /// A kiosk's table from the days of ids its server sent is the table the keys make: the
    /// same badge for every id of the five epochs, at any time of day, midnight included.
    @Test func daysOfIDsResolveAsTheKeysDo() {
        let badges = Self.badges(50)
        let midnight = 1_795_651_200.0  // 2026-11-26 00:00 UTC
        let days = (-1...1).map { d in
            BadgeIDDay(badges: badges, day: BadgeIDDay.day(of: midnight + Double(d) * 86_400), version: 3)
        }
        #expect(days.allSatisfy { $0.isWhole })
        let epochs = days.map(\.epochs).reduce(0, +)
        #expect(epochs == 253)  // 3 days of 84.375 epochs, each counted once
        for now in [midnight - 1, midnight, midnight + 600, midnight + 43_210] {
            let fromKeys = ResolutionTable(badges: badges, now: now)
            let fromDays = ResolutionTable(days: days, now: now)
            #expect(fromDays.epochsKnown == 5 && fromDays.count == fromKeys.count, "\(now)")
            let start = RotatingID.epochStart(now)
            for b in badges {
                for step in -3...3 {
                    let id = RotatingID.id(key: b.key, epochStart: UInt32(Int(start) + step * 1024))
                    #expect(
                        fromDays.resolve(major: id.major, minor: id.minor)
                            == fromKeys.resolve(major: id.major, minor: id.minor)
                    )
                }
            }
        }
        // Without the day after, the last epochs of today are known only on this side.
        let partial = ResolutionTable(days: Array(days.prefix(2)), now: midnight + 86_400 - 1)
        #expect(partial.epochsKnown == 3)
        // A day packs to bytes and back.
        #expect(BadgeIDDay.unpack(days[1].packedIDs) == days[1].ids)
        #expect(BadgeIDDay.unpack([1, 2, 3]) == nil)
    }

    @Test func daysAreNamedAsCalendarsNameThem() {
        #expect(BadgeIDDay.name(1_795_651_200) == "2026-11-26")
        #expect(BadgeIDDay.name(0) == "1970-01-01")
        #expect(BadgeIDDay.name(951_782_400) == "2000-02-29")
        #expect(BadgeIDDay.day(named: "2026-11-26") == 1_795_651_200)
        #expect(BadgeIDDay.day(named: "2000-02-29") == 951_782_400)
        for bad in ["2026-02-30", "2026-13-01", "26-11-26", "2026-11-26T00", "", "1969-12-31"] {
            #expect(BadgeIDDay.day(named: bad) == nil, "\(bad)")
        }
        #expect(BadgeIDDay.etag(version: 4, bits: 10, day: 1_795_651_200) == "\"v4-k10-2026-11-26\"")
    }

    /// A revoked badge leaves the resolver's tables at the next one built.
    @Test func newMaterialReplacesTheTables() {
        let badges = Self.badges(10)
        let resolver = BadgeResolver(.keys(badges, version: 1))
        let now = 1_795_700_000.0
        let id = RotatingID.id(key: badges[3].key, epochStart: RotatingID.epochStart(now))
        #expect(resolver.table(at: now).resolve(major: id.major, minor: id.minor) == .badge(serial: "0003"))
        let revision = resolver.revision
        resolver.replace(.keys(badges.filter { $0.serial != "0003" }, version: 2))
        #expect(resolver.revision != revision)
        #expect(resolver.table(at: now).resolve(major: id.major, minor: id.minor) == .unknown)
    }
}

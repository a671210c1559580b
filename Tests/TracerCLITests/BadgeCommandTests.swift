import Foundation
import Testing
import TracerBadges
@_spi(Blocking) import TracerStore
import TracerTesting

/// Rotating badges through the built binary: `tracer badge …` on the site server's store, a
/// simulated morning of rotating badges, a kiosk that resolves them from the ids its site server
/// sends (never a key), revocation, and a kiosk cut off from its server for days.
@Suite(.serialized, .disabled(if: TestBackend.isPostgres, "SQLite stores of a site and its kiosk"))
struct BadgeCommandTests {
    let dir = TemporaryDirectory("tracer-badges")
    static let uuid = "5a1e0b5c-7e2d-4c1a-9b8e-3f6d2a9c4e71"
    var site: String { dir.file("site.sqlite") }

    /// The example campus with rotating badges.
    func badgeMap() throws -> String { try Self.badgeMap(in: dir) }

    /// The same, written in `dir`.
    static func badgeMap(in dir: TemporaryDirectory) throws -> String {
        let text = try String(contentsOfFile: DaemonCommandTests.map, encoding: .utf8)
            .replacingOccurrences(of: "\nsettings:\n", with: "\nsettings:\n  badgeUUID: \(Self.uuid)\n")
        try #require(text.contains("badgeUUID"))
        let file = dir.file("badges.yaml")
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    @discardableResult
    func tracer(_ args: [String], store: String? = nil, status: Int32 = 0) async throws -> TracerProcess.Result {
        let r = try await TracerProcess.running(args + (store.map { ["--store", $0] } ?? []))
        try #require(
            r.status == status,
            "tracer \(args.joined(separator: " ")) exited \(r.status), not \(status): \(r.stdout) \(r.stderr)"
        )
        return r
    }

    /// Each mistake is one line and exit 1.
    func refused(_ args: [String], store: String? = nil, saying: String) async throws {
        let r = try await tracer(args, store: store, status: 1)
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(args): \(r.stderr)")
        #expect(r.stderr.contains(saying), "\(args): \(r.stderr)")
    }

    func issued(_ json: String) throws -> [[String: String]] {
        try #require(JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: String]])
    }

    @Test func badgesAreIssuedRevokedAndRekeyedSayingEachMistakeInOneLine() async throws {
        try await refused(["badge", "issue", "--count", "2"], store: site, saying: "no store at")
        try await tracer(["map", "publish", DaemonCommandTests.map], store: site)
        try await refused(["badge", "issue", "--count", "2"], store: site, saying: "has no rotating badges")
        try await tracer(["map", "publish", try badgeMap()], store: site)
        try await refused(["badge", "issue", "--count", "0"], store: site, saying: "--count takes 1 to 100000")

        let badges = try issued(try await tracer(["badge", "issue", "--count", "3", "--json"], store: site).stdout)
        #expect(badges.count == 3)
        #expect(Set(badges.compactMap { $0["serial"] }).count == 3)
        for b in badges {
            let serial = try #require(b["serial"])
            #expect(b["deviceId"] == "badge:\(serial)")
            #expect(b["key"]?.count == 32 && b["key"]?.allSatisfy(\.isHexDigit) == true, "\(b)")
        }
        let (a, b) = (badges[0]["serial"]!, badges[1]["serial"]!)
        try await refused(["badge", "revoke", "nosuchbadge"], store: site, saying: "no badge 'nosuchbadge'")
        try await refused(["badge", "revoke", String(a.dropLast())], store: site, saying: "the closest are \(a)")
        #expect(try await tracer(["badge", "revoke", a], store: site).stdout.contains("badge \(a) revoked"))
        try await refused(["badge", "revoke", a], store: site, saying: "already revoked")

        // A new site key: the two badges in use resolve under the old until reprovisioned.
        let rekey = try await tracer(["badge", "rekey"], store: site).stdout
        #expect(rekey.contains("2 badges still use the old key"), "\(rekey)")
        var list = try await tracer(["badge", "list"], store: site).stdout
        #expect(list.split(separator: "\n").filter { $0.contains("reprovision") }.count == 2, "\(list)")
        #expect(list.contains("\(a)  badge:\(a)") && list.contains("revoked"), "\(list)")
        let again = try issued(
            "[" + (try await tracer(["badge", "reprovision", b, "--json"], store: site).stdout) + "]"
        )
        #expect(again.first?["key"] != badges[1]["key"] && again.first?["serial"] == b)
        list = try await tracer(["badge", "list"], store: site).stdout
        #expect(!list.contains("reprovision \(b)") && list.contains("reprovision \(badges[2]["serial"]!)"), "\(list)")
        try await refused(["badge", "reprovision", a], store: site, saying: "is revoked")

        // A site with rotating badges and nothing to resolve them with records none of them.
        let kiosk = dir.file("lonely.sqlite")
        try await refused(
            ["daemon", "--map", try badgeMap(), "--anchor", "kiosk-lab", "--source", "replay:/dev/null"],
            store: kiosk,
            saying: "has no badges to resolve them"
        )
    }

    /// Documents in `collection` (a `db query` line each).
    func documents(_ collection: String, store: String, _ filter: [String] = []) async throws -> [String] {
        let r = try await tracer(["db", "query", collection] + filter.flatMap { ["--where", $0] }, store: store)
        return r.stdout.split(separator: "\n").map(String.init).filter { $0.hasPrefix(collection) }
    }

    @Test func aKioskResolvesRotatingBadgesFromItsServersIDsAndForgetsARevokedOne() async throws {
        let map = try badgeMap()
        try await tracer(["map", "publish", map], store: site)
        let badges = try issued(try await tracer(["badge", "issue", "--count", "12", "--json"], store: site).stdout)
        // An hour and a half of twelve people, from yesterday 08:00 UTC: the epochs change five times.
        try await tracer([
            "simulate", "--map", map, "--people", "12", "--hours", "1.5", "--out", dir.file("sim"),
            "--badges-from", site,
        ])
        let replay = "replay:" + dir.file("sim/replays/kiosk-cafe.jsonl")
        // The site's store as it is now, for resolving the same replay with the keys below.
        let local = dir.file("local.sqlite")
        try FileManager.default.copyItem(atPath: site, toPath: local)
        let server = try await ReplicationTests.SiteServer(store: site)
        defer { server.process.kill() }
        let token = dir.file("cafe.token")
        try (try await tracer(["token", "create", "--role", "kiosk", "--anchor", "kiosk-cafe"], store: site).stdout)
            .write(toFile: token, atomically: true, encoding: .utf8)
        let kiosk = dir.file("cafe.sqlite")
        let upstream = ["--upstream", server.url, "--token-file", token]
        let first = try await tracer(["daemon", "--anchor", "kiosk-cafe", "--source", replay] + upstream, store: kiosk)
        #expect(!first.stdout.contains("rotating badges:"), "every advert resolved: \(first.stdout)")

        // At the site: interactions of the issued badges only, by their stable device ids, with
        // no beacon identity; the ids the kiosk held stayed on the kiosk.
        let stored = try await documents("beacons/kiosk-cafe/interactions", store: site)
        #expect(stored.count > 20, "\(first.stdout)")
        let devices = Set(stored.compactMap { $0.firstMatch(of: /deviceId: "([^"]+)"/).map { String($0.1) } })
        #expect(devices.isSubset(of: Set(badges.compactMap { $0["deviceId"] })) && devices.count >= 3, "\(devices)")
        #expect(stored.allSatisfy { !$0.contains("beacon:") && !$0.contains("major") }, "\(stored.first ?? "")")
        #expect(try await documents("badgeIDs", store: kiosk).count >= 4)
        #expect(try await documents("badgeIDs", store: site).isEmpty)
        #expect(try await documents("config", store: kiosk).allSatisfy { !$0.contains("badgeKeys") })

        // The same replay resolved with the keys, on the site's own store: the same windows.
        try await tracer(["daemon", "--anchor", "kiosk-cafe", "--source", replay], store: local)
        #expect(try await documents("beacons/kiosk-cafe/interactions", store: local).count == stored.count)

        // Revoked: the kiosk's next run hears the new version and resolves the badge to nobody.
        let revoked = try #require(devices.sorted().first).replacingOccurrences(of: "badge:", with: "")
        let before = try await documents(
            "beacons/kiosk-cafe/interactions",
            store: kiosk,
            ["deviceId == \"badge:\(revoked)\""]
        )
        try await tracer(["badge", "revoke", revoked], store: site)
        let second = try await tracer(
            ["daemon", "--anchor", "kiosk-cafe", "--source", replay] + upstream,
            store: kiosk
        )
        #expect(
            second.stdout.contains("rotating badges:") && second.stdout.contains("matched no badge"),
            "\(second.stdout)"
        )
        let after = try await documents(
            "beacons/kiosk-cafe/interactions",
            store: kiosk,
            ["deviceId == \"badge:\(revoked)\""]
        )
        #expect(after.count == before.count && !before.isEmpty, "\(before.count) → \(after.count)")

        // Cut off from the server: the days it holds still resolve the day after tomorrow; a
        // day beyond them resolves nobody, and says so.
        server.process.kill()
        for (offset, held) in [(2, true), (BadgeIDDay.horizon + 1, false)] {
            let later = dir.file("later-\(offset)")
            try await tracer([
                "simulate", "--map", map, "--people", "11", "--hours", "0.5", "--out", later, "--badges-from", site,
                "--start", Self.day(offset: offset),
            ])
            let offline = try await tracer(
                [
                    "daemon", "--anchor", "kiosk-cafe", "--source", "replay:\(later)/replays/kiosk-cafe.jsonl",
                    "--drain-timeout", "1",
                ] + upstream,
                store: kiosk
            )
            let unresolved = offline.stdout.firstMatch(of: /rotating badges: (\d+) adverts/).map { Int($0.1)! } ?? 0
            let attributed = try #require(offline.stdout.firstMatch(of: /(\d+) attributed/).map { Int($0.1)! })
            if held {
                #expect(attributed > 1000 && unresolved == 0, "\(offline.stdout)")
            } else {
                #expect(attributed == 0 && unresolved > 1000, "\(offline.stdout)")
            }
        }
    }

    /// The date `offset` days from today (UTC), as `--start` takes it.
    static func day(offset: Int) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withFullDate]
        return f.string(from: Date().addingTimeInterval(Double(offset) * 86_400))
    }
}

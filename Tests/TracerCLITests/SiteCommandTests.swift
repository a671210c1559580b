import Foundation
import Testing
import TracerTesting

/// The site lives in the store: `tracer map publish`, commands that use it without `--map`, and
/// a map file that disagrees with it.
@Suite struct SiteCommandTests {
    let dir = TemporaryDirectory("tracer-site")
    var store: String { dir.file("s.sqlite") }
    static let map = DaemonCommandTests.map

    func tracer(_ args: String...) async throws -> TracerProcess.Result {
        try await TracerProcess.running(args + ["--store", store])
    }

    /// The example campus with one line changed.
    func variant(_ name: String, replacing old: String, with new: String) throws -> String {
        let text = try String(contentsOfFile: Self.map, encoding: .utf8)
        try #require(text.contains(old), "the example map no longer has '\(old)'")
        let file = dir.file(name)
        try text.replacingOccurrences(of: old, with: new).write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    @Test func publishShowAndPublishAgain() async throws {
        let first = try await tracer("map", "publish", Self.map)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("published to \(store) (Example Campus"), "\(first.stdout)")
        let again = try await tracer("map", "publish", Self.map)
        #expect(again.stdout.contains("already the site of"), "\(again.stdout)")
        let shown = try await tracer("map", "show")
        let source = try String(contentsOfFile: Self.map, encoding: .utf8)
        #expect(shown.stdout == (source.hasSuffix("\n") ? source : source + "\n"))
        let doc = try await tracer("db", "get", "config/site", "--json")
        for field in [#""site":"Example Campus""#, #""digest":"#, #""anchors":[{"#, #""publishedAt":{"#] {
            #expect(doc.stdout.contains(field), "\(field): \(doc.stdout.prefix(300))")
        }
    }

    @Test func withoutASiteShowSaysHowToPublishOne() async throws {
        _ = try await tracer("db", "set", "beacons/x", "{}")
        let r = try await tracer("map", "show")
        #expect(r.status == 1 && r.stderr.contains("no site is published") && r.stderr.contains("map publish"))
        let daemon = try await tracer("daemon", "--anchor", "kiosk-lab", "--source", "replay:/dev/null")
        #expect(daemon.status == 1 && daemon.stderr.contains("no site: give --map FILE"), "\(daemon.stderr)")
    }

    /// A daemon with no --map ranges under the published site; one given a map whose anchors
    /// moved is refused with a line naming both maps and the anchor.
    @Test func theDaemonUsesThePublishedSiteAndRefusesADisagreeingMap() async throws {
        _ = try await tracer("map", "publish", Self.map)
        var f = ReplayFixture()
        f.rate = 2
        f.badges = [
            .init(
                uuid: "f7826da6-4fa2-4e98-8024-bc5b71e0893e",
                major: 1,
                minor: 7,
                address: "AA:BB:CC:00:00:07",
                distance: 1,
                from: 1_795_341_600,
                to: 1_795_341_660
            )
        ]
        let replay = dir.file("r.jsonl")
        try f.write(to: replay)
        let ranged = try await tracer("daemon", "--anchor", "kiosk-lab", "--source", "replay:\(replay)")
        #expect(ranged.status == 0 && ranged.stdout.contains("wrote 2 interaction documents"), "\(ranged.stderr)")

        let moved = try variant(
            "moved.yaml",
            replacing: "room: lab,      position: [6, 9.5]",
            with: "room: lab,      position: [7, 9.5]"
        )
        let refused = try await tracer(
            "daemon",
            "--map",
            moved,
            "--anchor",
            "kiosk-lab",
            "--source",
            "replay:\(replay)"
        )
        #expect(refused.status == 1, "\(refused.stdout)")
        #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        for part in [moved, Self.map, "kiosk-lab: at [7.0, 9.5] here, [6.0, 9.5] there", "tracer map publish"] {
            #expect(refused.stderr.contains(part), "\(part): \(refused.stderr)")
        }
        let count = try await tracer("db", "query", "beacons/kiosk-lab/interactions", "--count")
        #expect(count.stdout == "2\n", "the refused daemon wrote nothing")

        // Publishing replaces the site on purpose, and says what changed.
        let replaced = try await tracer("map", "publish", moved)
        #expect(replaced.stdout.contains("replacing the site from \(Self.map): kiosk-lab: at [7.0, 9.5]"))
    }

    /// The card's own `tracer self-report result.png`, with no --map, applies the published
    /// site's rule: at a 2 m radius under the sum rule the colleague (1 m + 1.5 m) is not
    /// flagged; re-published with the defaults, flagging again finds them.
    @Test func aSelfReportWithoutAMapAppliesThePublishedSite() async throws {
        let t = ExposureCommandTests()
        try await t.rangeALabMorning()  // its daemon publishes the example campus
        let tight = try variant(
            "tight.yaml",
            replacing: "\nsettings:\n",
            with: "\nsettings:\n  exposureRadius: 2\n  separation: sum\n"
        )
        let published = try await t.tracer("map", "publish", tight)
        #expect(published.stdout.contains("(same anchors)"), "\(published.stdout)")
        let r = try await t.tracer(
            "self-report",
            ResultImages.file("lab-pcr-positive.png"),
            "--device",
            "\(ExposureCommandTests.uuid):1:1",
            "--yes"
        )
        #expect(r.status == 0 && r.stdout.contains("exposures: nobody was within 2 m"), "\(r.stdout)\(r.stderr)")
        _ = try await t.tracer("map", "publish", Self.map)
        let reports = try await t.tracer("db", "query", "reports", "--json")
        let rows = try JSONSerialization.jsonObject(with: Data(reports.stdout.utf8)) as? [[String: Any]] ?? []
        let id = (rows.first?["path"] as? String)?.split(separator: "/").last.map(String.init) ?? ""
        let again = try await t.tracer("report", "flag", id)
        #expect(again.stdout.hasPrefix("report \(id): 1 device exposed, 1 exposure"), "\(again.stdout)\(again.stderr)")
    }
}

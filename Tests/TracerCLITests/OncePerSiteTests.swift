import Foundation
import Testing
import TracerModel
@_spi(Blocking) import TracerStore
import TracerTesting

/// `tracer report follow` and `tracer notify` run once per site, as real processes on both
/// backends: a second instance waits, and takes over when the first is SIGKILLed.
@Suite(.disabled(if: TestBackend.isPostgres, "runs both backends itself"))
struct OncePerSiteTests {
    let dir = TemporaryDirectory("tracer-once")

    func location(_ postgres: Bool) throws -> String {
        postgres ? try TestBackend.freshPostgresStore() : dir.file("site.sqlite")
    }

    @discardableResult
    func tracer(_ args: [String], store: String) async throws -> TracerProcess.Result {
        let r = try await TracerProcess.running(args + ["--store", store])
        try #require(r.status == 0, "tracer \(args.joined(separator: " ")): \(r.stderr)")
        return r
    }

    /// A morning at the lab kiosk: badges 1 and 2 side by side for ten minutes.
    func rangeTwoColleagues(into store: String) async throws {
        var f = ReplayFixture()
        f.rate = 2
        f.receiverBias = -3
        let start = (Date().timeIntervalSince1970 - 7200).rounded()
        f.badges = [1, 2].map { minor in
            .init(
                uuid: ExposureCommandTests.uuid,
                major: 1,
                minor: UInt16(minor),
                address: "AA:BB:CC:00:00:0\(minor)",
                distance: 1,
                from: start,
                to: start + 600
            )
        }
        let replay = dir.file("lab.jsonl")
        try f.write(to: replay)
        try await tracer(
            ["daemon", "--map", ExposureCommandTests.map, "--anchor", "kiosk-lab", "--source", "replay:\(replay)"],
            store: store
        )
    }

    func report(_ id: String, badge: Int, store: String) async throws {
        let device = "\(ExposureCommandTests.uuid):1:\(badge)"
        try await tracer(
            [
                "db", "set", "reports/\(id)",
                #"{"deviceId": "\#(device)", "status": "accepted", "collectedAt": "2026-11-20T12:00:00Z", "imageSHA256": "x"}"#,
            ],
            store: store
        )
    }

    @Test(arguments: [false, true])
    func aSecondFlaggerWaitsAndTakesOverWhenTheFirstIsKilled(postgres: Bool) async throws {
        let store = try location(postgres)
        try await rangeTwoColleagues(into: store)
        let follow = ["report", "follow", "--map", ExposureCommandTests.map, "--store", store]
        let first = try TracerProcess.start(follow)
        defer { first.kill() }
        try await report("r1", badge: 1, store: store)
        let one = await first.line()
        #expect(one?.hasPrefix("report r1: 1 device exposed") == true, "\(one ?? "nothing") \(first.stderr)")

        let second = try TracerProcess.start(follow)
        defer { second.kill() }
        #expect(await until { second.stderr.contains("waiting to take over") }, "\(second.stderr)")
        first.kill()
        #expect(await until { second.stderr.contains("took over") }, "\(second.stderr)")
        // What arrives now is the second's to flag.
        try await report("r2", badge: 2, store: store)
        let two = await second.line()
        #expect(two?.hasPrefix("report r2: 1 device exposed") == true, "\(two ?? "nothing") \(second.stderr)")
        #expect(await second.stop()?.status == 0)
    }

    @Test(arguments: [false, true])
    func aSecondNotifierTakesOverFromTheTokenTheFirstKeptInTheStore(postgres: Bool) async throws {
        let store = try location(postgres)
        try await tracer(["db", "set", "devices/a", #"{"status": "clear", "risk": "low"}"#], store: store)
        let receiver = try HTTPReceiver()
        let hook = "http://127.0.0.1:\(receiver.port)/hook"
        let notify = ["notify", "--webhook", hook, "--store", store]
        let first = try TracerProcess.start(notify)
        defer { first.kill() }
        let a = receiver.next() ?? ""
        #expect(a.contains(#""deviceId":"a""#), "\(a) \(first.stderr)")
        // Delivered and its token kept, in the store: where an instance on another machine looks.
        let name = "notify-" + String(Digest.sha256Hex(hook).prefix(12))
        let opened = try DocumentStore(path: store)
        #expect(await until { ((try? await opened.reading { db in try db.savedPosition(name) }) ?? nil) != nil })

        let second = try TracerProcess.start(notify)
        defer { second.kill() }
        #expect(await until { second.stderr.contains("waiting to take over") }, "\(second.stderr)")
        first.kill()
        try await tracer(["db", "set", "devices/b", #"{"status": "exposed", "risk": "medium"}"#], store: store)
        let b = receiver.next() ?? ""
        #expect(b.contains(#""deviceId":"b""#), "\(b) \(second.stderr)")
        #expect(second.stderr.contains("took over"))
        #expect(receiver.next(timeout: 1) == nil, "a change the first delivered came again")
        #expect(await second.stop()?.status == 0)
    }
}

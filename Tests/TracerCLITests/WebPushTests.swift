import Foundation
import Testing
import TracerExposure
import TracerModel
@_spi(Blocking) import TracerStore
import TracerTesting

/// Web Push from `tracer serve` to a push service stand-in on loopback (Tools/testing/push-standin,
/// added to the site's push services for the test): the stand-in checks each push's VAPID
/// signature and decrypts it with the subscription's keys (http-ece), as a browser's push service
/// and the browser would. The real push services (Google's, Mozilla's, Apple's) cannot be reached
/// from here.
@Suite struct WebPushTests {
    struct StandIn {
        let process: TracerProcess.Background
        let port: Int
        let state: String

        init(in dir: TemporaryDirectory) async throws {
            state = dir.file("push-state")
            try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
            process = try TracerProcess.start(program: Chromium.testingTools + "/push-standin", [state])
            let line = await process.line(timeout: 120) ?? ""
            port = try #require(
                Int(line.split(separator: " ").last ?? ""),
                "the stand-in said: \(line) \(process.stderr)"
            )
        }

        func subscription(_ name: String, answers: String? = nil) async throws -> String {
            if let answers {
                _ = await httpRequest(.POST, "http://127.0.0.1:\(port)/script/\(name)", body: answers)
            }
            return try #require(await httpRequest(.GET, "http://127.0.0.1:\(port)/subscribe/\(name)")?.body)
        }

        struct Delivery: Decodable {
            let name: String
            let payload: String
        }

        func deliveries() async -> [Delivery] {
            guard let body = await httpRequest(.GET, "http://127.0.0.1:\(port)/deliveries")?.body else { return [] }
            return (try? JSONDecoder().decode([Delivery].self, from: Data(body.utf8))) ?? []
        }

        var refused: String { (try? String(contentsOfFile: state + "/refused.jsonl", encoding: .utf8)) ?? "" }

        /// Pushes NAME's service was sent, answered or not.
        func attempts(_ name: String) async -> Int {
            Int(await httpRequest(.GET, "http://127.0.0.1:\(port)/attempts/\(name)")?.body ?? "") ?? -1
        }
    }

    @Test func aChangeIsPushedToEachBrowserAtLeastOnceAcrossARestart() async throws {
        let dir = TemporaryDirectory("tracer-push")
        let store = dir.file("s.sqlite")
        func tracer(_ args: [String]) async throws -> TracerProcess.Result {
            try await TracerProcess.running(args + ["--store", store])
        }
        let standIn = try await StandIn(in: dir)
        defer { standIn.process.kill() }
        let map = dir.file("campus.yaml")
        try String(contentsOfFile: ExposureCommandTests.map, encoding: .utf8)
            .replacingOccurrences(of: "settings:", with: "settings:\n  pushServices: [127.0.0.1]")
            .write(toFile: map, atomically: true, encoding: .utf8)
        #expect(try await tracer(["map", "publish", map]).status == 0)
        var tokens: [String: String] = [:]
        for device in ["dev-7", "dev-8"] {
            let r = try await tracer(["token", "create", "--role", "device", "--device", device])
            tokens[device] = r.stdout.trimmingCharacters(in: .newlines)
        }
        var server = try await ReplicationTests.SiteServer(store: store)
        func subscribe(_ json: String, as device: String = "dev-7", for target: String = "dev-7") async -> (Int, String)
        {
            let r = await httpRequest(
                .POST,
                "\(server.url)/v1/devices/\(target)/push",
                headers: ["Authorization": "Bearer \(tokens[device]!)", "Content-Type": "application/json"],
                body: json
            )
            return (r?.status ?? 0, r?.body ?? "")
        }
        // Three browsers: one that takes every push, one whose service fails twice first (a 500,
        // then a dropped connection), one whose service says it is gone.
        for (name, answers) in [("ok", nil), ("flaky", #"[500, "drop"]"#), ("gone", "[410]")] {
            let (status, body) = await subscribe(try await standIn.subscription(name, answers: answers))
            #expect(status == 201, "\(name): \(body)")
        }
        // Hostile: another device's token; endpoints off the list, at a private address, at
        // loopback but not listed; keys that are not keys.
        let good = try await standIn.subscription("spare")
        #expect(await subscribe(good, as: "dev-8").0 == 403)
        for (endpoint, words) in [
            ("https://push.example.org/x", "not one of this site's push services"),
            ("https://10.0.0.7/x", "not one of this site's push services"),
            ("http://127.0.0.2:\(standIn.port)/push/spare", "not one of this site's push services"),
        ] {
            let json = good.replacingOccurrences(of: "http://127.0.0.1:\(standIn.port)/push/spare", with: endpoint)
            let (status, body) = await subscribe(json)
            #expect(status == 422 && body.contains(words), "\(endpoint): \(status) \(body)")
        }
        let badKey = try #require(good.range(of: #""p256dh": "[^"]*""#, options: .regularExpression))
        let (status, body) = await subscribe(good.replacingCharacters(in: badKey, with: #""p256dh": "AAAA""#))
        #expect(status == 422 && body.contains("keys.p256dh"), "\(body)")

        // The device is flagged (as the flagger of any server of the site writes it).
        _ = try await tracer([
            "db", "set", "devices/dev-7", #"{"status": "exposed", "risk": "medium", "exposureCount": 1}"#,
        ])
        let arrived = await until(60) { Set(await standIn.deliveries().map(\.name)) == ["ok", "flaky"] }
        let names = await standIn.deliveries().map(\.name)
        #expect(arrived, "\(names)")
        let delivered = await standIn.deliveries()
        #expect(delivered.allSatisfy { $0.payload == #"{"type":"status"}"# }, "\(delivered.map(\.payload))")
        // The gone one is dropped; nothing the stand-in refused (each VAPID and body was right).
        let db = try DocumentStore(path: store)
        #expect(
            await until(30) {
                (try? await db.reading { r in
                    try r.getDocuments(Query(collection: Collections.pushSubscriptions(of: "dev-7")))
                }.count)
                    == 2
            }
        )
        #expect(standIn.refused.isEmpty, "\(standIn.refused)")

        // A change while the server is down is pushed once it is back (its change token was kept).
        server.process.kill()
        _ = try await tracer([
            "db", "set", "devices/dev-7", #"{"status": "exposed", "risk": "high", "exposureCount": 3}"#,
        ])
        server = try await ReplicationTests.SiteServer(store: store)
        defer { server.process.kill() }
        let resumed = await until(60) { await standIn.deliveries().filter { $0.name == "ok" }.count == 2 }
        let after = await standIn.deliveries().map(\.name)
        #expect(resumed, "\(after)")
        #expect(await standIn.deliveries().filter { $0.name == "gone" }.isEmpty)
    }

    /// One push service that keeps failing delays nobody else: 1 subscription answered 500 for
    /// ever beside 100 good ones, all 100 told within 5 s of the change; stored endpoints that
    /// trapped the sender (a port above 65535, written by an admin's sync or `db set`) are
    /// dropped, the server alive; a subscription failing for 24 h is dropped; one deleted is
    /// pushed no more.
    @Test func oneFailingPushServiceDelaysNobodyElse() async throws {
        let dir = TemporaryDirectory("tracer-push-many")
        let store = dir.file("s.sqlite")
        let standIn = try await StandIn(in: dir)
        defer { standIn.process.kill() }
        let map = dir.file("campus.yaml")
        try String(contentsOfFile: ExposureCommandTests.map, encoding: .utf8)
            .replacingOccurrences(of: "settings:", with: "settings:\n  pushServices: [127.0.0.1]")
            .write(toFile: map, atomically: true, encoding: .utf8)
        #expect(try await TracerProcess.running(["map", "publish", map, "--store", store]).status == 0)
        let db = try DocumentStore(path: store)
        // Every subscription in one commit (one fsync, not 103 on the test's shared threads).
        var subscriptions = WriteBatch()
        func subscribe(_ device: String, _ json: String, _ extra: DocumentData = [:]) throws {
            let value = try #require(try? JSON.parse(json))
            var data: DocumentData = ["createdAt": .serverTimestamp]
            data["endpoint"] = value["endpoint"]
            data["p256dh"] = value["keys"]?["p256dh"]
            data["auth"] = value["keys"]?["auth"]
            for (k, v) in extra { data[k] = v }
            let endpoint = data["endpoint"]?.stringValue ?? ""
            subscriptions.set(
                try Collections.pushSubscriptions(of: device).document(PushSubscription.id(endpoint: endpoint)),
                data
            )
        }
        try subscribe(
            "failing",
            try await standIn.subscription(
                "failing",
                answers: "[" + Array(repeating: "500", count: 500).joined(separator: ",") + "]"
            )
        )
        for i in 0..<100 { try subscribe("good-\(i)", try await standIn.subscription("good-\(i)")) }
        // An endpoint that trapped the sender before (port past 65535), and one failing for a day.
        let trap = try await standIn.subscription("trap")
            .replacingOccurrences(of: "127.0.0.1:\(standIn.port)", with: "127.0.0.1:99999999999")
        try subscribe("trap", trap)
        let day = Date().timeIntervalSince1970 - 86_401
        try subscribe(
            "stale",
            try await standIn.subscription("stale", answers: "[500, 500, 500]"),
            ["failingSince": .timestamp(Timestamp(seconds: day)), "failures": 40]
        )

        let written = subscriptions
        try await onThread { Result { try db.commit(written) } }.get()
        let server = try await ReplicationTests.SiteServer(store: store)
        defer { server.process.kill() }
        // Every device changes at once (as one flagging does).
        var batch = WriteBatch()
        for device in ["failing", "trap", "stale"] + (0..<100).map({ "good-\($0)" }) {
            batch.set(try Collections.device(device), ["status": "exposed", "risk": "high", "exposureCount": 1])
        }
        let changed = Date()
        let changes = batch
        try await onThread { Result { try db.commit(changes) } }.get()
        let told = await until(30) {
            Set(await standIn.deliveries().map(\.name).filter { $0.hasPrefix("good-") }).count == 100
        }
        let seconds = Date().timeIntervalSince(changed)
        #expect(told && seconds <= 5, "told: \(told), after \(seconds) s")
        print("push: 100 good subscriptions told in \(String(format: "%.2f", seconds)) s beside one failing")
        // Each push a service took is dated on its subscription (the health team's "told by push").
        func datedGood() -> Int {
            let docs = (try? db.getDocuments(Query(collectionGroup: "push"))) ?? []
            return docs.filter {
                ($0["endpoint"]?.stringValue ?? "").contains("/good-")
                    && ($0["deliveredAt"]?.timestampValue?.seconds ?? 0) >= changed.timeIntervalSince1970 - 1
            }.count
        }
        let dated = await until(30) { datedGood() == 100 }
        #expect(dated, "\(datedGood()) of 100 delivered pushes have their deliveredAt")
        // The trap and the day-long failure are dropped; the failing one is kept, still owed.
        func left() -> [String] {
            (try? db.getDocuments(Query(collectionGroup: "push")).compactMap { $0["endpoint"]?.stringValue }) ?? []
        }
        let dropped = await until(30) { !left().contains { $0.contains("99999999999") || $0.hasSuffix("/stale") } }
        #expect(dropped, "\(left().filter { !$0.contains("/good-") }) \(server.process.stderr.suffix(2000))")
        let atRead = await standIn.attempts("failing")
        let failing = try #require(
            try await db.reading { r in
                try r.getDocuments(Query(collection: Collections.pushSubscriptions(of: "failing")))
            }
            .first
        )
        #expect(failing["owedAt"] != nil && (failing["failures"]?.doubleValue ?? 0) >= 1, "\(failing.data ?? [:])")
        #expect(failing["deliveredAt"] == nil, "a push never taken is not dated")
        #expect(server.process.isRunning, "the server died: \(server.process.stderr)")
        // Deleted (unsubscribed): pushed no more, though it was failing and owed. An attempt that
        // read the subscription just before the delete may still arrive (it did once in CI, on a
        // loaded machine), so the delete comes just after an attempt has arrived: the next one is
        // a backoff away (1 s doubling per failure, at least 2 s by now), and must never come.
        // Each attempt since the document was read is one more failure than it says.
        let failures = Int(failing["failures"]?.doubleValue ?? 1)
        // How long to wait for the next attempt, `attempts` failures past those stored: twice its
        // backoff, at most 30 s.
        func due(after attempts: Int) -> Double { Double(min(30, 1 << min(failures + 1 + attempts, 5))) }
        let seen = await standIn.attempts("failing")
        let arrived = await until(due(after: seen - atRead)) { await standIn.attempts("failing") > seen }
        #expect(arrived, "the failing subscription was not tried again within its backoff")
        let before = await standIn.attempts("failing")
        try await db.writing { w in try w.delete(failing.path) }
        let pushedAgain = await until(due(after: before - atRead)) { await standIn.attempts("failing") > before }
        #expect(!pushedAgain, "pushed after it was deleted")
        #expect(standIn.refused.isEmpty, "\(standIn.refused)")
    }
}

import Foundation
import Testing
@_spi(Blocking) import TracerStore
import TracerTesting

/// A site whose store is PostgreSQL, as real processes: several `tracer serve` on one database,
/// the database crashed (immediate shutdown) under a writer and under the servers, and back.
@Suite(
    .serialized,
    .disabled(if: TestBackend.isPostgres, "always on PostgreSQL: the PostgreSQL pass would run it twice")
)
struct PostgresSiteTests {
    let dir = TemporaryDirectory("tracer-pg-site")

    /// Runs `tracer ARGS --store STORE`, which must succeed.
    @discardableResult
    func tracer(_ args: [String], store: String) async throws -> TracerProcess.Result {
        let r = try await TracerProcess.running(args + ["--store", store])
        #expect(r.status == 0, "tracer \(args.joined(separator: " ")): \(r.stderr)")
        return r
    }

    func adminToken(_ store: String) async throws -> String {
        let r = try await tracer(["token", "create", "--role", "admin", "--name", "test"], store: store)
        return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func twoServersOnOneDatabaseServeOneSiteAndTheirWatchersSeeEveryWriter() async throws {
        let store = try TestBackend.freshPostgresStore()
        try await tracer(["map", "publish", ReplicationTests.map], store: store)
        let admin = try await adminToken(store)
        let a = try await ReplicationTests.SiteServer(store: store)
        let b = try await ReplicationTests.SiteServer(store: store)
        defer {
            a.process.kill()
            b.process.kill()
        }
        // A token made through one process is good on both servers: they share the store.
        for server in [a, b] {
            let body = await httpGet(
                port: UInt16(server.port),
                path: "/v1/beacons",
                headers: ["Authorization": "Bearer \(admin)"]
            )
            #expect(body?.contains("kiosk-lab") == true, "\(body ?? "no answer")")
        }
        let headers = ["Authorization": "Bearer \(admin)"]
        let onA = try SSEClient(port: a.port, path: "/v1/watch?path=devices/dev-1", headers: headers)
        let onB = try SSEClient(port: b.port, path: "/v1/watch?path=devices/dev-1", headers: headers)
        let startedA = await onA.wait { !$0.isEmpty }
        let startedB = await onB.wait { !$0.isEmpty }
        #expect(startedA && startedB)
        // Writers in other processes: each write reaches the watchers of both servers.
        for n in 1...3 {
            try await tracer(["db", "set", "devices/dev-1", #"{"status": "write \#(n)"}"#], store: store)
            for watcher in [onA, onB] {
                let seen = await watcher.wait { $0.contains { $0.data.contains("write \(n)") } }
                #expect(seen, "\(watcher.events.map(\.data))")
            }
        }
    }

    /// Two servers on one database each keep the review images they receive. A report held by one
    /// and denied through the other: the other has no image to show, and the image is deleted
    /// from the server that received it by its sweep (every 30 s), not kept for 72 hours.
    @Test func aReportDecidedThroughOneServerLosesItsImageOnTheOther() async throws {
        let store = try TestBackend.freshPostgresStore()
        try await tracer(["map", "publish", ReplicationTests.map], store: store)
        let tokenFile = dir.file("admin.token")
        try Data(try await adminToken(store).utf8).write(to: URL(fileURLWithPath: tokenFile))
        let (reviewA, reviewB) = (dir.file("review-a"), dir.file("review-b"))
        let a = try await ReplicationTests.SiteServer(store: store, environment: ["TRACER_REVIEW_DIR": reviewA])
        let b = try await ReplicationTests.SiteServer(store: store, environment: ["TRACER_REVIEW_DIR": reviewB])
        defer {
            a.process.kill()
            b.process.kill()
        }
        await ResultImages.ready()
        let held = try await TracerProcess.running([
            "self-report", ResultImages.file("lab-pcr-positive-two-dates.png"), "--server", a.url,
            "--token-file", tokenFile, "--device", "dev-h", "--yes", "--json",
        ])
        #expect(held.status == 3, "\(held.stdout)\(held.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(held.stdout.utf8)) as? [String: Any] ?? [:]
        let id = try #require(object["reportId"] as? String, "\(held.stdout)")
        let image = "\(reviewA)/\(id)"
        #expect(FileManager.default.fileExists(atPath: image))

        let remote = ["--server", b.url, "--token-file", tokenFile]
        let pending = try await TracerProcess.running(["report", "pending", "--json"] + remote)
        #expect(pending.stdout.contains(id) && pending.stdout.contains(#""image":false"#), "\(pending.stdout)")
        let deny = try await TracerProcess.running(["report", "deny", id, "--note", "two dates"] + remote)
        #expect(deny.status == 0, "\(deny.stderr)")
        #expect(await until(120) { !FileManager.default.fileExists(atPath: image) }, "\(image) is still kept")
        #expect(!FileManager.default.fileExists(atPath: "\(reviewB)/\(id)"))
    }

    /// A kiosk names both servers of the site: one SIGKILLed mid-drain, it goes on with the other
    /// at once (no outage seen), and the site gets everything exactly once.
    @Test func aKioskNamingTwoServersMovesToTheOtherWhenOneDies() async throws {
        let store = try TestBackend.freshPostgresStore()
        try await tracer(["map", "publish", ReplicationTests.map], store: store)
        let token = try await tracer(["token", "create", "--role", "kiosk", "--anchor", "kiosk-lab"], store: store)
        let tokenFile = dir.file("lab.token")
        try token.stdout.write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let kioskStore = dir.file("kiosk.sqlite")
        try ReplicationTests().record(30_000, at: "kiosk-lab", into: kioskStore)
        let a = try await ReplicationTests.SiteServer(store: store)
        let b = try await ReplicationTests.SiteServer(store: store)
        defer {
            a.process.kill()
            b.process.kill()
        }
        let empty = dir.file("empty.jsonl")
        _ = FileManager.default.createFile(atPath: empty, contents: nil)
        let daemon = try TracerProcess.start([
            "daemon", "--map", ReplicationTests.map, "--anchor", "kiosk-lab", "--source", "replay:\(empty)",
            "--store", kioskStore, "--upstream", "\(a.url),\(b.url)", "--token-file", tokenFile,
            "--drain-timeout", "600",
        ])
        defer { daemon.kill() }
        let reader = try DocumentStore(path: store)
        #expect(await until(120) { ReplicationTests.count(reader, anchor: "kiosk-lab") >= 5_000 })
        // Frozen for the kill, so that the kiosk still has work when it meets the dead server.
        daemon.signal(SIGSTOP)
        _ = await a.process.stop(SIGKILL, timeout: 30)
        try #require(
            ReplicationTests.count(reader, anchor: "kiosk-lab") < 30_000,
            "the kiosk had finished before the kill"
        )
        daemon.signal(SIGCONT)
        let ended = await daemon.stop(0, timeout: 300)
        #expect(ended?.status == 0, "\(daemon.stderr)")
        #expect(daemon.stderr.contains("moved to \(b.url)"), "\(daemon.stderr)")
        #expect(
            !daemon.stderr.contains("the site server is unreachable"),
            "the other server was there: \(daemon.stderr)"
        )
        #expect(
            try ReplicationTests.documents(store, anchor: "kiosk-lab")
                == ReplicationTests.documents(kioskStore, anchor: "kiosk-lab")
        )
        try ReplicationTests.integrity(store, kioskStore)
    }

    @Test func whileTheDatabaseIsGoneServeAnswers503AndWatchersResumeFromTheirToken() async throws {
        let cluster = try PostgresCluster()
        defer { cluster.stop() }
        let store = cluster.uri
        try await tracer(["map", "publish", ReplicationTests.map], store: store)
        let admin = try await adminToken(store)
        try await tracer(["db", "set", "devices/dev-1", #"{"status": "before"}"#], store: store)
        let server = try await ReplicationTests.SiteServer(store: store)
        defer { server.process.kill() }
        let port = UInt16(server.port)
        let path = "/v1/beacons"
        let auth = ["Authorization": "Bearer \(admin)"]
        #expect(await httpGet(port: port, path: path, headers: auth)?.contains("kiosk-lab") == true)
        let watcher = try SSEClient(
            port: server.port,
            path: "/v1/watch?path=devices",
            headers: ["Authorization": "Bearer \(admin)"]
        )
        #expect(await watcher.wait { $0.contains { $0.event == "snapshot" } })
        let token = try #require(watcher.events.first { $0.event == "snapshot" }?.id)

        try cluster.crash()
        // Not a crash of the server, not a hang: 503 with the store named as the reason.
        let unavailable = await until {
            await httpGet(port: port, path: path, headers: auth)?.contains("store_unavailable") == true
        }
        let answer = await httpGet(port: port, path: path, headers: auth)
        #expect(unavailable, "\(answer ?? "no answer")")
        #expect(server.process.isRunning, "\(server.process.stderr)")

        try cluster.restart()
        #expect(await until { await httpGet(port: port, path: path, headers: auth)?.contains("kiosk-lab") == true })
        try await tracer(["db", "set", "devices/dev-2", #"{"status": "after"}"#], store: store)
        // A watcher reconnecting with its last token gets what it missed.
        let resumed = try SSEClient(
            port: server.port,
            path: "/v1/watch?path=devices",
            headers: ["Authorization": "Bearer \(admin)", "Last-Event-ID": token]
        )
        let caughtUp = await resumed.wait { $0.contains { $0.data.contains("after") } }
        #expect(caughtUp, "\(resumed.events.map(\.data))")
        #expect(!resumed.events.contains { $0.data.contains("before") })
    }

    @Test func theServerCrashedMidBatchAgainAndAgainLosesNoAcknowledgedWrite() async throws {
        let cluster = try PostgresCluster()
        defer { cluster.stop() }
        let store = cluster.uri
        let batchSize = 400
        var g = SplitMix64(seed: 15)
        var acknowledged: [Int: Int] = [:]
        try await DocumentStore(path: store).writing { db in
            try db.declareIndex(IndexDefinition(collectionID: "interactions", scope: .collectionGroup, "run"))
        }
        for run in 0..<4 {
            var lines = ""
            for i in 0..<6_000 {
                let data: DocumentData = [
                    "deviceId": .string("dev-\(i % 97)"), "rssi": -63,
                    "start": .timestamp(Timestamp(seconds: 1_763_776_800 + Double(i))), "run": .integer(Int64(run)),
                ]
                let path = try DocumentPath("beacons/b\(i % 40)/interactions/r\(run)-\(i)")
                lines += DocumentStore.exportLine(DocumentSnapshot(path: path, data: data)) + "\n"
            }
            let file = dir.file("run\(run).jsonl")
            try lines.write(toFile: file, atomically: true, encoding: .utf8)
            let writer = try TracerProcess.start([
                "db", "import", file, "--batch-size", String(batchSize), "--report-commits", "--store", store,
            ])
            var last = 0
            let commitsBeforeCrash = Int.random(in: 1...5, using: &g)
            while let line = await writer.line(timeout: 60), line.hasPrefix("committed ") {
                last = Int(line.dropFirst("committed ".count)) ?? last
                if last >= commitsBeforeCrash * batchSize { break }
            }
            try await Task.sleep(for: .microseconds(Int.random(in: 0...40_000, using: &g)))
            try cluster.crash()
            // The writer meets the gone server: a one-line error and a failure status, no hang.
            let ended = await writer.stop(0, timeout: 60)
            while let line = await writer.line(timeout: 0.2) {
                if line.hasPrefix("committed ") { last = Int(line.dropFirst("committed ".count)) ?? last }
            }
            // Or, on a loaded machine, the writer finished before the crash: then everything was
            // acknowledged (it exits 0 only after its last commit).
            #expect(
                ended.map { $0.status != 0 || last == 6_000 } ?? false,
                "run \(run): exit \(ended.map { "\($0.status)" } ?? "none"), \(last) acknowledged: \(writer.stderr)"
            )
            acknowledged[run] = last
            try cluster.restart()

            // Usable at once after crash recovery; every acknowledged batch there, none in part.
            let reader = try DocumentStore(path: store)
            #expect(try await reader.reading { db in try db.integrityCheck() } == "ok", "run \(run)")
            for (r, count) in acknowledged {
                let present = try await reader.reading { db in
                    try db.count(Query(collectionGroup: "interactions").where("run", .equal, .integer(Int64(r))))
                }
                #expect(present >= count, "run \(r): \(present) documents, \(count) acknowledged")
                #expect(present % batchSize == 0, "run \(r): a transaction landed in part (\(present) documents)")
            }
        }
    }

    @Test func aSiteMovesToPostgreSQLAndBackAndAnInterruptedCopyResumes() async throws {
        let sqlite = dir.file("site.sqlite")
        try await tracer(["map", "publish", ReplicationTests.map], store: sqlite)
        _ = try await adminToken(sqlite)
        try await tracer(["db", "index", "interactions", "deviceId", "--group"], store: sqlite)
        var lines = ""
        for i in 0..<3_000 {
            let data: DocumentData = ["deviceId": .string("dev-\(i % 13)"), "n": .integer(Int64(i))]
            let path = try DocumentPath("beacons/b\(i % 20)/interactions/i\(i)")
            lines += DocumentStore.exportLine(DocumentSnapshot(path: path, data: data)) + "\n"
        }
        try lines.write(toFile: dir.file("docs.jsonl"), atomically: true, encoding: .utf8)
        try await tracer(["db", "import", dir.file("docs.jsonl")], store: sqlite)
        let postgres = try TestBackend.freshPostgresStore()

        // Killed part-way, then run again: it goes on, and the two stores read the same.
        let first = try TracerProcess.start(["db", "copy", "--from", sqlite, "--to", postgres, "--batch-size", "100"])
        let reader = try DocumentStore(path: postgres)
        let started = await until(60) {
            ((try? await reader.reading { db in try db.count(Query(collectionGroup: "interactions")) }) ?? 0) >= 500
        }
        first.kill()
        #expect(started)
        let again = try await TracerProcess.running(["db", "copy", "--from", sqlite, "--to", postgres])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("already there"), "\(again.stdout)")
        let source = try await tracer(["db", "export", "/"], store: sqlite).stdout
        #expect(source.split(separator: "\n").count == 3_000 + 2)  // the site and the token too
        #expect(try await tracer(["db", "export", "/"], store: postgres).stdout == source)
        // The index came along, and queries use it there.
        let explained = try await tracer(
            ["db", "query", "interactions", "--group", "--where", #"deviceId == "dev-3""#, "--explain"],
            store: postgres
        )
        #expect(explained.stdout.contains("uses index interactions (deviceId asc) [group]"), "\(explained.stdout)")
        #expect(try await reader.reading { db in try db.integrityCheck() } == "ok")

        // And back: a fresh SQLite file from PostgreSQL, the same again, times included.
        let back = dir.file("back.sqlite")
        let copied = try await TracerProcess.running(["db", "copy", "--from", postgres, "--to", back])
        #expect(copied.stdout.hasPrefix("copied 3002 documents"), "\(copied.stdout)")
        #expect(try await tracer(["db", "export", "/"], store: back).stdout == source)
        let a = try await DocumentStore(path: sqlite).reading { db in try db.get("beacons/b3/interactions/i3") }
        let b = try await DocumentStore(path: back).reading { db in try db.get("beacons/b3/interactions/i3") }
        #expect(a.createTime == b.createTime && a.updateTime == b.updateTime && a.createTime != nil)
    }
}

import Foundation
import Testing
import TracerDBus
import TracerModel
import TracerSite
@_spi(Blocking) import TracerStore
import TracerTesting

/// A site server and its kiosks as real processes on loopback: `tracer serve` on a free port,
/// `tracer daemon --upstream` for each kiosk, each with its own SQLite store; faults made by
/// SIGKILL and by a fault-injecting TCP proxy between them. After each: the site store holds
/// exactly the kiosks' documents (nothing lost, nothing doubled) and every store passes
/// SQLite's integrity check. One at a time: each runs a server and kiosks hard on 2 cores.
@Suite(.serialized) struct ReplicationTests {
    let dir = TemporaryDirectory("tracer-sync")
    static let map = DaemonCommandTests.map
    var site: String { dir.file("site.sqlite") }

    /// `tracer serve` on the site store, on `port` (0: a free one).
    final class SiteServer: Sendable {
        let process: TracerProcess.Background
        let port: Int
        let scheme: String
        var url: String { "\(scheme)://127.0.0.1:\(port)" }

        init(store: String, port: Int = 0, extra: [String] = [], environment: [String: String] = [:]) async throws {
            // A restart on the port just freed may find it held for a moment: try for a while.
            var lastError = ""
            for _ in 0..<50 {
                let p = try TracerProcess.start(
                    ["serve", "--store", store, "--bind", "127.0.0.1:\(port)"] + extra,
                    environment: environment
                )
                if let line = await p.line(timeout: 60), line.hasPrefix("serving"),
                    let bound = line.split(separator: ":").last.flatMap({ Int($0.prefix { $0.isNumber }) })
                {
                    self.process = p
                    self.port = bound
                    self.scheme = line.contains("https://") ? "https" : "http"
                    return
                }
                lastError = p.stderr
                p.kill()
                try await Task.sleep(for: .milliseconds(200))
            }
            throw POSIXError(.EADDRINUSE, userInfo: ["stderr": lastError])
        }
    }

    func tracer(_ args: [String], store: String) async throws -> TracerProcess.Result {
        try await TracerProcess.running(args + ["--store", store])
    }

    /// A kiosk token for `anchor`, written to a file.
    func token(_ anchor: String, file: String) async throws -> String {
        let r = try await tracer(["token", "create", "--role", "kiosk", "--anchor", anchor], store: site)
        try #require(r.status == 0, "\(r.stderr)")
        try r.stdout.write(toFile: dir.file(file), atomically: true, encoding: .utf8)
        return dir.file(file)
    }

    /// `count` interaction windows recorded at `anchor` in the kiosk's store (its backlog).
    func record(_ count: Int, at anchor: String, into path: String, offset: Int = 0) throws {
        let store = try DocumentStore(path: path)
        var batch = WriteBatch()
        // Yesterday, 10:00 UTC: within the site's retention, which `/v1/sync` and the server's
        // purge hold to (a fixed date would be dropped once two weeks old).
        let t0 = (Date().timeIntervalSince1970 / 86_400).rounded(.down) * 86_400 - 86_400 + 36_000
        for i in offset..<(offset + count) {
            let start = Timestamp(seconds: t0 + Double(i % 480) * 30)
            batch.set(
                try DocumentPath("beacons/\(anchor)/interactions/w\(i)"),
                [
                    "deviceId": .string("f7826da6-4fa2-4e98-8024-bc5b71e0893e:1:\(i % 40)"),
                    "proximity": "near", "proximityCode": 2, "distance": .double(1 + Double(i % 7) / 3),
                    "rssi": -65.5, "measuredPower": -59, "samples": 12, "testResult": false,
                    "start": .timestamp(start), "end": .timestamp(start.adding(seconds: 30)), "ts": .serverTimestamp,
                ]
            )
            if batch.count == 5000 {
                try store.commit(batch)
                batch = WriteBatch()
            }
        }
        try store.commit(batch)
    }

    /// The daemon as a kiosk with nothing new to range (an empty replay): it drains its backlog
    /// to the server and exits.
    func kiosk(
        _ anchor: String,
        store: String,
        upstream: String,
        token: String,
        extra: [String] = [],
        map: Bool = true
    ) throws -> TracerProcess.Background {
        let empty = dir.file("empty.jsonl")
        if !FileManager.default.fileExists(atPath: empty) {
            _ = FileManager.default.createFile(atPath: empty, contents: nil)
        }
        return try TracerProcess.start(
            ["daemon"] + (map ? ["--map", Self.map] : []) + [
                "--anchor", anchor, "--source", "replay:\(empty)", "--store", store, "--upstream", upstream,
                "--token-file", token,
            ] + extra
        )
    }

    /// A kiosk's daemon with no map, replicating to `server`, on a FIFO of adverts: it runs until
    /// the FIFO's writer (returned, with the process and the kiosk's store) is closed.
    func liveKiosk(
        _ anchor: String,
        _ server: SiteServer,
        _ token: String,
        _ extra: [String]
    ) throws -> (TracerProcess.Background, FileHandle, String) {
        let kioskStore = dir.file("kiosk.sqlite")
        let fifo = dir.file("adverts.fifo")
        try #require(mkfifo(fifo, 0o600) == 0)
        let daemon = try TracerProcess.start(
            [
                "daemon", "--anchor", anchor, "--source", "replay:\(fifo)", "--store", kioskStore, "--upstream",
                server.url, "--token-file", token,
            ] + extra
        )
        guard let writer = FileHandle(forWritingAtPath: fifo) else {
            daemon.kill()
            throw POSIXError(.EIO, userInfo: ["fifo": fifo])
        }
        return (daemon, writer, kioskStore)
    }

    /// Every document under `beacons/{anchor}` as export lines, without the server's own
    /// bookkeeping: what the kiosk sent must be there, exactly.
    static func documents(_ path: String, anchor: String) throws -> [String] {
        let store = try DocumentStore(path: path)
        var lines: [String] = []
        try store.export(.document(try DocumentPath("beacons/\(anchor)"))) {
            lines.append(DocumentStore.exportLine($0))
        }
        return lines
    }

    /// Interaction windows at `anchor` in a store (opened once per test: opening takes the
    /// write lock for a moment, which a poll every 20 ms should not).
    static func count(_ store: DocumentStore, anchor: String) -> Int {
        (try? store.count(Query(collection: try CollectionPath("beacons/\(anchor)/interactions")))) ?? 0
    }

    static func integrity(_ paths: String...) throws {
        for p in paths { #expect(try DocumentStore(path: p).integrityCheck() == "ok", "\(p)") }
    }

    // MARK: The site as one system

    /// Three kiosks range their replays, each into its own store, replicating: the site store
    /// ends with exactly the union of their documents, and flagging a report on it gives the
    /// same exposures as the single-file run of the same replays.
    @Test func threeKiosksReplicateExactlyTheirUnion() async throws {
        let sim = dir.file("sim")
        // Yesterday: within the site's retention, which the server holds to (a fixed day would
        // be refused at /v1/sync once two weeks old).
        let day = String(Timestamp(seconds: Date().timeIntervalSince1970 - 86_400).iso8601.prefix(10))
        let made = try await TracerProcess.running([
            "simulate", "--map", Self.map, "--people", "16", "--hours", "1", "--seed", "5", "--start", day,
            "--out", sim,
        ])
        try #require(made.status == 0, "\(made.stderr)")
        let kiosks = ["kiosk-lecture", "kiosk-cafe", "kiosk-lobby"]
        _ = try await tracer(["map", "publish", Self.map], store: site)
        let server = try await SiteServer(store: site)
        defer { server.process.kill() }
        var running: [TracerProcess.Background] = []
        for k in kiosks {
            let token = try await token(k, file: "\(k).token")
            running.append(
                try TracerProcess.start([
                    "daemon", "--anchor", k, "--source", "replay:\(sim)/replays/\(k).jsonl", "--store",
                    dir.file("\(k).sqlite"), "--upstream", server.url, "--token-file", token,
                ])
            )
        }
        for (k, p) in zip(kiosks, running) {
            let ended = await p.stop(0, timeout: 300)
            #expect(ended?.status == 0, "\(k): \(p.stderr)")
            var out: [String] = []
            while let line = p.nextLine(timeout: 1) { out.append(line) }
            #expect(out.last?.hasPrefix("replicated to \(server.url): everything acknowledged") == true, "\(k): \(out)")
        }
        var union = 0
        for k in kiosks {
            let local = try Self.documents(dir.file("\(k).sqlite"), anchor: k)
            #expect(local.count > 10, "\(k) recorded too little to mean anything")
            #expect(try Self.documents(site, anchor: k) == local, "\(k)")
            // The kiosk's own document and its hearings of the map's fixed beacons are not windows.
            union += local.filter { $0.contains("/interactions/") }.count
        }
        #expect(try Self.documents(site, anchor: "kiosk-lecture").contains { $0.contains("/hearings/") })
        let all = try await tracer(["db", "query", "interactions", "--group", "--count"], store: site)
        #expect(all.stdout == "\(union)\n", "no interaction but the kiosks'")

        // The same replays into one file, as before there was a site server.
        let single = dir.file("single.sqlite")
        for k in kiosks {
            let r = try await tracer(
                ["daemon", "--map", Self.map, "--anchor", k, "--source", "replay:\(sim)/replays/\(k).jsonl"],
                store: single
            )
            try #require(r.status == 0, "\(r.stderr)")
        }
        let reporter = try Self.busiestDevice(single)
        var exposures: [[String]] = []
        for store in [site, single] {
            _ = try await tracer(
                [
                    "db", "set", "reports/r1",
                    #"{"deviceId": "\#(reporter)", "status": "accepted", "collectedAt": "\#(day)T12:00:00Z", "imageSHA256": "x"}"#,
                ],
                store: store
            )
            let flagged = try await tracer(["report", "flag", "r1"], store: store)
            #expect(flagged.status == 0, "\(flagged.stderr)")
            var keys: [String] = []
            for k in kiosks {
                let r = try await tracer(["exposure", "--beacon", k, "--json"], store: store)
                let array = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]] ?? []
                keys += array.map {
                    "\($0["deviceId"] ?? "")|\($0["beaconKey"] ?? "")|\($0["from"] ?? "")|\($0["to"] ?? "")"
                }
            }
            exposures.append(keys.sorted())
        }
        #expect(!exposures[0].isEmpty, "the reporter exposed nobody: the comparison would say nothing")
        #expect(exposures[0] == exposures[1])
        try Self.integrity(site, single, dir.file("kiosk-cafe.sqlite"))
    }

    static func busiestDevice(_ path: String) throws -> String {
        let store = try DocumentStore(path: path)
        var counts: [String: Int] = [:]
        for doc in try store.getDocuments(Query(collectionGroup: "interactions")) {
            if let d = doc["deviceId"]?.stringValue { counts[d, default: 0] += 1 }
        }
        return counts.max { $0.value < $1.value }?.key ?? ""
    }

    // MARK: Faults

    /// The server SIGKILLed mid-batch, three times, and restarted on its port: the kiosk
    /// retries until everything is acknowledged.
    @Test func theServerKilledMidBatchLosesNothing() async throws {
        let kioskStore = dir.file("kiosk.sqlite")
        try record(60_000, at: "kiosk-lab", into: kioskStore)  // twelve batches: the drain outlasts three kills
        let token = try await token("kiosk-lab", file: "lab.token")
        var server = try await SiteServer(store: site)
        let port = server.port
        let reader = try DocumentStore(path: site)
        // Its drain may take longer than the default minute: three outages of a few seconds each.
        let daemon = try kiosk(
            "kiosk-lab",
            store: kioskStore,
            upstream: server.url,
            token: token,
            extra: ["--drain-timeout", "600"]
        )
        defer { daemon.kill() }
        func outages() -> Int { daemon.stderr.components(separatedBy: "the site server is unreachable").count - 1 }
        for threshold in [8_000, 20_000, 32_000] {
            #expect(await until { Self.count(reader, anchor: "kiosk-lab") >= threshold })
            let seen = outages()
            // Frozen for the kill, so that it cannot finish first: on a fast machine the rest of
            // the backlog goes in the moments between the poll and the kill. At most the batch in
            // flight commits now, so the kiosk has work left and must meet the dead server.
            daemon.signal(SIGSTOP)
            _ = await server.process.stop(SIGKILL, timeout: 30)
            try #require(Self.count(reader, anchor: "kiosk-lab") < 60_000, "the kiosk had finished before the kill")
            daemon.signal(SIGCONT)
            // Down until the kiosk has met it (a batch in flight, or the next one refused), then
            // back on its port.
            #expect(await until { outages() > seen }, "the kiosk never noticed: \(daemon.stderr)")
            server = try await SiteServer(store: site, port: port)
        }
        defer { server.process.kill() }
        let ended = await daemon.stop(0, timeout: 300)
        #expect(ended?.status == 0, "\(daemon.stderr)")
        #expect(try Self.documents(site, anchor: "kiosk-lab") == Self.documents(kioskStore, anchor: "kiosk-lab"))
        #expect(outages() == 3 && daemon.stderr.contains("the site server is back after"), "\(daemon.stderr)")
        try Self.integrity(site, kioskStore)
    }

    /// The kiosk SIGKILLed mid-batch, three times, and restarted: it resumes from its
    /// checkpoint (what was acknowledged is not sent again in bulk; what was not, is).
    @Test func theKioskKilledMidBatchLosesNothing() async throws {
        let kioskStore = dir.file("kiosk.sqlite")
        try record(20_000, at: "kiosk-lab", into: kioskStore)
        let token = try await token("kiosk-lab", file: "lab.token")
        let server = try await SiteServer(store: site)
        defer { server.process.kill() }
        let reader = try DocumentStore(path: site)
        for threshold in [3_000, 9_000, 15_000] {
            let daemon = try kiosk("kiosk-lab", store: kioskStore, upstream: server.url, token: token)
            #expect(await until { Self.count(reader, anchor: "kiosk-lab") >= threshold })
            daemon.kill(SIGKILL)
        }
        let last = try kiosk("kiosk-lab", store: kioskStore, upstream: server.url, token: token)
        let ended = await last.stop(0, timeout: 300)
        #expect(ended?.status == 0, "\(last.stderr)")
        #expect(try Self.documents(site, anchor: "kiosk-lab") == Self.documents(kioskStore, anchor: "kiosk-lab"))
        try Self.integrity(site, kioskStore)
    }

    /// Every fifth answer lost after the server committed (the classic double-apply): replayed
    /// batches change nothing.
    @Test func lostAnswersDoubleNothing() async throws {
        let kioskStore = dir.file("kiosk.sqlite")
        try record(60_000, at: "kiosk-lab", into: kioskStore)  // twelve batches of 5,000 and their answers
        let token = try await token("kiosk-lab", file: "lab.token")
        let server = try await SiteServer(store: site)
        defer { server.process.kill() }
        let proxy = try FaultProxy(target: server.port)
        defer { proxy.stop() }
        proxy.dropEvery(5)
        let daemon = try kiosk("kiosk-lab", store: kioskStore, upstream: "http://127.0.0.1:\(proxy.port)", token: token)
        let ended = await daemon.stop(0, timeout: 300)
        #expect(ended?.status == 0, "\(daemon.stderr)")
        #expect(proxy.dropped >= 2, "the proxy lost \(proxy.dropped) answers: the test tested nothing")
        let local = try Self.documents(kioskStore, anchor: "kiosk-lab")
        #expect(try Self.documents(site, anchor: "kiosk-lab") == local)
        // Each replayed batch was taken as unchanged: the server logged each document once.
        let logged = try await DocumentStore(path: site).reading { db in
            var logged = 0
            _ = try db.outbox(after: 0, limit: 100_000) { path in
                if path.segments.count == 4 && path.segments[1] == "kiosk-lab" { logged += 1 }
                return false
            }
            return logged
        }
        #expect(logged == local.count - 1, "changes logged for \(local.count - 1) windows")
        try Self.integrity(site, kioskStore)
    }

    /// The network gone for minutes while a live kiosk records (BlueZ's stand-in on a private
    /// bus streaming three badges): the kiosk says it is retrying and how old its backlog is,
    /// backs off, and drains once the server is reachable again; SIGTERM then writes the open
    /// windows and waits for their acknowledgement.
    @Test func aNetworkGoneForMinutes() async throws {
        let outage = Double(ProcessInfo.processInfo.environment["TRACER_TEST_OUTAGE_SECONDS"] ?? "") ?? 120
        let kioskStore = dir.file("kiosk.sqlite")
        let token = try await token("kiosk-lab", file: "lab.token")
        let server = try await SiteServer(store: site)
        defer { server.process.kill() }
        let proxy = try FaultProxy(target: server.port)
        defer { proxy.stop() }
        let bluez = try BlueZMock(bus: PrivateBus(), template: .standIn)
        try bluez.control("AddAdapter", [.string("hci0"), .string("kiosk-lab")])
        let daemon = try TracerProcess.start(
            [
                "daemon", "--map", Self.map, "--anchor", "kiosk-lab", "--store", kioskStore, "--status-interval", "1",
                "--upstream", "http://127.0.0.1:\(proxy.port)", "--token-file", token,
            ],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": bluez.bus.address]
        )
        defer { daemon.kill() }
        var paths: [DBusValue] = []
        for minor in [1, 2, 3] as [UInt16] {
            let reply = try bluez.control(
                "AddBeacon",
                [
                    .string("hci0"), .string("C3:11:9A:22:07:0\(minor)"),
                    .string("f7826da6-4fa2-4e98-8024-bc5b71e0893e"), .uint16(1), .uint16(minor), .int16(-59),
                    .int16(-55 - Int16(minor) * 5),
                ]
            )
            paths.append(reply[0])
        }
        try bluez.control("Stream", [.array(element: "s", paths), .double(10), .double(0)])
        let siteReader = try DocumentStore(path: site)
        let kioskReader = try DocumentStore(path: kioskStore)
        // Windows are 30 s, aligned to the clock: the first is written within about 32 s.
        #expect(await until(120) { Self.count(siteReader, anchor: "kiosk-lab") > 0 }, "live before the outage")

        proxy.setDown(true)
        let down = Date()
        let before = Self.count(kioskReader, anchor: "kiosk-lab")
        var retrying = ""
        while Date().timeIntervalSince(down) < outage {
            // The kiosk says so: retrying, with what it keeps (once a window has been written).
            if let line = await daemon.line(timeout: 2), line.contains("retrying ("), !line.contains("backlog 0;") {
                retrying = line
            }
        }
        let recorded = Self.count(kioskReader, anchor: "kiosk-lab")
        #expect(recorded > before, "the kiosk went on recording while the server was away")
        #expect(Self.count(siteReader, anchor: "kiosk-lab") < recorded)
        #expect(retrying.contains(", the oldest "), "no status line said retrying with a backlog: \(retrying)")

        proxy.setDown(false)
        #expect(await until(120) { Self.count(siteReader, anchor: "kiosk-lab") >= recorded }, "drained")
        daemon.kill(SIGTERM)
        #expect(daemon.process.terminationStatus == 0, "\(daemon.stderr)")
        #expect(try Self.documents(site, anchor: "kiosk-lab") == Self.documents(kioskStore, anchor: "kiosk-lab"))
        #expect(daemon.stderr.contains("the site server is back after"), "\(daemon.stderr)")
        try Self.integrity(site, kioskStore)
    }

    /// A token revoked stops replication with one clear line (recording goes on); a new token
    /// in the file resumes it, and nothing is lost.
    @Test func aRevokedTokenStopsReplicationAndANewOneResumesIt() async throws {
        let kioskStore = dir.file("kiosk.sqlite")
        try record(3_000, at: "kiosk-lab", into: kioskStore)
        let tokenFile = try await token("kiosk-lab", file: "lab.token")
        let server = try await SiteServer(store: site)
        defer { server.process.kill() }
        let id = try String(contentsOfFile: tokenFile, encoding: .utf8).split(separator: "_")[1]
        let revoked = try await tracer(["token", "revoke", String(id)], store: site)
        try #require(revoked.status == 0)
        let daemon = try kiosk("kiosk-lab", store: kioskStore, upstream: server.url, token: tokenFile)
        defer { daemon.kill() }
        #expect(await until { daemon.stderr.contains("refused the token in \(tokenFile)") }, "\(daemon.stderr)")
        #expect(Self.count(try DocumentStore(path: site), anchor: "kiosk-lab") == 0)
        #expect(daemon.stderr.components(separatedBy: "refused the token").count == 2, "one line, not one per retry")
        _ = try await token("kiosk-lab", file: "lab.token")  // the admin replaces the file
        let ended = await daemon.stop(0, timeout: 300)
        #expect(ended?.status == 0, "\(daemon.stderr)")
        #expect(try Self.documents(site, anchor: "kiosk-lab") == Self.documents(kioskStore, anchor: "kiosk-lab"))
        try Self.integrity(site, kioskStore)
    }

    /// Another kiosk's token (kiosk-cafe's, on kiosk-lab): refused at the first exchange, in one
    /// line that says whose token it is; nothing of kiosk-lab's reaches the site or lands on
    /// kiosk-cafe's sync state; the refusal is counted on kiosk-lab in `/v1/kiosks` and audited;
    /// the replay daemon exits 1. (It used to print 2,500 lines and "everything acknowledged".)
    @Test func anotherKiosksTokenIsRefusedOnceSayingWhose() async throws {
        _ = try await tracer(["map", "publish", Self.map], store: site)
        let kioskStore = dir.file("kiosk.sqlite")
        try record(50, at: "kiosk-lab", into: kioskStore)
        let wrong = try await token("kiosk-cafe", file: "cafe.token")
        let server = try await SiteServer(store: site)
        defer { server.process.kill() }
        let daemon = try kiosk(
            "kiosk-lab",
            store: kioskStore,
            upstream: server.url,
            token: wrong,
            extra: ["--drain-timeout", "2"]
        )
        let ended = await daemon.stop(0, timeout: 300)
        #expect(ended?.status == 1, "\(daemon.stderr)")
        let said = daemon.stderr.split(separator: "\n").filter {
            $0.contains("this token is for kiosk-cafe, not kiosk-lab")
        }
        #expect(said.count == 1, "\(daemon.stderr)")
        #expect(daemon.stderr.contains("tracer token create --role kiosk --anchor kiosk-lab"), "\(daemon.stderr)")
        #expect(daemon.stderr.split(separator: "\n").count <= 4, "\(daemon.stderr)")
        var stdout: [String] = []
        while let line = await daemon.line(timeout: 5) { stdout.append(line) }
        #expect(!stdout.contains { $0.contains("everything acknowledged") }, "\(stdout)")
        #expect(daemon.stderr.contains("changes kept here"), "\(daemon.stderr)")
        #expect(Self.count(try DocumentStore(path: site), anchor: "kiosk-lab") == 0)
        #expect(Self.count(try DocumentStore(path: kioskStore), anchor: "kiosk-lab") == 50)
        // kiosk-cafe's own sync state is untouched: there is none.
        #expect(try await !DocumentStore(path: site).reading { db in try db.get("kiosks/kiosk-cafe") }.exists)
        // The admin sees it on kiosk-lab.
        let admin = try await tracer(["token", "create", "--role", "admin", "--name", "ops"], store: site)
        let kiosks = await httpRequest(
            .GET,
            server.url + "/v1/kiosks",
            headers: ["Authorization": "Bearer " + admin.stdout.trimmingCharacters(in: .whitespacesAndNewlines)]
        )
        let object = try JSONSerialization.jsonObject(with: Data((kiosks?.body ?? "").utf8)) as? [String: Any]
        let lab = (object?["kiosks"] as? [[String: Any]])?.first { $0["anchor"] as? String == "kiosk-lab" }
        #expect(lab?["refusedBatches"] as? Int ?? 0 >= 1, "\(kiosks?.body ?? "")")
        #expect((lab?["lastRefusal"] as? String)?.hasPrefix("this token is for kiosk-cafe") == true)
        let audit = try await tracer(["db", "query", "audit", "--where", #"outcome != null"#, "--json"], store: site)
        #expect(audit.stdout.contains("refused (403): this token is for kiosk-cafe, not kiosk-lab"), "\(audit.stdout)")
    }

    /// The same refusal on a kiosk that keeps running: it goes on recording, and its metrics say
    /// the token is refused (`tracer_sync_token_refused 1`) while the server counts it.
    @Test func aRunningKioskWithAnotherKiosksTokenKeepsRecordingAndSaysSo() async throws {
        _ = try await tracer(["map", "publish", Self.map], store: site)
        let wrong = try await token("kiosk-cafe", file: "cafe.token")
        let server = try await SiteServer(store: site)
        defer { server.process.kill() }
        let fifo = dir.file("adverts.fifo")
        try #require(mkfifo(fifo, 0o600) == 0)
        let kioskStore = dir.file("kiosk.sqlite")
        let daemon = try TracerProcess.start([
            "daemon", "--map", Self.map, "--anchor", "kiosk-lab", "--source", "replay:\(fifo)", "--store", kioskStore,
            "--upstream", server.url, "--token-file", wrong, "--metrics", "127.0.0.1:0", "--drain-timeout", "1",
        ])
        defer { daemon.kill() }
        let writer = try #require(FileHandle(forWritingAtPath: fifo))
        let metricsLine = await daemon.line() ?? ""
        let port = try #require(UInt16(metricsLine.split(separator: ":").last?.split(separator: "/").first ?? ""))
        var metrics = ""
        #expect(
            await until(60) {
                metrics = await httpGet(port: port, path: "/metrics") ?? ""
                return metrics.contains("tracer_sync_token_refused 1")
            },
            "\(metrics)\n\(daemon.stderr)"
        )
        // Still running, still recording: its anchor's document is in its own store.
        #expect(daemon.process.isRunning)
        #expect(try await DocumentStore(path: kioskStore).reading { db in try db.get("beacons/kiosk-lab") }.exists)
        #expect(daemon.stderr.components(separatedBy: "this token is for kiosk-cafe").count == 2, "\(daemon.stderr)")
        try writer.close()
        #expect(await daemon.stop(0, timeout: 120)?.status == 1, "\(daemon.stderr)")
    }

    /// A kiosk started with `--map` and `--upstream` whose map disagrees with the site the server
    /// publishes is refused in one line naming both and what to do, before it records anything
    /// (it used to write kiosk-lab under the old room and replicate it); a map that agrees runs.
    @Test func aKioskMapThatDisagreesWithTheServersSiteIsRefused() async throws {
        _ = try await tracer(["map", "publish", Self.map], store: site)
        let token = try await token("kiosk-lab", file: "lab.token")
        let server = try await SiteServer(store: site)
        defer { server.process.kill() }
        let text = try String(contentsOfFile: Self.map, encoding: .utf8)
        let line = "{key: kiosk-lab,      kind: kiosk, room: lab,      position: [6, 9.5]}"
        try #require(text.contains(line), "the example map no longer has kiosk-lab as it was")
        let old = dir.file("old.yaml")
        try text.replacingOccurrences(
            of: line,
            with: line.replacingOccurrences(of: "[6, 9.5]", with: "[5, 9.5]")
        )
        .write(toFile: old, atomically: true, encoding: .utf8)
        let kioskStore = dir.file("kiosk.sqlite")
        let refused = try await TracerProcess.running([
            "daemon", "--map", old, "--anchor", "kiosk-lab", "--source", "replay:/dev/null", "--store", kioskStore,
            "--upstream", server.url, "--token-file", token,
        ])
        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        #expect(
            refused.stderr.contains("\(old) disagrees with the site \(server.url) publishes")
                && refused.stderr.contains("kiosk-lab: at [5.0, 9.5] here, [6.0, 9.5] there")
                && refused.stderr.contains("leave out --map"),
            "\(refused.stderr)"
        )
        #expect(Self.count(try DocumentStore(path: site), anchor: "kiosk-lab") == 0)
        let agreeing = try await TracerProcess.running([
            "daemon", "--map", Self.map, "--anchor", "kiosk-lab", "--source", "replay:/dev/null", "--store", kioskStore,
            "--upstream", server.url, "--token-file", token,
        ])
        #expect(agreeing.status == 0, "\(agreeing.stderr)")
    }

    /// A kiosk with no map takes the site from the server, keeps it, and follows a newly
    /// published one without a restart.
    @Test func aKioskTakesTheSiteFromTheServerAndFollowsIt() async throws {
        _ = try await tracer(["map", "publish", Self.map], store: site)
        let token = try await token("kiosk-lab", file: "lab.token")
        let server = try await SiteServer(store: site)
        defer { server.process.kill() }
        let (daemon, writer, kioskStore) = try liveKiosk("kiosk-lab", server, token, ["--site-interval", "0.2"])
        defer { daemon.kill() }
        let kioskReader = try DocumentStore(path: kioskStore)
        #expect(await until(60) { (try? await kioskReader.reading { db in try db.get("config/site") }.exists) == true })
        let text = try String(contentsOfFile: Self.map, encoding: .utf8)
        let moved = dir.file("moved.yaml")
        try text.replacingOccurrences(
            of: "room: lab,      position: [6, 9.5]",
            with: "room: lab,      position: [7, 9.5]"
        )
        .write(toFile: moved, atomically: true, encoding: .utf8)
        let republished = try await tracer(["map", "publish", moved], store: site)
        #expect(republished.status == 0)
        #expect(
            await until(60) {
                guard
                    case .array(let p)? = (try? await kioskReader.reading { db in try db.get("beacons/kiosk-lab") })?[
                        "position"
                    ]
                else {
                    return false
                }
                return p.first?.doubleValue == 7
            },
            "the running kiosk took the new site: \(daemon.stderr)"
        )
        try writer.close()
        #expect(await daemon.stop(0, timeout: 120)?.status == 0, "\(daemon.stderr)")

        // The server gone, the kiosk starts on the copy it kept (the new site).
        server.process.kill()
        let offline = try kiosk(
            "kiosk-lab",
            store: kioskStore,
            upstream: server.url,
            token: token,
            extra: ["--drain-timeout", "1"],
            map: false
        )
        #expect(await offline.stop(0, timeout: 120)?.status == 0, "\(offline.stderr)")
        #expect(offline.stderr.contains("starting with the site kept from"), "\(offline.stderr)")
    }

    /// A kiosk with no fixed beacon in its room asks the site server for its fit (the kiosks
    /// hearing each other, at the map's exponent), stores it, ranges with it and replicates it.
    @Test func aKioskFollowsTheSitesFitOfItsReceiver() async throws {
        // The site's exponent written into the map, as `tracer site calibration --write` does.
        let fittedMap = dir.file("fitted.yaml")
        try String(contentsOfFile: Self.map, encoding: .utf8)
            .replacingOccurrences(of: "\nsettings:\n", with: "\nsettings:\n  pathLossExponent: 2\n")
            .write(toFile: fittedMap, atomically: true, encoding: .utf8)
        let published = try await tracer(["map", "publish", fittedMap], store: site)
        try #require(published.status == 0, "\(published.stderr)")
        try await KioskHearingFixture.write(
            site: try Site.load(file: fittedMap),
            into: try DocumentStore(path: site),
            at: Date().timeIntervalSince1970,
            errors: ["kiosk-office": -4]
        )
        let token = try await token("kiosk-office", file: "office.token")
        let server = try await SiteServer(store: site)
        defer { server.process.kill() }
        let (daemon, writer, kioskStore) = try liveKiosk("kiosk-office", server, token, ["--fit-interval", "0.2"])
        defer { daemon.kill() }
        let kioskReader = try DocumentStore(path: kioskStore)
        func fitted(_ store: DocumentStore) async -> Beacon.Calibration? {
            (try? await store.reading { db in try db.get("beacons/kiosk-office") }).flatMap(Beacon.Calibration.init)
        }
        #expect(
            await until(60) {
                guard let c = await fitted(kioskReader) else { return false }
                return abs(c.receiverOffset - 4) < 1 && c.source == "kiosks"
            },
            "the kiosk took the site's fit: \(daemon.stderr)"
        )
        try writer.close()
        #expect(await daemon.stop(0, timeout: 120)?.status == 0, "\(daemon.stderr)")
        #expect(
            daemon.stderr.contains("ranging with the site server's fit of this kiosk's receiver"),
            "\(daemon.stderr)"
        )
        server.process.kill()
        let replicated = await fitted(try DocumentStore(path: site))
        #expect(
            replicated?.source == "kiosks" && abs((replicated?.receiverOffset ?? 0) - 4) < 1,
            "\(String(describing: replicated))"
        )
    }

    // MARK: Transport

    /// `serve --tls-cert --tls-key` serves HTTPS itself; a kiosk verifies it against the site's
    /// CA (`--ca-file`), and without it (an unknown issuer) replication retries, losing nothing.
    @Test func replicationOverTLSVerifiedAgainstTheSitesCA() async throws {
        let ca = try TestCA()
        let kioskStore = dir.file("kiosk.sqlite")
        try record(500, at: "kiosk-lab", into: kioskStore)
        let token = try await token("kiosk-lab", file: "lab.token")
        let server = try await SiteServer(
            store: site,
            extra: ["--tls-cert", ca.certificateFile, "--tls-key", ca.keyFile]
        )
        defer { server.process.kill() }
        #expect(server.scheme == "https")
        let untrusted = try kiosk(
            "kiosk-lab",
            store: kioskStore,
            upstream: server.url,
            token: token,
            extra: ["--drain-timeout", "2"]
        )
        #expect(await untrusted.stop(0, timeout: 120)?.status == 0)
        #expect(untrusted.stderr.contains("TLS failed"), "\(untrusted.stderr)")
        var said: [String] = []
        while let line = untrusted.nextLine(timeout: 1) { said.append(line) }
        // The drain's deadline passed: it says how much is left, and that it is kept.
        #expect(
            said.last?.hasPrefix("replication: ") == true && said.last?.contains("changes not acknowledged") == true
                && said.last?.contains("kept here") == true,
            "\(said)"
        )
        #expect(Self.count(try DocumentStore(path: site), anchor: "kiosk-lab") == 0)
        let trusted = try kiosk(
            "kiosk-lab",
            store: kioskStore,
            upstream: server.url,
            token: token,
            extra: ["--ca-file", ca.caFile]
        )
        #expect(await trusted.stop(0, timeout: 120)?.status == 0, "\(trusted.stderr)")
        #expect(try Self.documents(site, anchor: "kiosk-lab") == Self.documents(kioskStore, anchor: "kiosk-lab"))
    }

    /// A server facing the network protects itself: connections that send half a request and
    /// stop are closed after the idle timeout, no more than --max-connections are open at once,
    /// and it still answers afterwards.
    @Test func slowAndIdleClientsAreCutOffAndConnectionsBounded() async throws {
        let server = try await SiteServer(store: site, extra: ["--idle-timeout", "2", "--max-connections", "50"])
        defer { server.process.kill() }
        let pid = server.process.process.processIdentifier
        var sockets: [Int32] = []
        defer { for fd in sockets { close(fd) } }
        for _ in 0..<200 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in.loopback(port: server.port)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            try #require(connected == 0)
            let half = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: "
            _ = half.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
            sockets.append(fd)
        }
        // Bounded: the server holds at most 50 client sockets (the rest wait in the backlog).
        var most = 0
        let deadline = Date(timeIntervalSinceNow: 10)
        while Date() < deadline {
            most = max(most, Self.sockets(of: pid))
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(most > 0 && most <= 50 + 8, "the server held \(most) sockets")
        // Cut off: every half request ends with the server closing it (read gives 0).
        var closed = 0
        for fd in sockets {
            var timeout = timeval(tv_sec: 60, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var byte: UInt8 = 0
            if recv(fd, &byte, 1, 0) <= 0 { closed += 1 }
        }
        #expect(closed == 200, "\(200 - closed) half requests still open")
        let r = await httpGet(port: UInt16(server.port), path: "/health") ?? ""
        #expect(r.contains(#""status":"ok""#), "\(r)")
    }

    /// Sockets a process holds open (its listener and store files aside, roughly).
    static func sockets(of pid: Int32) -> Int {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        return fds.filter { fd in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"))?.hasPrefix("socket:")
                == true
        }.count
    }
}

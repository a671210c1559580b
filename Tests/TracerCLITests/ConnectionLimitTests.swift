import Foundation
import Testing
@_spi(Blocking) import TracerStore
import TracerTesting

/// One client holding half-sent requests must not take the server: `tracer serve` closes a
/// client's connections beyond `--max-connections-per-client`, and `/health` answers meanwhile.
@Suite struct ConnectionLimitTests {
    let dir = TemporaryDirectory("tracer-connection-limit")
    static let map = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("BeaconMap/example-campus.yaml").path

    /// A TCP connection from `source` (a loopback address of its own) that sends `text` and
    /// stops; -1 when it could not connect. (Many at once: Tools/testing/half-open.py.)
    static func halfRequest(port: Int, from source: String, _ text: String) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return -1 }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = UInt16(port).bigEndian
        remote.sin_addr.s_addr = inet_addr("127.0.0.1")
        let ok =
            withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            } == 0
            && withUnsafePointer(to: &remote) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            } == 0
        guard ok else {
            close(fd)
            return -1
        }
        _ = Array(text.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        return fd
    }

    @Test func halfSentRequestsFromOneClientLeaveHealthAnswering() async throws {
        // 1,100 connections accepted by the server, which inherits this limit: the limit a
        // site would raise too.
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = max(limit.rlim_cur, min(limit.rlim_max, 4096))
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        try #require(limit.rlim_cur >= 2400, "the file limit is \(limit.rlim_cur)")

        let server = try TracerProcess.start([
            "serve", "--bind", "127.0.0.1:0", "--map", Self.map, "--store", dir.file("s.sqlite"),
            "--max-connections-per-client", "64", "--idle-timeout", "60",
        ])
        defer { server.kill() }
        let line = try #require(await server.line(), "serve printed nothing")
        let port = try #require(line.split(separator: ":").last.flatMap { Int($0.prefix { $0.isNumber }) })

        // The 1,100 are held by a process of their own, not this one: with over a thousand
        // descriptors open here, another test starting a process at that moment would crash the
        // whole run (Foundation's Process.run(); Tools/testing/half-open.py says more).
        let client = try TracerProcess.start(
            program: "/usr/bin/python3",
            [Chromium.testingTools + "/half-open.py", "\(port)", "127.0.0.2", "1100"]
        )
        defer { client.kill() }
        #expect(await client.line() == "connected 1100", "\(client.stderr)")
        // All but the client's 64 are closed by the server, at once (a deadline, not a timing).
        var closed = 0
        let deadline = Date(timeIntervalSinceNow: 30)
        while closed < 1100 - 64, Date() < deadline,
            let line = await client.line(timeout: deadline.timeIntervalSinceNow)
        {
            closed = Int(line.dropFirst("closed ".count)) ?? closed
        }
        #expect(closed >= 1100 - 64, "\(closed) of 1,100 closed")
        // Another client is answered within a second while the 64 are still held open.
        for _ in 0..<5 {
            let started = ContinuousClock.now
            let body = await httpGet(port: UInt16(port), path: "/health", timeout: 5)
            #expect(body?.contains(#""status":"ok""#) == true)
            #expect(ContinuousClock.now - started < .seconds(1))
        }
        // What the client has seen closed since (it says so within 200 ms of a change).
        while let line = await client.line(timeout: 0.5) { closed = Int(line.dropFirst("closed ".count)) ?? closed }
        #expect(closed <= 1100 - 64, "the client's first 64 were closed too")

        // A request of 1,001 headers is refused as every other: a 400 with the JSON error.
        let headers = (0..<1001).map { "X-H\($0): v\r\n" }.joined()
        let fd = Self.halfRequest(port: port, from: "127.0.0.3", "GET /health HTTP/1.1\r\nHost: x\r\n\(headers)\r\n")
        try #require(fd >= 0)
        defer { close(fd) }
        let text = String(decoding: await onThread { readAll(fd, timeout: 10) }, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 400"), "\(text)")
        #expect(text.lowercased().contains("content-type: application/json"), "\(text)")
        #expect(text.contains(#""code":"bad_request""#), "\(text)")
    }

    /// Two kiosks' batches of nearly 32 MiB each arriving at once at `tracer serve`: they are
    /// decoded on a thread of their own, one at a time, so `/health` answers within a second
    /// throughout (before: 6.9 s), and the memory they took is given back after.
    @Test func healthAnswersWhileTwoLargeBatchesArrive() async throws {
        let store = dir.file("s.sqlite")
        #expect(try await TracerProcess.running(["map", "publish", Self.map, "--store", store]).status == 0)
        let created = try await TracerProcess.running(["token", "create", "--role", "admin", "--store", store])
        let admin = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let server = try await ReplicationTests.SiteServer(store: store)
        defer { server.process.kill() }
        let now = Date().timeIntervalSince1970
        func batch(_ kiosk: String) -> String {
            var entries: [String] = []
            var size = 0
            var i = 0
            while size < 30 << 20 {
                let start = Timestamp(seconds: now - 3600 + Double(i % 3000)).iso8601Milliseconds
                let entry =
                    #"{"path":"beacons/\#(kiosk)/interactions/w\#(i)","data":{"deviceId":"f7826da6-4fa2-4e98-8024-bc5b71e0893e:1:\#(i % 500)","anchor":"\#(kiosk)","proximity":"near","proximityCode":2,"distance":1.25,"minDistance":1.1,"rssi":-65.5,"measuredPower":-59,"samples":12,"testResult":false,"start":{"__time__":"\#(start)"},"end":{"__time__":"\#(start)"}}}"#
                entries.append(entry)
                size += entry.utf8.count + 1
                i += 1
            }
            return
                #"{"kiosk":"\#(kiosk)","through":1,"sentAt":\#(now),"backlog":{"changes":0,"oldest":null},"documents":["#
                + entries.joined(separator: ",") + "]}"
        }
        let bodies = [batch("kiosk-lab"), batch("kiosk-cafe")]
        let before = server.process.heapMiB ?? 0
        let sent = Collector<Int>()
        for body in bodies {
            Task {
                let r = await httpRequest(
                    .POST,
                    "\(server.url)/v1/sync",
                    headers: ["Authorization": "Bearer \(admin)", "Content-Type": "application/json"],
                    body: body,
                    timeout: 300
                )
                sent.add(r?.status ?? 0)
            }
        }
        var slowest = 0.0
        var peak = 0
        let deadline = Date().addingTimeInterval(300)
        while sent.count < 2, Date() < deadline {
            let started = Date()
            let answer = await httpGet(port: UInt16(server.port), path: "/health", timeout: 10)
            slowest = max(slowest, Date().timeIntervalSince(started))
            peak = max(peak, server.process.heapMiB ?? 0)
            #expect(answer?.contains(#""status":"ok""#) == true, "\(answer ?? "no answer")")
            try await Task.sleep(for: .milliseconds(100))
        }
        let statuses = [sent.next(timeout: 1), sent.next(timeout: 1)]
        #expect(statuses == [200, 200], "\(statuses)")
        #expect(slowest < 1, "/health took \(slowest) s while two batches arrived")
        // Given back, SQLite's page caches too, and glibc's arenas (issue 46): of the 360 MiB
        // two batches took, 7 stay (8 → 367-375 → 15 MiB, debug build, with both cores busy
        // with other work too, 2026-12-07). Before glibc's thresholds were pinned (`tracer`'s
        // main), 15-17 stayed on a quiet machine and 33-44 on a busy one, its threads' arenas
        // keeping what they had freed; before the caches were released, 79-85; before any trim,
        // 366. Under 10 MiB, polled for 15 s (the last release is 5 s after the batch).
        var after = server.process.heapMiB ?? 0
        let bound = 10.0
        _ = await until(15) {
            after = server.process.heapMiB ?? 0
            return Double(after - before) < bound
        }
        #expect(Double(after - before) < bound, "resident \(before) MiB before, \(peak) at most, \(after) after")
        print(
            "sync: /health's slowest answer \(String(format: "%.3f", slowest)) s beside two 30 MiB batches; resident \(before) → \(peak) → \(after) MiB"
        )
    }
}

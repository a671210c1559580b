import Foundation
import Logging
import TracerModel
@_spi(Blocking) import TracerStore

/// `tracer-bench store`: the store against plain SQLite, or on PostgreSQL against plain libpq,
/// measured in the same run.
struct StoreBenchmark: Measuring {
    var directory: String
    /// A PostgreSQL database (libpq URI) to measure the store on instead of SQLite files: each
    /// store and each baseline gets a schema of its own, dropped after.
    var postgres: String?
    var writeDocuments = 200_000
    var rounds = 3
    var querySizes = [10_000, 1_000_000]
    var listenerWrites = 500
    /// fsync at every commit (the store's default) for both sides of the write benchmark.
    var synchronous = true
    /// This program's binary (`tracer-bench`), run as the cross-process writer (`tracer-bench writer`).
    var binary: String
    var report: (String) -> Void

    init(directory: String, binary: String, report: @escaping (String) -> Void) {
        self.directory = directory
        self.binary = binary
        self.report = report
    }

    static let parents = 200
    static let t0 = 1_795_341_600.0  // 2026-11-22T10:00:00Z
    /// One sighting summary every 86.4 ms across the site: 1M documents make one day, and a
    /// 5-minute window on one beacon holds about 17 documents at any store size.
    static let spacing = 0.0864

    struct Fixture {
        var path: DocumentPath
        var data: DocumentData
        var row: SQLiteBaseline.Row
    }

    /// The i-th interaction document, as the daemon writes them: beacons interleaved, random ids.
    static func fixture(_ i: Int) -> Fixture {
        var g = SplitMixID(seed: UInt64(i))
        let parent = try! Collections.interactions(at: "b-\(String(format: "%03d", i % parents))").description
        let id = g.id()
        let start = Timestamp(seconds: t0 + Double(i) * spacing)
        let device = "f7826da6-4fa2-4e98-8024-bc5b71e0893e:1:\((i &* 7919) % 5000)"
        let data: DocumentData = [
            "deviceId": .string(device),
            "beacon": [
                "uuid": "e2c56db5-dffb-48d2-b060-d0f5a71096e0", "major": 2, "minor": .integer(Int64(i % parents)),
            ],
            "proximity": "near", "proximityCode": 2, "distance": .double(1.84), "rssi": .double(-67.5),
            "measuredPower": -59, "start": .timestamp(start), "end": .timestamp(start.adding(seconds: 30)),
            "samples": 24, "testResult": false, "ts": .timestamp(start.adding(seconds: 30.2)),
        ]
        let row = SQLiteBaseline.Row(
            parent: parent,
            id: id,
            json: JSON.string(data),
            deviceID: device,
            start: start.microseconds
        )
        return Fixture(path: try! DocumentPath(parent + "/" + id), data: data, row: row)
    }

    /// The daemon's two indexes on interactions (the baseline's schema has the same two).
    static let indexes = [Indexes.interactionsByStart, Indexes.interactionsByDevice]

    func run() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try writes()
        try queries()
        try listeners()
    }

    // MARK: Writes

    func writes() throws {
        report(
            "## Writes: \(writeDocuments) interaction documents, \(Self.parents) beacons, batches of 1,000, "
                + (postgres == nil
                    ? "synchronous=\(synchronous ? "FULL" : "NORMAL")"
                    : "synchronous_commit=\(synchronous ? "on" : "off")") + " on both sides"
        )
        let fixtures = (0..<writeDocuments).map(Self.fixture)
        let meanBytes = fixtures.reduce(0) { $0 + $1.row.json.utf8.count } / fixtures.count
        report("documents: \(meanBytes) bytes of JSON on average")
        // Documents a second, by the wall clock and by the process's CPU time (shown on SQLite
        // only: on PostgreSQL the work is its server's), each round's.
        typealias Rates = (wall: Double, cpu: Double)
        var raw: [Rates] = []
        var store: [Rates] = []
        var pipelined: [Double] = []
        for round in 1...rounds {
            let rawPath = "writes_raw_\(round)"
            let storePath = "writes_store_\(round)"
            func runRaw() throws -> Rates {
                let baseline = try openBaseline(rawPath, synchronous: synchronous)
                let t = try timeWithCPU {
                    for chunk in stride(from: 0, to: fixtures.count, by: 1000) {
                        try baseline.insert(fixtures[chunk..<min(chunk + 1000, fixtures.count)].map(\.row))
                    }
                }
                return (Double(fixtures.count) / t.wall, Double(fixtures.count) / t.cpu)
            }
            func runStore() throws -> Rates {
                let s = try openStore(storePath, synchronous: synchronous)
                for index in Self.indexes { try s.declareIndex(index) }
                let t = try timeWithCPU {
                    for chunk in stride(from: 0, to: fixtures.count, by: 1000) {
                        var batch = WriteBatch()
                        for f in fixtures[chunk..<min(chunk + 1000, fixtures.count)] { batch.set(f.path, f.data) }
                        try s.commit(batch)
                    }
                }
                return (Double(fixtures.count) / t.wall, Double(fixtures.count) / t.cpu)
            }
            if postgres != nil {
                // Informative, no target: raw libpq pipelined as the store sends its writes.
                let baseline = try PostgresBaseline(
                    uri: postgres!,
                    schema: "writes_pipelined",
                    synchronousCommits: synchronous
                )
                pipelined.append(
                    Double(fixtures.count)
                        / (try time {
                            for chunk in stride(from: 0, to: fixtures.count, by: 1000) {
                                try baseline.insertPipelined(
                                    fixtures[chunk..<min(chunk + 1000, fixtures.count)].map(\.row)
                                )
                            }
                        })
                )
                removeStore("writes_pipelined")
            }
            // Alternate which goes first, so drift in the machine's speed falls on both sides.
            let (r, st): (Rates, Rates)
            if round % 2 == 1 {
                r = try runRaw()
                st = try runStore()
            } else {
                st = try runStore()
                r = try runRaw()
            }
            raw.append(r)
            store.append(st)
            report(
                "round \(round): raw \(rawName) \(Int(r.wall)) docs/s, store \(Int(st.wall)) docs/s, "
                    + "ratio \(format(st.wall / r.wall))"
                    + (postgres != nil ? "" : "; by CPU time \(format(st.cpu / r.cpu))")
                    + (pipelined.isEmpty ? "" : "; raw libpq pipelined \(Int(pipelined.last!)) docs/s")
            )
            removeStore(rawPath)
            removeStore(storePath)
        }
        let ratio = median(zip(store, raw).map { $0.wall / $1.wall })
        let target = postgres == nil ? 0.95 : 0.7
        report(
            "median: raw \(Int(median(raw.map(\.wall)))) docs/s, store \(Int(median(store.map(\.wall)))) docs/s; "
                + "median of the rounds' store/raw = \(format(ratio)) " + verdict(ratio >= target, "target ≥ \(target)")
        )
        if postgres == nil {
            let cpuRatio = median(zip(store, raw).map { $0.cpu / $1.cpu })
            report(
                "  by CPU time (this process, every thread): raw \(Int(median(raw.map(\.cpu)))) docs per CPU second, "
                    + "store \(Int(median(store.map(\.cpu)))); median of the rounds' store/raw = \(format(cpuRatio)) "
                    + verdict(cpuRatio >= target, "target ≥ \(target)")
            )
        }
        if !pipelined.isEmpty {
            report(
                "  raw libpq pipelined as the store sends its writes: median \(Int(median(pipelined))) docs/s; "
                    + "store/pipelined raw = \(format(median(store.map(\.wall)) / median(pipelined))) (no target: what the store's own "
                    + "work costs once both save the round trips)"
            )
        }
    }

    // MARK: Queries

    func queries() throws {
        for size in querySizes {
            report("## Queries over \(size) documents")
            let storePath = "query_store_\(size)"
            let rawPath = "query_raw_\(size)"
            // Without fsync at commits: building the fixture only; reads are unaffected.
            let store = try openStore(storePath, synchronous: false)
            for index in Self.indexes { try store.declareIndex(index) }
            let baseline = try openBaseline(rawPath, synchronous: false)
            var ids: [(parent: String, id: String)] = []
            ids.reserveCapacity(size)
            let build = try time {
                for chunk in stride(from: 0, to: size, by: 5000) {
                    var batch = WriteBatch()
                    var rows: [SQLiteBaseline.Row] = []
                    for i in chunk..<min(chunk + 5000, size) {
                        let f = Self.fixture(i)
                        batch.set(f.path, f.data)
                        rows.append(f.row)
                        ids.append((f.row.parent, f.row.id))
                    }
                    try store.commit(batch)
                    try baseline.insert(rows)
                    if (chunk / 5000) % 20 == 19 { report("  built \(chunk + 5000)…") }
                }
            }
            report("built both in \(format(build)) s")
            if postgres != nil { try analyze(store: storePath, raw: rawPath) }
            let span = Double(size) * Self.spacing
            var g = SplitMixID(seed: 99)
            let windows = (0..<2000).map { _ -> (String, Double) in
                let parent = try! Collections.interactions(
                    at: "b-\(String(format: "%03d", Int(g.next() % UInt64(Self.parents))))"
                ).description
                let from = Self.t0 + Double(g.next() % UInt64(max(1, span - 300)))
                return (parent, from)
            }
            // Each window read by both, one after the other (so that drift in the machine's speed
            // falls on both sides), in rounds; the ratio is the median of the rounds' ratios.
            struct Round {
                var store: [Double] = []
                var raw: [Double] = []
                var decoded: [Double] = []
                var empty: [Double] = []
                var emptyRaw: [Double] = []
            }
            var results: [Round] = []
            var found = 0
            var rawFound = 0
            var fields = 0
            for _ in 1...rounds {
                var r = Round()
                for (parent, from) in windows {
                    let q = Query(collection: try CollectionPath(parent))
                        .where("start", .greaterThanOrEqual, .timestamp(Timestamp(seconds: from)))
                        .where("start", .lessThan, .timestamp(Timestamp(seconds: from + 300)))
                    let fromMicros = Timestamp(seconds: from).microseconds
                    r.raw.append(
                        try time {
                            rawFound += try baseline.window(
                                parent: parent,
                                from: fromMicros,
                                to: fromMicros + 300_000_000
                            )
                        }
                    )
                    r.store.append(try time { found += try store.getDocuments(q).count })
                    // Every field of every document read, as an export would.
                    r.decoded.append(try time { fields += try store.getDocuments(q).reduce(0) { $0 + $1.data!.count } })
                    // A window before the first document: what a query costs before its rows.
                    let none = Query(collection: try CollectionPath(parent))
                        .where("start", .greaterThanOrEqual, .timestamp(Timestamp(seconds: Self.t0 - 900)))
                        .where("start", .lessThan, .timestamp(Timestamp(seconds: Self.t0 - 600)))
                    let noneFrom = Timestamp(seconds: Self.t0 - 900).microseconds
                    r.emptyRaw.append(
                        try time { _ = try baseline.window(parent: parent, from: noneFrom, to: noneFrom + 300_000_000) }
                    )
                    r.empty.append(try time { _ = try store.getDocuments(none).count })
                }
                results.append(r)
            }
            precondition(found == rawFound, "the store and SQLite disagree: \(found) vs \(rawFound)")
            precondition(fields > 0, "no document was read")
            let q = Query(collection: try CollectionPath(windows[0].0))
                .where("start", .greaterThanOrEqual, .timestamp(Timestamp(seconds: windows[0].1)))
            report("plan: \(try store.explain(q).description.replacingOccurrences(of: "\n", with: " |"))")
            let ratios = results.map { median($0.store) / median($0.raw) }
            let ratio = median(ratios)
            let storeTimes = results.flatMap(\.store)
            let rawTimes = results.flatMap(\.raw)
            report(
                "one beacon, 5-minute window (\(format(Double(rawFound) / Double(windows.count * rounds))) documents "
                    + "each), \(windows.count) windows × \(rounds) rounds: store median \(ms(median(storeTimes))) ms, "
                    + "p99 \(ms(percentile(storeTimes, 0.99))) ms; raw median \(ms(median(rawTimes))) ms; "
                    + "store/raw time \(format(ratio)) (rounds: \(ratios.map(format).joined(separator: ", "))) "
                    + (postgres == nil
                        ? verdict(ratio <= 1.5, "target ≤ 1.5×") + " "
                            + verdict(median(storeTimes) <= 0.001, "target ≤ 1 ms median")
                        : verdict(median(storeTimes) <= 0.002, "target ≤ 2 ms median"))
            )
            let decodedRatio = median(results.map { median($0.decoded) / median($0.raw) })
            report(
                "  the same, every field of every document read: store median "
                    + "\(ms(median(results.flatMap(\.decoded)))) ms, store/raw time \(format(decodedRatio)) "
                    + "(raw reads each document's text and parses nothing)"
            )
            let emptyRatio = median(results.map { median($0.empty) / median($0.emptyRaw) })
            report(
                "  an empty window (a query's cost before its rows): store median "
                    + "\(ms(median(results.flatMap(\.empty)))) ms, raw median "
                    + "\(ms(median(results.flatMap(\.emptyRaw)))) ms, store/raw time \(format(emptyRatio))"
            )

            var pointStore: [Double] = []
            var pointRaw: [Double] = []
            for _ in 0..<5000 {
                let (parent, id) = ids[Int(g.next() % UInt64(ids.count))]
                let path = try DocumentPath(parent + "/" + id)
                pointRaw.append(try time { _ = try baseline.point(parent: parent, id: id) })
                pointStore.append(
                    try time { if !(try store.get(path).exists) { throw StoreError(.notFound, "\(path)") } }
                )
            }
            report(
                "point read: store median \(ms(median(pointStore))) ms, p99 \(ms(percentile(pointStore, 0.99))) ms; "
                    + "raw median \(ms(median(pointRaw))) ms "
                    + (postgres == nil
                        ? verdict(median(pointStore) <= 0.0002, "target ≤ 0.2 ms")
                        : verdict(median(pointStore) <= 0.001, "target ≤ 1 ms median"))
            )
            removeStore(storePath)
            removeStore(rawPath)
        }
    }

    // MARK: Listeners

    func listeners() throws {
        report("## Listeners (each write waits for its fsync)")
        let path = "listen"
        let store = try openStore(path, synchronous: true)
        let docs = try CollectionPath("bench/listen/docs")
        let arrivals = Arrivals()
        var registrations: [ListenerRegistration] = []
        for i in 0..<1000 {
            let p = try docs.document("d\(i)")
            registrations.append(
                store.addListener(document: p) { snap in
                    if snap.exists { arrivals.arrive(snap.id) }
                }
            )
        }
        // A query listener over the whole collection as well, as a live admin view would hold.
        registrations.append(try store.addListener(Query(collection: docs)) { _ in })
        var g = SplitMixID(seed: 5)
        var endToEnd: [Double] = []
        var afterCommit: [Double] = []
        for n in 0..<listenerWrites {
            let i = Int(g.next() % 1000)
            arrivals.expect("d\(i)")
            let start = DispatchTime.now().uptimeNanoseconds
            try store.set(try docs.document("d\(i)"), ["n": .integer(Int64(n))])
            let committed = DispatchTime.now().uptimeNanoseconds
            guard let arrived = arrivals.wait(timeout: 5) else {
                throw StoreError(.aborted, "a listener missed a write")
            }
            endToEnd.append(Double(arrived - start) / 1e9)
            afterCommit.append(Double(arrived &- min(arrived, committed)) / 1e9)
        }
        report(
            "in-process, 1,001 listeners registered: write-to-callback median \(ms(median(endToEnd))) ms, "
                + "p99 \(ms(percentile(endToEnd, 0.99))) ms; commit-to-callback p99 \(ms(percentile(afterCommit, 0.99))) ms "
                + (postgres == nil ? verdict(percentile(endToEnd, 0.99) <= 0.005, "target p99 ≤ 5 ms") : "")
        )

        // Another process writes; this one listens.
        let remote = Arrivals()
        let remoteDoc = try DocumentPath("bench/remote")
        let latencies = Samples()
        let registration = store.addListener(document: remoteDoc) { snap in
            guard let sent = snap.data?["sentAt"]?.timestampValue else { return }
            latencies.add(Timestamp.now().seconds - sent.seconds)
            remote.arrive("x")
        }
        _ = remote.wait(timeout: 0.5)
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: binary)
        writer.arguments = ["writer", "--store", location(path), "--document", remoteDoc.description, "--count", "300"]
        try writer.run()
        writer.waitUntilExit()
        Thread.sleep(forTimeInterval: 0.3)
        registration.cancel()
        let got = latencies.values
        report(
            "cross-process: \(got.count) of 300 writes seen; write-to-callback median \(ms(median(got))) ms, "
                + "p99 \(ms(percentile(got, 0.99))) ms "
                + verdict(percentile(got, 0.99) <= 0.1 && got.count >= 290, "target p99 ≤ 100 ms")
        )
        registrations.removeAll()
        removeStore(path)
    }

    /// The cross-process writer: writes `count` times, 20 ms apart, each time stamping the write.
    static func writer(store path: String, document: String, count: Int) throws {
        let store = try DocumentStore(path: path)
        let p = try DocumentPath(document)
        for n in 0..<count {
            try store.set(p, ["n": .integer(Int64(n)), "sentAt": .timestamp(Timestamp.now())])
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    // MARK: Helpers

    let quiet = Logger(label: "tracer.bench", factory: { _ in SwiftLogNoOpLogHandler() })

    var rawName: String { postgres == nil ? "sqlite3" : "libpq" }

    /// Where the store or baseline named `name` is: a file in the scratch directory, or the
    /// PostgreSQL database with `name` as its schema (made by the store when it opens).
    func location(_ name: String) -> String {
        guard let postgres else { return (directory as NSString).appendingPathComponent(name + ".sqlite") }
        return postgres + (postgres.contains("?") ? "&" : "?") + "options=-csearch_path%3D" + name
    }

    func openStore(_ name: String, synchronous: Bool) throws -> DocumentStore {
        var configuration = DocumentStore.Configuration()
        configuration.synchronousCommits = synchronous
        return try DocumentStore(path: location(name), configuration: configuration, logger: quiet)
    }

    func openBaseline(_ name: String, synchronous: Bool) throws -> any Baseline {
        if let postgres { return try PostgresBaseline(uri: postgres, schema: name, synchronousCommits: synchronous) }
        return try SQLiteBaseline(path: location(name), synchronousCommits: synchronous)
    }

    /// Fresh planner statistics for both sides after a bulk load (autovacuum would get there in
    /// its own time; a site's store is long past it).
    func analyze(store: String, raw: String) throws {
        try PostgresBaseline.execute(
            uri: postgres!,
            "ANALYZE \(store).documents; ANALYZE \(store).index_entries; ANALYZE \(raw).interactions"
        )
    }

    func removeStore(_ name: String) {
        if ProcessInfo.processInfo.environment["TRACER_BENCH_KEEP"] != nil { return }  // to inspect them
        if let postgres {
            try? PostgresBaseline.execute(uri: postgres, "DROP SCHEMA IF EXISTS \(name) CASCADE")
            return
        }
        let path = location(name)
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    func ms(_ seconds: Double) -> String { String(format: "%.3f", seconds * 1000) }
}

/// Waits for listener callbacks by document id.
final class Arrivals: @unchecked Sendable {
    private let condition = NSCondition()
    private var expected: String?
    private var arrivedAt: UInt64?

    func expect(_ id: String) {
        condition.lock()
        expected = id
        arrivedAt = nil
        condition.unlock()
    }

    func arrive(_ id: String) {
        let now = DispatchTime.now().uptimeNanoseconds
        condition.lock()
        if expected == nil || expected == id, arrivedAt == nil {
            arrivedAt = now
            condition.broadcast()
        }
        condition.unlock()
    }

    func wait(timeout: Double) -> UInt64? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer {
            expected = nil
            arrivedAt = nil
            condition.unlock()
        }
        while arrivedAt == nil {
            if !condition.wait(until: deadline) { return nil }
        }
        return arrivedAt
    }
}

/// Latencies recorded on the listener thread.
final class Samples: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [Double] = []

    func add(_ x: Double) {
        lock.lock()
        items.append(x)
        lock.unlock()
    }

    var values: [Double] {
        lock.lock()
        defer { lock.unlock() }
        return items
    }
}

/// Deterministic ids and numbers for fixtures.
struct SplitMixID {
    var state: UInt64
    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 &+ 1 }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)

    mutating func id() -> String {
        String(decoding: (0..<20).map { _ in Self.alphabet[Int(next() % 62)] }, as: UTF8.self)
    }
}

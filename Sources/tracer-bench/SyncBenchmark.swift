import ArgumentParser
import Foundation
import Logging
import Synchronization
import TracerAPI
import TracerModel
import TracerReplication
@_spi(Blocking) import TracerStore

/// `tracer-bench sync-fanin`: many kiosks in one process, each with its own store and the
/// product's `Replicator`, writing their badges' windows live as a daemon does (the windows that
/// ended, every 2 s); a listener on the site store times each window from its write at the kiosk
/// to its commit at the site. Tools/bench/sync runs the server and reads the results.
struct SyncFanIn: AsyncParsableCommand, Measuring {
    static let configuration = CommandConfiguration(
        commandName: "sync-fanin",
        abstract: "Kiosks replicating live to a site server: write-to-commit latency (JSON on stdout)."
    )

    @Option(help: "The site server's URL.") var server: String
    @Option(help: "A directory with one token file per kiosk, named by its anchor.") var tokens: String
    @Option(help: "The site server's store, to see commits in.") var siteStore: String
    @Option(name: .customLong("kiosk"), help: "A kiosk's anchor (repeat).") var kiosks: [String]
    @Option(help: "Badges heard at each kiosk.") var badges = 20
    @Option(help: "Seconds of live writing.") var seconds = 90.0
    @Option(help: "Where the kiosks' stores go.") var scratch: String

    func run() async throws {
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        let logger = Logger(label: "tracer.bench.sync")
        let tally = Tally()
        let site = try DocumentStore(path: siteStore)
        let listener = try site.addListener(Query(collectionGroup: Interaction.collectionID), from: .now) { snap in
            let now = ContinuousClock.now
            for change in snap.changes where change.kind == .added {
                tally.arrived(change.document.path.description, at: now)
            }
        }
        defer { listener.cancel() }

        var replicators: [Replicator] = []
        var stores: [DocumentStore] = []
        // Every client made is shut down on every path out (AsyncHTTPClient traps otherwise).
        func shutdown() async { for r in replicators { try? await r.upstream.shutdown() } }
        do {
            try await race(&replicators, &stores, tally: tally, logger: logger)
        } catch {
            await shutdown()
            throw error
        }
        await shutdown()
        return try report(tally)
    }

    func race(
        _ replicators: inout [Replicator],
        _ stores: inout [DocumentStore],
        tally: Tally,
        logger: Logger
    ) async throws {
        for k in kiosks {
            let store = try DocumentStore(path: (scratch as NSString).appendingPathComponent("\(k).sqlite"))
            let upstream = try Upstream(server, tokenFile: (tokens as NSString).appendingPathComponent(k))
            replicators.append(Replicator(store: store, upstream: upstream, kiosk: k, logger: logger))
            stores.append(store)
        }
        let (kiosks, badges, seconds) = (self.kiosks, self.badges, self.seconds)
        let pairs = Array(zip(kiosks, stores))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for r in replicators { group.addTask { try await r.run() } }
            let writers = Task {
                try await withThrowingTaskGroup(of: Void.self) { writers in
                    for (k, store) in pairs {
                        writers.addTask {
                            try await Self.write(kiosk: k, store: store, badges: badges, seconds: seconds) {
                                tally.wrote($0, at: $1)
                            }
                        }
                    }
                    try await writers.waitForAll()
                }
            }
            try await writers.value
            // Everything written must arrive: wait for the stragglers, then stop the kiosks.
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline, tally.waiting > 0 {
                try await Task.sleep(for: .milliseconds(50))
            }
            group.cancelAll()
        }
    }

    func report(_ tally: Tally) throws {
        let latencies = tally.latencies.withLock { $0 }
        // -1 when nothing arrived (the driver reads it as a failure; JSON has no NaN).
        func q(_ p: Double) -> Double { latencies.isEmpty ? -1 : percentile(latencies, p) }
        let out: Value = .map([
            "documents": .integer(Int64(tally.total.withLock { $0 })), "missing": .integer(Int64(tally.waiting)),
            "p50": .double(q(0.5)), "p99": .double(q(0.99)), "max": .double(latencies.max() ?? -1),
        ])
        print(JSON.string(out))
    }

    /// One kiosk's daemon, as far as its store sees it: each badge's 30-second windows end at a
    /// phase of their own, and every 2 s the windows that ended are written in one transaction.
    static func write(
        kiosk: String,
        store: DocumentStore,
        badges: Int,
        seconds: Double,
        wrote: @Sendable ([String], ContinuousClock.Instant) -> Void
    ) async throws {
        var rng = SystemRandomNumberGenerator()
        let phases = (0..<badges).map { _ in Double.random(in: 0..<30, using: &rng) }
        let start = ContinuousClock.now
        let wallStart = Date().timeIntervalSince1970
        var last = 0.0
        let collection = try Collections.interactions(at: kiosk)
        while last < seconds {
            try await Task.sleep(for: .seconds(2))
            let now = (ContinuousClock.now - start) / .seconds(1)
            var batch = WriteBatch()
            var paths: [String] = []
            for (b, phase) in phases.enumerated() {
                // Window ends at phase + 30 k: those in (last, now] have ended since the last flush.
                var end = phase + 30 * ((last - phase) / 30).rounded(.down) + 30
                while end <= now {
                    if end > last {
                        let path = collection.newDocument()
                        let t = Timestamp(seconds: wallStart + end)
                        batch.set(
                            path,
                            [
                                "deviceId": .string("f7826da6-4fa2-4e98-8024-bc5b71e0893e:9:\(b)"),
                                "proximity": "near", "proximityCode": 2, "distance": 1.5, "rssi": -64.5,
                                "measuredPower": -59, "samples": 30, "testResult": false,
                                "start": .timestamp(t.adding(seconds: -30)), "end": .timestamp(t),
                                "ts": .serverTimestamp,
                            ]
                        )
                        paths.append(path.description)
                    }
                    end += 30
                }
            }
            last = now
            guard batch.count > 0 else { continue }
            // Timed from just before the commit: the window exists at the kiosk from then on.
            let at = ContinuousClock.now
            wrote(paths, at)
            try await store.writing { [batch] db in try db.commit(batch) }
        }
    }
}

/// What the kiosks wrote and when, and how long each took to reach the site store.
final class Tally: Sendable {
    let written = Mutex<[String: ContinuousClock.Instant]>([:])
    let latencies = Mutex<[Double]>([])
    let total = Mutex(0)

    func wrote(_ paths: [String], at instant: ContinuousClock.Instant) {
        written.withLock { for p in paths { $0[p] = instant } }
        total.withLock { $0 += paths.count }
    }

    func arrived(_ path: String, at instant: ContinuousClock.Instant) {
        guard let t = written.withLock({ $0.removeValue(forKey: path) }) else { return }
        latencies.withLock { $0.append((instant - t) / .seconds(1)) }
    }

    var waiting: Int { written.withLock { $0.count } }
}

import Foundation
import Logging
import Synchronization
import Testing
import TracerTesting

@_spi(Blocking) @testable import TracerStore
@testable import TracerStorePostgres

/// A role run once per store (the flagger, a notifier): a second instance waits and takes over
/// when the first ends; a holder that loses its lock stops. On both backends.
@Suite struct SoleInstanceTests {
    /// Which instances are running their body, and how often each has started it.
    final class Runs: Sendable {
        let state = Mutex<(running: [String], starts: [String: Int])>(([], [:]))

        func body(_ name: String) -> @Sendable () async throws -> Void {
            { [self] in
                state.withLock {
                    $0.running.append(name)
                    $0.starts[name, default: 0] += 1
                }
                defer { state.withLock { $0.running.removeAll { $0 == name } } }
                try await Task.sleep(for: .seconds(3600))
            }
        }

        var running: [String] { state.withLock { $0.running } }
        func starts(_ name: String) -> Int { state.withLock { $0.starts[name] ?? 0 } }
    }

    /// The messages logged, to know that an instance has tried the lock and is waiting.
    final class Messages: LogHandler, @unchecked Sendable {
        let lines = Mutex<[String]>([])
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        // swift-format-ignore: AllPublicDeclarationsHaveDocumentation
        func log(event: LogEvent) { lines.withLock { $0.append(event.message.description) } }
        func contains(_ text: String) -> Bool { lines.withLock { $0.contains { $0.contains(text) } } }
        var logger: Logger { Logger(label: "test") { _ in self } }
    }

    @Test func aSecondInstanceWaitsAndTakesOverWhenTheFirstEnds() async throws {
        let (a, dir) = try DocumentStore.temporary()
        _ = dir
        // Another opening of the same store: on SQLite its own descriptor (flock locks are per
        // open file, so it contends as another process would), on PostgreSQL its own session.
        let b = try DocumentStore(path: a.path)
        let runs = Runs()
        let logA = Messages()
        let logB = Messages()
        let first = Task {
            try await a.whileSoleInstance(of: "flagger", poll: .milliseconds(50), logger: logA.logger, runs.body("a"))
        }
        #expect(await until { runs.running == ["a"] })
        let second = Task {
            try await b.whileSoleInstance(of: "flagger", poll: .milliseconds(50), logger: logB.logger, runs.body("b"))
        }
        #expect(await until { logB.contains("waiting to take over") }, "\(logB.lines.withLock { $0 })")
        #expect(runs.running == ["a"], "both ran at once")
        // Another role is another lock: not held by `a`.
        let other = Task {
            try await b.whileSoleInstance(of: "notify-x", poll: .milliseconds(50), logger: logB.logger, runs.body("c"))
        }
        #expect(await until { runs.running.sorted() == ["a", "c"] })
        other.cancel()
        _ = await other.result

        first.cancel()
        #expect(await first.result.isCancelled)
        #expect(await until { runs.running == ["b"] })
        #expect(logB.contains("took over"))
        second.cancel()
        _ = await second.result
        #expect(runs.running.isEmpty)
        #expect(runs.starts("a") == 1 && runs.starts("b") == 1)
    }

    /// Cancelled at any moment (SIGTERM just as the lock is taken, say), it ends: the body is
    /// never left running.
    @Test func cancelledAtAnyMomentItEnds() async throws {
        let (store, dir) = try DocumentStore.temporary()
        _ = dir
        let log = Messages()
        for round in 0..<40 {
            let ended = Mutex(false)
            let task = Task {
                _ = try? await store.whileSoleInstance(of: "flagger", poll: .milliseconds(10), logger: log.logger) {
                    try await Task.sleep(for: .seconds(3600))
                }
                ended.withLock { $0 = true }
            }
            // Not a wait for a result: the moment of the cancel, moved across the lock's taking.
            try await Task.sleep(for: .microseconds(round * 100))
            task.cancel()
            #expect(await until { ended.withLock { $0 } }, "round \(round) never ended")
        }
    }

    @Test func whenTheBodyEndsSoDoesTheRoleAndItsErrorIsThrown() async throws {
        let (store, dir) = try DocumentStore.temporary()
        _ = dir
        struct Failed: Error {}
        let log = Messages()
        await #expect(throws: Failed.self) {
            try await store.whileSoleInstance(of: "flagger", logger: log.logger) { throw Failed() }
        }
        // The lock was released: the next instance takes it at once.
        let ran = Mutex(false)
        try await store.whileSoleInstance(of: "flagger", logger: log.logger) { ran.withLock { $0 = true } }
        #expect(ran.withLock { $0 })
    }

    /// The holder's session ended by the server (as a restart or a network cut would): its body is
    /// cancelled, and runs again once it holds the lock again.
    @Test(.enabled(if: TestBackend.isPostgres, "a session advisory lock: PostgreSQL's"))
    func aHolderWhoseSessionEndsStopsAndStartsAgainOnceItHoldsTheLockAgain() async throws {
        let location = try TestBackend.freshPostgresStore()
        let store = try DocumentStore(path: location)
        let runs = Runs()
        let log = Messages()
        let holder = Task {
            try await store.whileSoleInstance(
                of: "flagger",
                poll: .milliseconds(50),
                logger: log.logger,
                runs.body("a")
            )
        }
        #expect(await until { runs.running == ["a"] })
        let admin = try PostgresConnection(location)
        let schema = try admin.query("SELECT current_schema()").first?.first ?? nil
        let key = PostgresPool.key("tracer.role:\(schema ?? ""):flagger")
        // A bigint advisory key shows in pg_locks as its high and low 32 bits.
        let high = UInt64(bitPattern: key) >> 32
        let low = UInt64(bitPattern: key) & 0xffff_ffff
        let ended = try admin.query(
            """
            SELECT pg_terminate_backend(pid) FROM pg_locks
            WHERE locktype = 'advisory' AND classid = \(high) AND objid = \(low) AND objsubid = 1
            """
        )
        #expect(ended == [["t"]], "the lock's session was not found")
        #expect(await until { log.contains("lost the lock") })
        #expect(await until { runs.starts("a") == 2 && runs.running == ["a"] })
        holder.cancel()
        _ = await holder.result
    }
}

extension Result {
    fileprivate var isCancelled: Bool {
        if case .failure(let e) = self { return e is CancellationError }
        return false
    }
}

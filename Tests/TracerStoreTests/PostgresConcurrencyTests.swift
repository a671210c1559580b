import Foundation
import Logging
import Synchronization
import Testing
import TracerTesting

@_spi(Blocking) @testable import TracerStore

/// What only PostgreSQL can do to the store: several processes' connections writing one database
/// at once. Change sequence numbers are drawn before commit, so without the writers' lock a
/// change numbered lower could commit after a higher one had been read, and whoever resumes
/// "after N" (a listener, a kiosk's outbox) would skip it for good. Each of these stores is a
/// separate pool with its own connections, as separate processes would have.
@Suite(.disabled(if: TestBackend.isPostgres, "always on PostgreSQL: the PostgreSQL pass would run it twice"))
struct PostgresConcurrencyTests {
    static let writers = 8
    static let perWriter = 120

    /// Eight writers commit small batches at once, each from its own store (its own connections).
    /// Half-way, each waits for `halfway` (a reader's test: so that it resumes while writers run,
    /// however busy the machine).
    static func write(_ location: String, halfway: (@Sendable () async -> Void)? = nil) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for w in 0..<writers {
                group.addTask {
                    let store = try DocumentStore(path: location, configuration: quiet, logger: silent)
                    var written = 0
                    var rng = SystemRandomNumberGenerator()
                    var waited = false
                    while written < perWriter {
                        if !waited, written >= perWriter / 2, let halfway {
                            await halfway()
                            waited = true
                        }
                        var batch = WriteBatch()
                        for _ in 0..<min(Int.random(in: 1...4, using: &rng), perWriter - written) {
                            batch.set(
                                try DocumentPath("writers/w\(w)/items/i\(written)"),
                                ["writer": .integer(Int64(w)), "n": .integer(Int64(written))]
                            )
                            written += 1
                        }
                        try await store.writing { [batch] db in try db.commit(batch) }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    static var quiet: DocumentStore.Configuration {
        var c = DocumentStore.Configuration()
        c.synchronousCommits = false
        return c
    }

    static let silent = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    @Test func aListenerResumingFromItsTokensSeesEveryChangeOfEightWritersExactlyOnce() async throws {
        let location = try TestBackend.freshPostgresStore()
        let reader = try DocumentStore(path: location, configuration: Self.quiet, logger: Self.silent)
        let seen = Mutex<(added: [String: Int], token: Int64, snapshots: Int)>(([:], 0, 0))
        let query = Query(collectionGroup: "items")
        func listen(after token: Int64) throws -> ListenerRegistration {
            try reader.addListener(query, from: .after(token: token)) { snapshot in
                seen.withLock { state in
                    for change in snapshot.changes where change.kind == .added {
                        state.added[change.document.path.description, default: 0] += 1
                    }
                    state.token = snapshot.token
                    state.snapshots += 1
                }
            }
        }
        var registration = try listen(after: 0)
        let done = Atomic<Bool>(false)
        // The writers stop half-way until the listener has been resumed twice: on a busy machine
        // they could otherwise all finish before its first snapshot, and it would resume only
        // once, after everything (CI saw that under load).
        let resumed = Atomic<Int>(0)
        let writing = Task {
            defer { done.store(true, ordering: .sequentiallyConsistent) }
            try await Self.write(location) {
                _ = await until(60) { resumed.load(ordering: .sequentiallyConsistent) >= 2 }
            }
        }
        // Stopped and resumed from its last token, again and again, while the writers run.
        var resumes = 0
        while !done.load(ordering: .sequentiallyConsistent) || resumes == 0 {
            let before = seen.withLock { $0.snapshots }
            _ = await until(10) { seen.withLock { $0.snapshots } > before }
            registration.cancel()
            registration = try listen(after: seen.withLock { $0.token })
            resumes += 1
            resumed.store(resumes, ordering: .sequentiallyConsistent)
        }
        try await writing.value
        let total = Self.writers * Self.perWriter
        let complete = await until(30) { seen.withLock { $0.added.count } == total }
        registration.cancel()
        let state = seen.withLock { $0 }
        #expect(complete, "\(state.added.count) of \(total) documents seen")
        #expect(state.added.values.allSatisfy { $0 == 1 }, "\(state.added.filter { $0.value != 1 })")
        #expect(resumes > 1)
        // The log itself: one change per write, numbered 1…total with no gap.
        #expect(try await reader.reading { db in try db.currentToken() } == Int64(total))
        #expect(try await reader.reading { db in try db.integrityCheck() } == "ok")
    }

    @Test func anOutboxReadAfterItsTokenWhileEightWritersRunMissesNothing() async throws {
        let location = try TestBackend.freshPostgresStore()
        let reader = try DocumentStore(path: location, configuration: Self.quiet, logger: Self.silent)
        let writing = Task { try await Self.write(location) }
        var token: Int64 = 0
        var counts: [DocumentPath: Int] = [:]
        let total = Self.writers * Self.perWriter
        let deadline = Date(timeIntervalSinceNow: 120)
        // A kiosk's replicator: small pages, each after the last one's token.
        while counts.count < total, Date() < deadline {
            let after = token
            let page = try await reader.reading { db in try db.outbox(after: after, limit: 7) }
            for entry in page.entries { counts[entry.path, default: 0] += 1 }
            #expect(page.through >= token)
            token = page.through
            if page.entries.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        }
        try await writing.value
        #expect(counts.count == total)
        #expect(counts.values.allSatisfy { $0 == 1 })
    }

}

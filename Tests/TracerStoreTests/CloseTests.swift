import Foundation
import Synchronization
import Testing
import TracerTesting

@_spi(Blocking) @testable import TracerStore
@testable import TracerStorePostgres

/// `DocumentStore.close()`: what was given to the store is written, its threads end, and
/// nothing after it is taken (on PostgreSQL too: `TRACER_TEST_STORE=postgres`).
@Suite struct CloseTests {
    /// Forty writes handed to the writer thread, queued behind one that holds it: `close()`
    /// waits for all of them to commit (none fails), a listener's thread ends, and every read
    /// and write afterwards, synchronous or not, fails with `storeGone`. The store opened again
    /// holds the forty.
    @Test func writesGivenBeforeCloseCommitAndNothingIsTakenAfter() async throws {
        let (store, dir) = try DocumentStore.temporary()
        _ = dir
        let c = try CollectionPath("beacons/b1/interactions")
        let heard = Collector<QuerySnapshot>()
        let registration = try store.addListener(Query(collection: c)) { heard.add($0) }
        defer { registration.cancel() }
        #expect(heard.next() != nil)
        // The writer is held until every write below is queued behind it.
        let release = Release()
        let holding = Release()
        let holder = Task {
            try await store.writing { db in
                holding.value.store(true, ordering: .releasing)
                while !release.value.load(ordering: .acquiring) { usleep(1_000) }
            }
        }
        // Polled with the suites' own deadline (`until`, 120 s): under the PostgreSQL run's load
        // the forty tasks took over 30 s to start.
        _ = await until { holding.value.load(ordering: .acquiring) }
        let writes = (0..<40).map { i in
            Task { try await store.writing { db in try db.set(try c.document("w\(i)"), ["i": .integer(Int64(i))]) } }
        }
        _ = await until { store.unfinished.writes >= 41 }
        #expect(store.unfinished.writes == 41)
        let closing = Task { await store.close() }
        release.value.store(true, ordering: .releasing)
        await closing.value
        try await holder.value
        for write in writes { try await write.value }  // none refused: each was given before close
        #expect(store.isClosed && store.unfinished == (0, 0))

        func isGone(_ error: any Error) -> Bool { (error as? StoreError)?.code == .storeGone }
        // The command line's synchronous reads and writes too.
        #expect(performing: { try store.read { db in try db.get(try c.document("w0")) } }, throws: isGone)
        #expect(performing: { try store.write { db in try db.set(try c.document("late"), ["i": 1]) } }, throws: isGone)
        await #expect(
            performing: { try await store.writing { db in try db.set(try c.document("late"), ["i": 1]) } },
            throws: isGone
        )
        await #expect(
            performing: { try await store.reading { db in try db.getDocuments(Query(collection: c)) } },
            throws: isGone
        )
        await store.close()  // a second close does nothing more

        let again = try DocumentStore(path: store.path)
        let documents = try await again.reading { db in try db.getDocuments(Query(collection: c)) }
        #expect(documents.count == 40 && !documents.contains { $0.id == "late" })
        #expect(try await again.reading { db in try db.integrityCheck() } == "ok")
        await again.close()
    }

    /// On PostgreSQL, the thread that waits on LISTEN for other servers' commits ends with the
    /// store: `close()` returns once it has (it was told to stop and left to end by itself).
    @Test(.enabled(if: TestBackend.isPostgres, "the wake-up thread is PostgreSQL's"))
    func closingEndsTheWakeUpThread() async throws {
        let store = try DocumentStore(path: try TestBackend.freshPostgresStore())
        let registration = try store.addListener(Query(collection: try CollectionPath("things"))) { _ in }
        let pool = try #require(store.pool as? PostgresPool)
        #expect(await until { pool.wakeUpsRunning })
        registration.cancel()
        await store.close()
        #expect(!pool.wakeUpsRunning)
    }

    /// A store whose listeners' thread never started closes (a close that waited for that thread
    /// would wait for ever), and a store that was closed is released without stopping anything
    /// twice. What is asked is that `close()` returns, so it is awaited with a deadline far past
    /// any machine's load (a bound of 5 s failed once in CI: 5.4 s, on a machine where the store's
    /// creation and one write had taken 2.8 s). A time limit would not do: the test would wait
    /// for the close all the same.
    @Test func aStoreNeverUsedClosesAtOnce() async throws {
        let (store, dir) = try DocumentStore.temporary()
        _ = dir
        try await store.writing { db in try db.set(try DocumentPath("beacons/b1"), ["room": "lab"]) }
        let closed = Release()
        Task {
            await store.close()
            closed.value.store(true, ordering: .releasing)
        }
        #expect(await until(60) { closed.value.load(ordering: .acquiring) }, "close() has not returned")
        #expect(throws: StoreError.self) { try store.read { db in try db.get(try DocumentPath("beacons/b1")) } }
    }
}

/// Set on one thread, seen on another.
private final class Release: Sendable {
    let value = Atomic<Bool>(false)
}

import NIOPosix
import Synchronization

/// The store's own threads, on which its async face (`reading`, `writing`) runs the store's
/// blocking work: SQLite's locks, busy waits and fsyncs, libpq's round trips, a wait for a free
/// connection. None of it may run on Swift's cooperative pool, whose threads (one a core: two on
/// a kiosk or a small server) every task of the process shares: a few slow requests there stall
/// `/health`, every SSE stream and the replicator with them.
///
/// Reads have as many threads as the store has reader connections, so a read never waits for a
/// thread while a connection is free; writes have one, as the store has one writer, so a long
/// write transaction queues the writes behind it and nothing else. The threads are swift-nio's
/// `NIOThreadPool` (the ecosystem's pool for blocking work), started on the first use (most
/// stores a command opens never need them) and stopped with the store.
final class StoreThreads: Sendable {
    private struct Pools {
        var read: NIOThreadPool?
        var write: NIOThreadPool?
        /// Once closed, no pool is started again and no work is taken.
        var closed = false
    }

    private let pools = Mutex(Pools())
    private let readers: Int
    /// Work given to the reader and writer threads and not finished: what waits for the store.
    let unfinishedReads = Atomic<Int>(0)
    let unfinishedWrites = Atomic<Int>(0)

    init(readers: Int) {
        self.readers = max(1, readers)
    }

    /// The reader pool, started if it was not; `storeGone` once the store is closed.
    func read() throws -> NIOThreadPool {
        try pool(\.read, threads: readers)
    }

    /// The writer's pool (one thread), started if it was not; `storeGone` once the store is closed.
    func write() throws -> NIOThreadPool {
        try pool(\.write, threads: 1)
    }

    private func pool(_ which: WritableKeyPath<Pools, NIOThreadPool?>, threads: Int) throws -> NIOThreadPool {
        try pools.withLock { pools in
            guard !pools.closed else { throw StoreError(.storeGone, "the store is closed") }
            if let pool = pools[keyPath: which] { return pool }
            let pool = NIOThreadPool(numberOfThreads: threads)
            pool.start()
            pools[keyPath: which] = pool
            return pool
        }
    }

    /// `DocumentStore.close`: refuses new work, lets every write given before it run (the writer
    /// is one thread, so a marker queued behind them runs after them all), then stops both pools
    /// and waits for their threads to end. A read still queued then fails with `storeGone`.
    func close() async {
        let (write, started) = pools.withLock { pools -> (NIOThreadPool?, [NIOThreadPool]) in
            pools.closed = true
            return (pools.write, [pools.read, pools.write].compactMap { $0 })
        }
        if let write { _ = try? await write.run {} }
        for pool in started { try? await pool.shutdownGracefully() }
    }

    /// Stops the threads once the work given to them has run; never waits (a store may be
    /// released on one of its own threads). Called when a store that was not closed is
    /// released: nobody can give them more.
    func shutdown() {
        let started = pools.withLock { pools -> [NIOThreadPool] in
            defer { (pools.read, pools.write) = (nil, nil) }
            return [pools.read, pools.write].compactMap { $0 }
        }
        for pool in started { pool.shutdownGracefully { _ in } }
    }
}

extension NIOThreadPool {
    /// Runs `body` on one of the pool's threads and returns what it returns. Unlike NIO's
    /// `runIfActive`, a cancelled task's work still runs: cancellation is for waits, and a write
    /// the caller has handed over (a shutdown's last flush, a checkpoint) must not be dropped.
    fileprivate func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            submit { state in
                guard case .active = state else {
                    continuation.resume(throwing: StoreError(.storeGone, "the store was closed before its work ran"))
                    return
                }
                continuation.resume(with: Result(catching: body))
            }
        }
    }
}

extension DocumentStore {
    /// Runs `body` on one of the store's reader threads (`reading`).
    func onReaderThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        threads.unfinishedReads.add(1, ordering: .relaxed)
        defer { threads.unfinishedReads.subtract(1, ordering: .relaxed) }
        return try await threads.read().run(body)
    }

    /// Runs `body` on the store's writer thread (`writing`).
    func onWriterThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        threads.unfinishedWrites.add(1, ordering: .relaxed)
        defer { threads.unfinishedWrites.subtract(1, ordering: .relaxed) }
        return try await threads.write().run(body)
    }

    /// Gives back the memory the store keeps for later (SQLite's page caches; nothing on
    /// PostgreSQL), on the writer thread, after whatever was given to it before.
    public func releaseMemory() async {
        try? await onWriterThread { self.pool.releaseMemory() }
    }

    /// Reads and writes given to the store's threads (`reading`, `writing`) and not finished:
    /// queued, or running. A writer held by a long transaction shows here as writes waiting.
    public var unfinished: (reads: Int, writes: Int) {
        (threads.unfinishedReads.load(ordering: .relaxed), threads.unfinishedWrites.load(ordering: .relaxed))
    }
}

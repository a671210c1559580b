import Foundation
import Logging
import Synchronization

/// A lock held by this process for a role that must run once per store (the flagger, a
/// notifier): released when the process dies, however it dies.
package protocol HeldLock: AnyObject {
    /// Whether the lock is still this process's (on PostgreSQL: its connection is alive).
    func stillHeld() -> Bool
    func release()
}

extension DocumentStore {
    /// Runs `body` while this process is the only one doing `role` on this store, and waits
    /// while another process is.
    ///
    /// On SQLite the lock is an `flock` on a file beside the store; on PostgreSQL, a session
    /// advisory lock on a connection of its own. Either is released by the operating system or
    /// the database when its holder dies, SIGKILL included, and a waiting instance tries again
    /// every `poll`: it takes over within `poll` of the holder's death. A holder that loses its
    /// lock (its database connection broke: the database restarted, or the network went) has
    /// `body` cancelled and waits again, so two instances never run `body` for long together.
    /// `body` must be safe to start again from the beginning: it is, each time the lock is taken.
    ///
    /// The lock is taken and checked on a thread of its own (a check can block for seconds on a
    /// lost network), never on the cooperative pool.
    public func whileSoleInstance(
        of role: String,
        poll: Duration = .seconds(1),
        logger: Logger,
        _ body: @escaping @Sendable () async throws -> Void
    ) async throws {
        let thread = LockThread(pool: pool, role: role, poll: poll)
        let running = Mutex<Task<Void, any Error>?>(nil)
        try await withTaskCancellationHandler {
            var waited = false
            for await event in thread.events {
                switch event {
                case .waiting(let reason):
                    logger.notice(
                        "another instance is running; waiting to take over",
                        metadata: ["role": "\(role)", "reason": "\(reason)"]
                    )
                    waited = true
                case .holding:
                    if waited { logger.notice("took over", metadata: ["role": "\(role)"]) }
                    let task = Task {
                        do {
                            try await body()
                        } catch {
                            if !Task.isCancelled { thread.stop() }
                            throw error
                        }
                        if !Task.isCancelled { thread.stop() }
                    }
                    running.withLock { $0 = task }
                    // Cancelled before the task was kept: `onCancel` found none to cancel.
                    if Task.isCancelled { task.cancel() }
                case .lost(let reason):
                    logger.warning(
                        "lost the lock: stopping until it is taken again",
                        metadata: ["role": "\(role)", "reason": "\(reason)"]
                    )
                    let task = running.withLock { t in
                        defer { t = nil }
                        return t
                    }
                    task?.cancel()
                    _ = await task?.result
                    waited = true
                }
            }
            // The thread stopped: `body` ended (its error is the result), or this was cancelled.
            if let task = running.withLock({ $0 }) { try await task.value }
            try Task.checkCancellation()
        } onCancel: {
            thread.stop()
            running.withLock { $0?.cancel() }
        }
    }
}

/// Tries the lock every `poll` until it holds it, then checks every `poll` that it still does.
/// Unchecked: `stopped` is guarded by `lock`, the rest is the thread's own.
private final class LockThread: @unchecked Sendable {
    enum Event: Sendable {
        case waiting(String)
        case holding
        case lost(String)
    }

    let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private let lock = NSCondition()
    private var stopped = false

    init(pool: any StorePool, role: String, poll: Duration) {
        (events, continuation) = AsyncStream.makeStream(of: Event.self)
        let seconds = Double(poll.components.seconds) + Double(poll.components.attoseconds) / 1e18
        let t = Thread { [self] in self.loop(pool: pool, role: role, seconds: seconds) }
        t.name = "tracer.store.lock"
        t.start()
    }

    func stop() {
        lock.lock()
        stopped = true
        lock.broadcast()
        lock.unlock()
    }

    /// Waits `seconds` unless stopped first; false once stopped.
    private func pause(_ seconds: Double) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if !stopped { _ = lock.wait(until: Date(timeIntervalSinceNow: seconds)) }
        return !stopped
    }

    private func loop(pool: any StorePool, role: String, seconds: Double) {
        var held: (any HeldLock)?
        var toldWaiting = false
        repeat {
            if let h = held {
                if !h.stillHeld() {
                    h.release()
                    held = nil
                    continuation.yield(.lost("the lock's connection to the store broke"))
                }
            } else {
                do {
                    if let h = try pool.tryLock(role) {
                        held = h
                        toldWaiting = false
                        continuation.yield(.holding)
                    } else if !toldWaiting {
                        toldWaiting = true
                        continuation.yield(.waiting("another process holds the lock"))
                    }
                } catch {
                    if !toldWaiting {
                        toldWaiting = true
                        continuation.yield(.waiting("\(error)"))
                    }
                }
            }
        } while pause(seconds)
        held?.release()
        continuation.finish()
    }
}

extension DocumentStore {
    /// A number a resuming process keeps in the store (a notifier's last delivered change), so
    /// that whichever instance takes over finds it. Kept beside the documents, not as one:
    /// nothing listens to it, exports it or replicates it.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func savedPosition(_ name: String) throws -> Int64? {
        try pool.read { db in
            let s = try db.statement("SELECT value FROM meta WHERE key = ?1")
            defer { s.reset() }
            s.bind(1, "position:" + name)
            return try s.step() ? s.int64(0) : nil
        }
    }

    /// Keeps `value` as the position named `name` (see `savedPosition`).
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func savePosition(_ name: String, _ value: Int64) throws {
        try pool.write { db in
            let s = try db.statement(
                "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
            )
            defer { s.reset() }
            s.bind(1, "position:" + name)
            s.bind(2, value)
            try s.run()
        }
    }
}

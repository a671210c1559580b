import Foundation

/// Watches the store for commits and feeds listeners, on one thread of its own.
///
/// Every write appends to the `changes` table, whose sequence number only grows, and commits in
/// the order of its numbers (writers are serialised). The observer keeps the last sequence
/// number it has handled and, when the pool's commit version says another connection (in this
/// process or another) has committed, reads the changes after it and the current state of the
/// documents they name, in one read transaction. Nothing is re-read on a timer: an idle poll
/// costs one pragma on SQLite, and on PostgreSQL a NOTIFY wakes it (a poll every 0.5 s is the
/// fallback).
/// Unchecked: its thread sleeps on a condition variable (NSCondition), which `Mutex` has not.
final class ChangeObserver: @unchecked Sendable {
    private let pool: any StorePool
    private let catalog: IndexCatalog
    private let pollInterval: Duration
    private let condition = NSCondition()
    private var listeners: [UInt64: Listener] = [:]
    /// Listeners by what they watch, so a round visits only the ones a change concerns.
    private var byDocument: [DocumentPath: Set<UInt64>] = [:]
    private var byCollectionID: [String: Set<UInt64>] = [:]
    private var pending: [UInt64] = []
    /// Listeners whose first snapshot has been delivered: only they are given later rounds' changes.
    /// (One registered while a round runs is in neither that round's newcomers nor this set: it
    /// waits for its start, in the next round, rather than being handed changes to results it
    /// does not have yet.)
    private var started: Set<UInt64> = []
    private var nextID: UInt64 = 1
    private var poked = false
    private var stopped = false
    private var thread: Thread?
    /// Set when the thread has left its loop; `close` waits for it.
    private var ended = false
    private var endWaiters: [CheckedContinuation<Void, Never>] = []
    /// The id of the listener whose callback is running, so `cancel` can wait for it.
    private var running: UInt64?

    init(pool: any StorePool, catalog: IndexCatalog, pollInterval: Duration) {
        self.pool = pool
        self.catalog = catalog
        self.pollInterval = pool.pollInterval(pollInterval)
    }

    /// How many listeners are registered.
    var listenerCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return listeners.count
    }

    func localCommit() {
        condition.lock()
        poked = true
        condition.signal()
        condition.unlock()
    }

    func add(_ listener: Listener) -> ListenerRegistration {
        condition.lock()
        let id = nextID
        nextID += 1
        listeners[id] = listener
        switch listener.scope {
        case .document(let path): byDocument[path, default: []].insert(id)
        case .collectionID(let c): byCollectionID[c, default: []].insert(id)
        }
        pending.append(id)
        if thread == nil, !stopped {
            pool.wakeUps { [weak self] in self?.localCommit() }
            let t = Thread { [self] in
                self.loop()
                self.threadEnded()
            }
            t.name = "tracer.store.listeners"
            thread = t
            t.start()
        }
        condition.signal()
        condition.unlock()
        return ListenerRegistration { [weak self] wait in self?.remove(id, wait: wait) }
    }

    private func remove(_ id: UInt64, wait: Bool) {
        condition.lock()
        forget(id)
        // A callback of this listener may be running on the observer thread: wait for it, unless
        // the cancel comes from inside that callback (or the caller must not wait).
        while wait && running == id && Thread.current !== thread { condition.wait() }
        condition.unlock()
    }

    /// Drops a listener from every table; the caller holds the lock.
    private func forget(_ id: UInt64) {
        started.remove(id)
        guard let listener = listeners.removeValue(forKey: id) else { return }
        switch listener.scope {
        case .document(let path):
            byDocument[path]?.remove(id)
            if byDocument[path]?.isEmpty == true { byDocument[path] = nil }
        case .collectionID(let c):
            byCollectionID[c]?.remove(id)
            if byCollectionID[c]?.isEmpty == true { byCollectionID[c] = nil }
        }
    }

    func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }

    /// Stops the thread and waits for it to end (at once when it never started).
    func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            condition.lock()
            stopped = true
            condition.signal()
            if thread == nil || ended {
                condition.unlock()
                continuation.resume()
                return
            }
            endWaiters.append(continuation)
            condition.unlock()
        }
    }

    private func threadEnded() {
        condition.lock()
        ended = true
        let waiters = endWaiters
        endWaiters = []
        condition.unlock()
        for waiter in waiters { waiter.resume() }
    }

    private func loop() {
        var db: (any StoreConnection)?
        var seen: Int64 = 0
        var dataVersion: Int64 = -1
        while true {
            condition.lock()
            while !stopped && !poked && pending.isEmpty {
                if !condition.wait(until: Date(timeIntervalSinceNow: pollInterval.seconds)) { break }
            }
            if stopped {
                condition.unlock()
                return
            }
            poked = false
            let newcomers = pending
            pending = []
            condition.unlock()

            do {
                if db == nil {
                    let c = try pool.observerConnection()
                    db = c
                    seen = try c.scalar("SELECT coalesce(max(seq), 0) FROM changes") ?? 0
                }
                let db = db!
                try pool.checkStillThere()
                let version = try pool.commitVersion(db)
                if version != dataVersion || !newcomers.isEmpty {
                    try db.beginRead()
                    defer { db.endRead() }
                    try deliver(db, after: seen, newcomers: newcomers, seen: &seen)
                    dataVersion = version  // only once handled: a failed round is tried again
                }
            } catch let e as StoreError where e.isBusy {
                // Another process holds a lock past the busy timeout: try again next round.
                condition.lock()
                pending.insert(contentsOf: newcomers, at: 0)
                condition.unlock()
            } catch {
                fail(with: error)
            }
        }
    }

    /// Reads the changes after `seen`, hands them to every listener, and starts newcomers.
    private func deliver(_ db: any StoreConnection, after: Int64, newcomers: [UInt64], seen: inout Int64) throws {
        let batch = try ChangeBatch.read(db, after: after)
        seen = max(seen, batch.token)
        let context = ListenContext(db: db, catalog: catalog, token: seen)
        for id in newcomers {
            guard let listener = listener(id) else { continue }
            try run(id) { try listener.start(context) }
            condition.lock()
            if listeners[id] != nil { started.insert(id) }
            condition.unlock()
        }
        guard !batch.paths.isEmpty else { return }
        condition.lock()
        var concerned = Set<UInt64>()
        for path in batch.paths {
            if let ids = byDocument[path] { concerned.formUnion(ids) }
            if let ids = byCollectionID[path.collectionID] { concerned.formUnion(ids) }
        }
        concerned.subtract(newcomers)
        concerned.formIntersection(started)
        let current = concerned.sorted().compactMap { id in listeners[id].map { (id, $0) } }
        condition.unlock()
        for (id, listener) in current {
            try run(id) { try listener.apply(batch, context) }
        }
    }

    private func listener(_ id: UInt64) -> Listener? {
        condition.lock()
        defer { condition.unlock() }
        return listeners[id]
    }

    private func run(_ id: UInt64, _ body: () throws -> Void) throws {
        condition.lock()
        guard listeners[id] != nil else {
            condition.unlock()
            return
        }
        running = id
        condition.unlock()
        defer {
            condition.lock()
            running = nil
            condition.broadcast()
            condition.unlock()
        }
        do {
            try body()
        } catch let e as StoreError where e.code == .tokenExpired {
            listener(id)?.fail(e)
            condition.lock()
            forget(id)
            condition.unlock()
        }
    }

    private func fail(with error: any Error) {
        condition.lock()
        let all = listeners
        listeners = [:]
        byDocument = [:]
        byCollectionID = [:]
        condition.unlock()
        let e = error as? StoreError ?? StoreError(.sqlite, "\(error)")
        for (_, l) in all { l.fail(e) }
    }
}

/// The changes read in one round: which documents changed, and their state now.
struct ChangeBatch {
    /// Each changed document's first operation after the round's start.
    var firstOp: [DocumentPath: ChangeOp] = [:]
    var paths: [DocumentPath] = []
    var token: Int64 = 0

    static func read(_ db: any StoreConnection, after: Int64) throws -> ChangeBatch {
        var batch = ChangeBatch(token: after)
        let s = try db.statement(
            "SELECT c.seq, p.path, c.id, c.op FROM changes c JOIN parents p ON p.id = c.parent WHERE c.seq > ?1 ORDER BY c.seq"
        )
        s.bind(1, after)
        while try s.step() {
            let path = DocumentPath(parent: s.text(1), id: s.text(2))
            if batch.firstOp[path] == nil {
                batch.firstOp[path] = ChangeOp(rawValue: s.int64(3)) ?? .updated
                batch.paths.append(path)
            }
            batch.token = s.int64(0)
        }
        return batch
    }
}

/// What a listener may read while it handles a round.
struct ListenContext {
    let db: any StoreConnection
    let catalog: IndexCatalog
    let token: Int64
    private let cache = DocumentCache()

    init(db: any StoreConnection, catalog: IndexCatalog, token: Int64) {
        self.db = db
        self.catalog = catalog
        self.token = token
    }

    /// The document's state now, read once per round however many listeners ask.
    func current(_ path: DocumentPath) throws -> DocumentSnapshot {
        if let hit = cache.docs[path] { return hit }
        let snapshot = DocumentSnapshot(path: path, stored: try DocumentStore.load(path, db))
        cache.docs[path] = snapshot
        return snapshot
    }

    func run(_ query: Query) throws -> [DocumentSnapshot] {
        try QueryEngine(db: db, catalog: catalog).run(query)
    }

    /// Fails with `tokenExpired` when the change log no longer reaches back to `token`.
    func checkReachable(_ token: Int64) throws {
        let oldest = try db.scalar("SELECT min(seq) FROM changes") ?? (self.token + 1)
        if token < oldest - 1, token < self.token {
            throw StoreError(
                .tokenExpired,
                "the change log no longer reaches back to token \(token) (oldest kept: \(oldest))"
            )
        }
    }

    private final class DocumentCache {
        var docs: [DocumentPath: DocumentSnapshot] = [:]
    }
}

/// What a listener watches.
enum ListenScope {
    case document(DocumentPath)
    /// Queries: every collection with this id (the listener filters further).
    case collectionID(String)
}

/// A listener as the observer drives it.
protocol Listener: AnyObject {
    var scope: ListenScope { get }
    /// Delivers the first snapshot (current state, or changes since a token).
    func start(_ context: ListenContext) throws
    /// Delivers what a round of changes means for this listener, if anything.
    func apply(_ batch: ChangeBatch, _ context: ListenContext) throws
    /// Reports an error; the listener is stopped.
    func fail(_ error: StoreError)
}

extension Duration {
    var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}

/// A file's device and inode, to tell whether a path still names the file once opened.
struct FileIdentity: Equatable {
    var device: UInt64
    var inode: UInt64

    /// The identity of the file at `path`, or nil when there is none.
    init?(path: String) {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
    }
}

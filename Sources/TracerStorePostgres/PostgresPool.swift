import CTracerPQ
import Foundation
import Synchronization
import TracerStore

/// The store on PostgreSQL: one writer and a few readers, like `ConnectionPool` on SQLite.
///
/// **Writers, and why one at a time.** Change sequence numbers are what listeners and kiosks
/// resume from. Were they drawn by concurrent transactions, one with a lower number could commit
/// after a higher one had been read, and a listener resuming "after N" would skip it for good.
/// So each write transaction first takes a transaction-scoped advisory lock (one per schema), in
/// every process on the database: it draws its numbers after the previous writer committed and
/// releases the lock only once its own commit is visible. Numbers commit in order, with no gaps,
/// as on SQLite, and the change log can be read "after N" by anyone. (The other known answer,
/// reading only below the oldest running transaction's horizon, keeps writers concurrent but
/// makes every reader wait for the slowest writer and needs txid bookkeeping in each change row;
/// the store's writes are short batches, so the lock costs little: see BENCHMARKS.md.)
///
/// **Listeners in other processes.** Each commit that changed something sends a NOTIFY carrying
/// its last sequence number. It is only a wake-up: NOTIFY is not stored, so the change table is
/// what is read, and a listener that missed a notification finds the changes at its next poll.
///
/// **Reads** run in REPEATABLE READ, READ ONLY transactions: one consistent snapshot each.
/// Unchecked: the readers wait on a condition variable (NSCondition), which `Mutex` has not.
final class PostgresPool: StorePool, @unchecked Sendable {
    static let channel = "tracer_changes"

    let uri: String
    let target: String
    private let writer: PostgresConnection
    private let writerLock = NSLock()
    /// Set by `close`.
    private let closed = Atomic<Bool>(false)
    /// Idle readers; more are connected as concurrent reads need them, up to `maxReaders`.
    private var readers: [PostgresConnection] = []
    private var openReaders = 0
    private let maxReaders: Int
    private let readersCondition = NSCondition()
    private let synchronous: Bool
    /// The advisory lock every writer of this schema takes.
    private let lockKey: Int64
    /// The schema the store is in: what names its locks.
    private let schema: String
    private let wakeups = WakeUpThread()

    init(uri: String, readers count: Int, synchronous: Bool, log: (String) -> Void) throws {
        self.uri = uri
        self.target = DocumentStore.redacted(uri)
        self.synchronous = synchronous
        let writer = try Self.connect(uri, synchronous: synchronous)
        var schema = try writer.query("SELECT current_schema()").first?.first ?? nil
        if schema == nil, let wanted = try Self.firstSearchPathSchema(writer) {
            // A schema named in the URI's search_path that is not there yet is made, as a
            // SQLite store's file is (`?options=-csearch_path%3Dcampus`: one site per schema).
            // IF NOT EXISTS does not hold between two connections making it at once (the second
            // fails on the catalogue's unique index: two stores opened together on a new schema,
            // seen in CI): the failure is taken as made when the schema is there after it.
            do {
                try writer.execute(
                    "CREATE SCHEMA IF NOT EXISTS \"\(wanted.replacingOccurrences(of: "\"", with: "\"\""))\""
                )
            } catch {
                let made = try writer.query("SELECT current_schema()").first?.first ?? nil
                guard made != nil else { throw error }
            }
            schema = try writer.query("SELECT current_schema()").first?.first ?? nil
        }
        guard let schema else {
            throw StoreError(
                .postgres,
                "the connection has no schema to keep the store in (check search_path)",
                context: DocumentStore.redacted(uri)
            )
        }
        self.schema = schema
        lockKey = Self.key("tracer.write:" + schema)
        try PostgresSchema.setUp(writer, lockKey: lockKey, log: log)
        self.writer = writer
        self.maxReaders = max(1, count)
    }

    /// The first schema of the connection's search_path (`"$user"` aside).
    private static func firstSearchPathSchema(_ c: PostgresConnection) throws -> String? {
        let path = try c.query("SHOW search_path").first?.first ?? nil
        let first = path?.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .first { $0 != "\"$user\"" && !$0.isEmpty }
        return first.map { $0.hasPrefix("\"") && $0.hasSuffix("\"") ? String($0.dropFirst().dropLast()) : $0 }
    }

    private static func connect(_ uri: String, synchronous: Bool) throws -> PostgresConnection {
        let c = try PostgresConnection(uri)
        // Text compared as bytes whatever the database's collation (the columns say COLLATE "C"
        // too); `synchronous_commit = off` only when asked for (tests, bulk loads).
        try configure(c, synchronous: synchronous)
        return c
    }

    private static func configure(_ c: PostgresConnection, synchronous: Bool) throws {
        try c.execute(
            "SET synchronous_commit = \(synchronous ? "on" : "off"); SET client_min_messages = warning"
        )
    }

    /// A stable 64-bit key for an advisory lock (FNV-1a).
    static func key(_ text: String) -> Int64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in text.utf8 {
            h ^= UInt64(b)
            h = h &* 0x100_0000_01b3
        }
        return Int64(bitPattern: h)
    }

    /// Makes a broken connection whole again before it is used.
    private func ready(_ c: PostgresConnection) throws {
        if c.isBroken {
            try c.reconnect()
            try Self.configure(c, synchronous: synchronous)
        }
    }

    /// Starts a transaction on `c`. A connection idle through a server restart learns that it
    /// is dead only when used: its first statement fails, nothing of the transaction has run,
    /// so it is connected again and the start tried once more.
    private func begin(_ c: PostgresConnection, _ start: (PostgresConnection) throws -> Void) throws {
        try ready(c)
        do {
            try start(c)
        } catch  where c.isBroken {
            try ready(c)
            try start(c)
        }
    }

    func write<T>(_ body: (any StoreConnection) throws -> T) throws -> T {
        writerLock.lock()
        defer { writerLock.unlock() }
        try checkOpen()
        try begin(writer) { try $0.execute("BEGIN; SELECT pg_advisory_xact_lock(\(lockKey))") }
        do {
            let result = try body(writer)
            // A wake-up for listeners elsewhere, sent at commit (not at all if it rolls back).
            try writer.execute(
                "SELECT pg_notify('\(Self.channel)', (SELECT coalesce(max(seq), 0) FROM changes)::text)"
            )
            try writer.execute("COMMIT")
            writer.transactionEnded(committed: true)
            return result
        } catch {
            _ = try? writer.flush()  // statements still in the pipeline: their answers read first
            if !writer.isBroken { try? writer.execute("ROLLBACK") }
            writer.transactionEnded(committed: false)
            throw error
        }
    }

    func read<T>(_ body: (any StoreConnection) throws -> T) throws -> T {
        try withReader { reader in
            try begin(reader) { try $0.beginRead() }
            defer { reader.endRead() }
            return try body(reader)
        }
    }

    /// A reader connection for `body`, back in the pool when it returns: an idle one, or a new
    /// one while fewer than the readers allowed are open.
    private func withReader<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try checkOpen()
        readersCondition.lock()
        while readers.isEmpty && openReaders >= maxReaders { readersCondition.wait() }
        let reader: PostgresConnection
        if let idle = readers.popLast() {
            reader = idle
            readersCondition.unlock()
        } else {
            openReaders += 1
            readersCondition.unlock()
            do {
                reader = try Self.connect(uri, synchronous: synchronous)
            } catch {
                readersCondition.lock()
                openReaders -= 1
                readersCondition.signal()
                readersCondition.unlock()
                throw error
            }
        }
        defer {
            readersCondition.lock()
            readers.append(reader)
            readersCondition.signal()
            readersCondition.unlock()
        }
        return try body(reader)
    }

    /// One statement in autocommit: no BEGIN and no COMMIT, a third of the statements of a
    /// transaction's read (a document by its path, the store's token). A connection found dead
    /// is connected again and the read run once more (a read changes nothing).
    func readOne<T>(_ body: (any StoreConnection) throws -> T) throws -> T {
        try withReader { reader in
            try ready(reader)
            do { return try body(reader) } catch  where reader.isBroken {
                try ready(reader)
                return try body(reader)
            }
        }
    }

    func observerConnection() throws -> any StoreConnection {
        try Self.connect(uri, synchronous: synchronous)
    }

    func commitVersion(_ db: any StoreConnection) throws -> Int64 {
        let sql = "SELECT coalesce(max(seq), 0) FROM changes"
        guard let c = db as? PostgresConnection else { return try db.scalar(sql) ?? 0 }
        var version: Int64 = 0
        try begin(c) { version = try $0.scalar(sql) ?? 0 }
        return version
    }

    func checkStillThere() throws {}

    /// The store's own invariants (PostgreSQL checks its pages itself): every index entry and
    /// every change names a collection that exists, and every entry a document that exists.
    func integrityCheck() throws -> String {
        try read { db in
            var problems: [String] = []
            let checks = [
                (
                    "SELECT count(*) FROM index_entries e LEFT JOIN documents d ON d.parent = e.parent AND d.id = e.doc WHERE d.id IS NULL",
                    "index entries without their document"
                ),
                (
                    "SELECT count(*) FROM documents d LEFT JOIN parents p ON p.id = d.parent WHERE p.id IS NULL",
                    "documents without their collection"
                ),
                (
                    "SELECT count(*) FROM changes c LEFT JOIN parents p ON p.id = c.parent WHERE p.id IS NULL",
                    "changes without their collection"
                ),
            ]
            for (sql, what) in checks {
                let n = try db.scalar(sql) ?? 0
                if n > 0 { problems.append("\(n) \(what)") }
            }
            return problems.isEmpty ? "ok" : problems.joined(separator: "\n")
        }
    }

    /// Starts waking `poke` at each commit anyone makes (LISTEN on a connection of its own).
    func wakeUps(_ poke: @escaping @Sendable () -> Void) {
        wakeups.start(uri: uri, poke: poke)
    }

    /// NOTIFY wakes the observer; its poll is only the fallback for a wake-up lost while the
    /// LISTEN connection was away.
    func pollInterval(_ configured: Duration) -> Duration { max(configured, .milliseconds(500)) }

    /// A session advisory lock on a connection of its own: the database releases it when that
    /// session ends. A holder that dies with its machine, or is cut off, leaves a session the
    /// server drops only when TCP says the peer is gone; keepalives (each side) and a user
    /// timeout bound that to a few seconds on TCP connections (a Unix socket's peer is local, and
    /// its death is seen at once).
    func tryLock(_ name: String) throws -> (any HeldLock)? {
        let keepalive = "keepalives=1&keepalives_idle=1&keepalives_interval=1&keepalives_count=2&tcp_user_timeout=3000"
        let c = try PostgresConnection(uri + (uri.contains("?") ? "&" : "?") + keepalive)
        try c.execute(
            "SET tcp_keepalives_idle = 1; SET tcp_keepalives_interval = 1; SET tcp_keepalives_count = 2; SET tcp_user_timeout = 3000"
        )
        let key = Self.key("tracer.role:\(schema):\(name)")
        guard try c.query("SELECT pg_try_advisory_lock(\(key))").first?.first == "t" else { return nil }
        return AdvisoryLock(connection: c)
    }

    func close() {
        closed.store(true, ordering: .releasing)
        wakeups.stop()
    }

    /// Whether the wake-up thread runs (started by the first listener, ended by `finish`).
    var wakeUpsRunning: Bool { wakeups.isRunning }

    /// Closes the pool and waits for the wake-up thread to end (within a poll, 250 ms).
    func finish() async {
        close()
        await wakeups.ended()
    }

    /// Every read and write after `close` fails with `storeGone`.
    private func checkOpen() throws {
        if closed.load(ordering: .acquiring) {
            throw StoreError(.storeGone, "the store is closed", context: DocumentStore.redacted(uri))
        }
    }
}

/// A held session advisory lock: this process's for as long as its connection answers.
/// Unchecked: used by one thread (`whileSoleInstance`'s).
private final class AdvisoryLock: HeldLock, @unchecked Sendable {
    private var connection: PostgresConnection?

    init(connection: PostgresConnection) { self.connection = connection }

    func stillHeld() -> Bool {
        guard let c = connection, !c.isBroken else { return false }
        return (try? c.execute("SELECT 1")) != nil && !c.isBroken
    }

    func release() { connection = nil }  // closing the session releases the lock
}

/// A thread blocked on a LISTEN connection's socket, calling `poke` at each notification.
/// Unchecked: its state is guarded by `lock`.
private final class WakeUpThread: @unchecked Sendable {
    private let lock = NSLock()
    private var started = false
    private var stopped = false
    private var finished = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func start(uri: String, poke: @escaping @Sendable () -> Void) {
        lock.lock()
        defer { lock.unlock() }
        guard !started else { return }
        started = true
        let t = Thread { [self] in
            self.loop(uri: uri, poke: poke)
            self.lock.lock()
            self.finished = true
            let waiting = self.waiting
            self.waiting = []
            self.lock.unlock()
            for w in waiting { w.resume() }
        }
        t.name = "tracer.store.notify"
        t.start()
    }

    func stop() {
        lock.lock()
        stopped = true
        lock.unlock()
    }

    var isRunning: Bool {
        lock.lock()
        defer { lock.unlock() }
        return started && !finished
    }

    /// Returns once the thread has ended (at once when it never started).
    func ended() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            lock.lock()
            guard started, !finished else {
                lock.unlock()
                c.resume()
                return
            }
            waiting.append(c)
            lock.unlock()
        }
    }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }

    private func loop(uri: String, poke: @Sendable () -> Void) {
        while !isStopped {
            guard let c = try? PostgresConnection(uri), (try? c.execute("LISTEN \(PostgresPool.channel)")) != nil else {
                // The server is away: the observer's own poll notices when it is back. A second,
                // in steps that a stop ends.
                for _ in 0..<4 where !isStopped { Thread.sleep(forTimeInterval: 0.25) }
                continue
            }
            poke()  // whatever was committed while this connection was away
            while !isStopped, !c.isBroken {
                var fds = pollfd(fd: PQsocket(c.handle), events: Int16(POLLIN), revents: 0)
                let ready = poll(&fds, 1, 250)
                if ready < 0 { break }
                if ready == 0 { continue }
                if PQconsumeInput(c.handle) == 0 { break }
                var notified = false
                while let n = PQnotifies(c.handle) {
                    PQfreemem(n)
                    notified = true
                }
                if notified { poke() }
            }
        }
    }
}

/// The store's tables on PostgreSQL: the same layout as SQLite's (`Schema`), in its types.
/// Text that is compared or ordered is `COLLATE "C"` (byte order, as SQLite compares), and
/// index keys are `bytea`, which compares bytewise: the same keys order the same.
enum PostgresSchema {
    static let create = """
        CREATE TABLE IF NOT EXISTS parents (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            path TEXT COLLATE "C" NOT NULL UNIQUE,
            collection TEXT COLLATE "C" NOT NULL
        );
        CREATE INDEX IF NOT EXISTS parents_by_collection ON parents (collection);
        CREATE TABLE IF NOT EXISTS documents (
            parent BIGINT NOT NULL,
            id TEXT COLLATE "C" NOT NULL,
            data BYTEA NOT NULL,
            created BIGINT NOT NULL,
            updated BIGINT NOT NULL,
            PRIMARY KEY (parent, id)
        );
        CREATE TABLE IF NOT EXISTS changes (
            seq BIGINT PRIMARY KEY,
            parent BIGINT NOT NULL,
            id TEXT COLLATE "C" NOT NULL,
            op BIGINT NOT NULL,
            ts BIGINT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS indexes (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            collection TEXT COLLATE "C" NOT NULL,
            scope BIGINT NOT NULL,
            fields TEXT COLLATE "C" NOT NULL,
            UNIQUE (collection, scope, fields)
        );
        CREATE TABLE IF NOT EXISTS index_entries (
            idx BIGINT NOT NULL,
            key BYTEA NOT NULL,
            parent BIGINT NOT NULL,
            doc TEXT COLLATE "C" NOT NULL,
            PRIMARY KEY (idx, key)
        );
        CREATE TABLE IF NOT EXISTS meta (key TEXT COLLATE "C" PRIMARY KEY, value BIGINT NOT NULL);
        INSERT INTO meta VALUES ('catalog', 0) ON CONFLICT DO NOTHING;
        """

    static func setUp(_ db: PostgresConnection, lockKey: Int64, log: (String) -> Void) throws {
        try db.execute("BEGIN; SELECT pg_advisory_xact_lock(\(lockKey))")
        do {
            let exists = try db.query("SELECT to_regclass('meta') IS NOT NULL").first?.first ?? nil
            var current: Int64 = 0
            if exists == "t" {
                let row = try db.query("SELECT value FROM meta WHERE key = 'schema'").first
                current = row?.first.flatMap { $0.flatMap { Int64($0) } } ?? 0
            }
            if current > Schema.version {
                throw StoreError(
                    .postgres,
                    "the store was written by a newer tracer (schema \(current), this one knows \(Schema.version))",
                    context: db.target
                )
            }
            if current < Schema.version {
                try db.execute(create)
                try db.execute(
                    "INSERT INTO meta VALUES ('schema', \(Schema.version)) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
                )
                log("created the store's tables in PostgreSQL (\(db.target))")
            }
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
    }
}

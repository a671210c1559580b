import CTracerSQLite
import Foundation
import Synchronization

/// One writer and a few readers on one database file in WAL mode.
///
/// Writes are serialised through the writer and run in `BEGIN IMMEDIATE` transactions, so a
/// transaction holds SQLite's write lock from its first read: it cannot conflict, only wait. A
/// writer in another process makes it wait (`busy_timeout`), and a wait that times out is retried.
/// Each read runs in its own transaction on a reader, so it sees one consistent snapshot.
/// Unchecked: the readers wait on a condition variable (NSCondition), which `Mutex` has not.
final class ConnectionPool: StorePool, @unchecked Sendable {
    enum Durability: Sendable {
        /// fsync at every commit: an acknowledged write survives power loss.
        case full
        /// fsync at checkpoints: survives a process crash, may lose the last commits on power loss.
        case normal
    }

    private let writer: SQLiteConnection
    private let writerLock = NSLock()
    private var readers: [SQLiteConnection]
    private let readersCondition = NSCondition()
    /// Set by `close`: every read and write after it fails with `storeGone`.
    private let closed = Atomic<Bool>(false)
    let path: String

    init(
        path: String,
        readers count: Int,
        durability: Durability,
        writerCacheKiB: Int = 65536,
        setUp: (SQLiteConnection) throws -> Void
    ) throws {
        self.path = path
        let writer = try SQLiteConnection(path: path)
        try writer.execute("PRAGMA busy_timeout = 5000")
        let mode = try writer.statement("PRAGMA journal_mode = WAL")
        _ = try mode.step()
        guard mode.text(0).lowercased() == "wal" else {
            throw StoreError(
                .sqlite,
                "the store cannot use write-ahead logging (journal mode \(mode.text(0)))",
                context: path
            )
        }
        mode.reset()
        try writer.execute(
            """
            PRAGMA synchronous = \(durability == .full ? "FULL" : "NORMAL");
            PRAGMA cache_size = -\(writerCacheKiB);
            PRAGMA foreign_keys = OFF;
            """
        )
        try setUp(writer)
        self.writer = writer
        var readers: [SQLiteConnection] = []
        for _ in 0..<max(1, count) {
            let r = try SQLiteConnection(path: path)
            try r.execute(
                "PRAGMA busy_timeout = 5000; PRAGMA cache_size = -16384; PRAGMA mmap_size = 17179869184; PRAGMA query_only = 1"
            )
            readers.append(r)
        }
        self.readers = readers
    }

    /// Runs `body` in a write transaction; commits if it returns, rolls back if it throws.
    func write<T>(_ body: (any StoreConnection) throws -> T) throws -> T {
        writerLock.lock()
        defer { writerLock.unlock() }
        try checkOpen()
        var attempt = 0
        while true {
            attempt += 1
            do {
                try writer.execute("BEGIN IMMEDIATE")
            } catch let e as StoreError where e.isBusy && attempt < 5 {
                continue
            } catch let e as StoreError where e.isBusy {
                throw StoreError(.aborted, "the store stayed locked by another process", context: path)
            }
            do {
                let result = try body(writer)
                writer.resetActiveStatements()
                try writer.execute("COMMIT")
                writer.transactionEnded(committed: true)
                return result
            } catch {
                writer.resetActiveStatements()
                if writer.isInTransaction { try? writer.execute("ROLLBACK") }
                writer.transactionEnded(committed: false)
                throw error
            }
        }
    }

    /// Runs `body` on a reader inside one read transaction (one consistent snapshot).
    func read<T>(_ body: (any StoreConnection) throws -> T) throws -> T {
        try checkOpen()
        readersCondition.lock()
        while readers.isEmpty { readersCondition.wait() }
        let reader = readers.removeLast()
        readersCondition.unlock()
        defer {
            readersCondition.lock()
            readers.append(reader)
            readersCondition.signal()
            readersCondition.unlock()
        }
        try reader.beginRead()
        defer { reader.endRead() }
        return try body(reader)
    }

    /// Frees the writer's page cache (64 MiB, full after a large batch) and every idle reader's
    /// (16 MiB each): SQLite keeps a connection's cache until the connection closes, whatever
    /// the heap does, and a server that took one 30 MiB batch kept 0.25-0.72 of what it took.
    /// The pages come back from the operating system's file cache as they are read again.
    /// Readers in use keep theirs.
    func releaseMemory() {
        writerLock.lock()
        _ = sqlite3_db_release_memory(writer.handle)
        writerLock.unlock()
        readersCondition.lock()
        for reader in readers { _ = sqlite3_db_release_memory(reader.handle) }
        readersCondition.unlock()
    }

    /// SQLite's read transaction costs no round trip: the same as `read`.
    func readOne<T>(_ body: (any StoreConnection) throws -> T) throws -> T {
        try read(body)
    }

    func observerConnection() throws -> any StoreConnection {
        let c = try SQLiteConnection(path: path)
        try c.execute("PRAGMA busy_timeout = 5000; PRAGMA query_only = 1")
        identity = FileIdentity(path: path)
        return c
    }

    /// SQLite's count of commits by other connections: an idle poll costs one pragma.
    func commitVersion(_ db: any StoreConnection) throws -> Int64 {
        try db.scalar("PRAGMA data_version") ?? 0
    }

    private var identity: FileIdentity?
    private var nextIdentityCheck = ContinuousClock.now

    /// A store deleted (or replaced) under an open connection goes on answering from its old
    /// inode and never changes again: a listener would wait forever. Once a second, the path
    /// must still name the file that was opened. (Called on the observer's thread only.)
    func checkStillThere() throws {
        guard ContinuousClock.now >= nextIdentityCheck else { return }
        nextIdentityCheck = ContinuousClock.now + .seconds(1)
        if let opened = identity, FileIdentity(path: path) != opened {
            throw StoreError(.storeGone, "the store file was deleted or replaced", context: path)
        }
    }

    func integrityCheck() throws -> String {
        try read { db in
            let s = try db.statement("PRAGMA integrity_check")
            var lines: [String] = []
            while try s.step() { lines.append(s.text(0)) }
            return lines.joined(separator: "\n")
        }
    }

    func wakeUps(_ poke: @escaping @Sendable () -> Void) {}
    func pollInterval(_ configured: Duration) -> Duration { configured }
    /// An `flock` on a file beside the store (`STORE.NAME.lock`): the kernel drops it when the
    /// process dies.
    func tryLock(_ name: String) throws -> (any HeldLock)? {
        let file = path + "." + name.map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "-" } + ".lock"
        let fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw StoreError(.sqlite, "cannot open the lock file: \(String(cString: strerror(errno)))", context: file)
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let e = errno
            Glibc.close(fd)
            if e == EWOULDBLOCK { return nil }
            throw StoreError(.sqlite, "cannot lock: \(String(cString: strerror(e)))", context: file)
        }
        return FileLock(fd: fd)
    }

    func close() {
        closed.store(true, ordering: .releasing)
    }

    private func checkOpen() throws {
        if closed.load(ordering: .acquiring) { throw StoreError(.storeGone, "the store is closed", context: path) }
    }
}

extension StoreError {
    var isBusy: Bool {
        guard let c = sqliteCode else { return false }
        return c & 0xFF == SQLITE_BUSY || c & 0xFF == SQLITE_LOCKED
    }
}

/// A held `flock`: it is this process's until the descriptor is closed.
private final class FileLock: HeldLock {
    private var fd: Int32

    init(fd: Int32) { self.fd = fd }

    func stillHeld() -> Bool { fd >= 0 }

    func release() {
        if fd >= 0 { close(fd) }
        fd = -1
    }

    deinit { release() }
}

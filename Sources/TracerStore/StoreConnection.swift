import Foundation

/// One connection to the store's database, SQLite or PostgreSQL: what the engine (the writer, the
/// query engine, the change log, listeners) needs of it. Statements are written once, in the SQL
/// both understand (`?N` parameters, `ON CONFLICT`, `RETURNING`); each backend maps the rest.
/// Not thread-safe: a pool hands a connection to one caller at a time.
package protocol StoreConnection: AnyObject {
    /// Runs SQL that returns no rows.
    func execute(_ sql: String) throws
    /// A prepared statement for fixed SQL text, reset and kept for reuse.
    func statement(_ sql: String) throws -> any StoreStatement
    /// A frequent statement, found by number; `sql` is the same every time for the same `key`.
    func statement(_ key: FrequentStatement, _ sql: @autoclosure () -> String) throws -> any StoreStatement
    /// Rows the last statement changed.
    var changes: Int { get }
    /// Whether a statement's rows come one by one as they are stepped (SQLite), rather than all
    /// at once when it runs (PostgreSQL): a scan that may stop early reads in pages when not.
    var streamsRows: Bool { get }
    /// Interned collection paths, cached for the connection's life.
    var parents: ParentCache { get }
    /// What the database would do to run `sql` (the query engine's explanation).
    func plan(_ sql: String) throws -> [String]
    /// Starts a read transaction: what follows sees one consistent snapshot.
    func beginRead() throws
    /// Ends it (whatever is still open of its statements is let go).
    func endRead()
    /// Whether `send` sends ahead of answers (PostgreSQL), rather than running at once (SQLite).
    var pipelines: Bool { get }
    /// Runs a statement that returns no rows, in a write transaction. Where the database takes
    /// statements ahead of their answers (PostgreSQL's pipeline), it is sent now and its answer
    /// read at the next `flush()` or the next statement waited on, when `changed` gets the number
    /// of rows it changed and a failure is thrown; elsewhere (SQLite, in-process) it runs at once.
    func send(_ statement: any StoreStatement, changed: ((Int) -> Void)?) throws
    /// Waits for every statement sent: throws the first one's failure.
    func flush() throws
}

/// A prepared statement: bind `?N` parameters, step through rows, read columns.
package protocol StoreStatement: AnyObject {
    func reset()
    func bind(_ index: Int32, _ value: Int64)
    func bind(_ index: Int32, _ value: String)
    func bindBlob(_ index: Int32, _ bytes: [UInt8])
    /// Advances: true when a row is ready, false when done.
    func step() throws -> Bool
    func int64(_ column: Int32) -> Int64
    func isNull(_ column: Int32) -> Bool
    func text(_ column: Int32) -> String
    /// The column's bytes, valid until the next step or reset: for parsing without a copy.
    /// (Not a generic `withBytes` requirement: called through the existential, a generic
    /// witness is not specialised; a window query ran about 6% slower with one.)
    func bytes(_ column: Int32) -> UnsafeBufferPointer<UInt8>
}

extension StoreStatement {
    package func bind(_ index: Int32, _ value: Int) { bind(index, Int64(value)) }

    /// Runs a statement that returns no rows.
    package func run() throws {
        while try step() {}
    }

    package func blob(_ column: Int32) -> [UInt8] { Array(bytes(column)) }

    /// The column's bytes, valid inside `body`: for parsing without a copy.
    @inline(__always)
    package func withBytes<T>(_ column: Int32, _ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T {
        try body(bytes(column))
    }
}

/// Statements run on every read, found by a number rather than by hashing their text (a query's
/// statement is a few hundred characters; a window query runs four of these).
package enum FrequentStatement: Int, CaseIterable {
    case begin, commit, catalogVersion, loadDocument
    case collectionIndexScan, collectionIndexScanReversed, groupIndexScan, groupIndexScanReversed
    case collectionScan, groupScan
}

/// A connection's interned collection paths (Schema's `parents`).
///
/// A parent's id never changes and is never deleted, so a cached id stays right for the
/// connection's life; only the ids a rolled-back transaction made are forgotten.
package final class ParentCache {
    package var ids: [String: Int64] = [:]
    package var new: [String] = []

    package init() {}
}

extension StoreConnection {
    /// The first column of the first row of a query, as an integer.
    package func scalar(_ sql: String) throws -> Int64? {
        let s = try statement(sql)
        defer { s.reset() }  // an unfinished statement would hold its read snapshot open
        return try s.step() ? (s.isNull(0) ? nil : s.int64(0)) : nil
    }

    /// The id of an interned collection path; nil when no document was ever written under it.
    package func parentID(_ path: String) throws -> Int64? {
        if let id = parents.ids[path] { return id }
        let s = try statement("SELECT id FROM parents WHERE path = ?1")
        s.bind(1, path)
        defer { s.reset() }
        guard try s.step() else { return nil }
        let id = s.int64(0)
        parents.ids[path] = id
        return id
    }

    /// The id of a collection path, interned now if it is new (inside a write transaction).
    package func internParent(_ path: String, collection: String) throws -> Int64 {
        if let id = try parentID(path) { return id }
        let s = try statement("INSERT INTO parents (path, collection) VALUES (?1, ?2) RETURNING id")
        s.bind(1, path)
        s.bind(2, collection)
        defer { s.reset() }
        guard try s.step() else { throw StoreError(.invalidPath, "the collection was not interned", context: path) }
        let id = s.int64(0)
        parents.ids[path] = id
        parents.new.append(path)
        return id
    }

    /// Ends the interning of a transaction: kept if it committed, forgotten if not.
    package func transactionEnded(committed: Bool) {
        if !committed { for p in parents.new { parents.ids[p] = nil } }
        parents.new.removeAll()
    }
}

/// Connections handed out for reads and writes: one writer at a time, several readers.
package protocol StorePool: AnyObject, Sendable {
    /// Runs `body` in a write transaction; commits if it returns, rolls back if it throws.
    /// Writers are serialised, so change sequence numbers commit in order.
    func write<T>(_ body: (any StoreConnection) throws -> T) throws -> T
    /// Runs `body` in a read transaction: one consistent snapshot.
    func read<T>(_ body: (any StoreConnection) throws -> T) throws -> T
    /// Runs `body`, whose one statement reads what it needs (a statement is its own snapshot),
    /// outside a transaction where that saves the BEGIN and COMMIT (PostgreSQL), or as `read`.
    /// Interned parents never change, so a lookup of one before it does not count.
    func readOne<T>(_ body: (any StoreConnection) throws -> T) throws -> T
    /// A connection of its own for the change observer, outside the pool.
    func observerConnection() throws -> any StoreConnection
    /// A value that changes when anyone commits (read on the observer's connection).
    func commitVersion(_ db: any StoreConnection) throws -> Int64
    /// Whether the store is still the one opened (a file deleted or replaced is not).
    func checkStillThere() throws
    /// The store's check of itself: "ok", or what is wrong.
    func integrityCheck() throws -> String
    /// Starts calling `poke` when another process commits, where the database can say so
    /// (PostgreSQL's NOTIFY); SQLite has no such signal and is polled.
    func wakeUps(_ poke: @escaping @Sendable () -> Void)
    /// How often the observer polls, given the configured interval.
    func pollInterval(_ configured: Duration) -> Duration
    /// The lock named `name` for this store, if no other process holds it (see
    /// `DocumentStore.whileSoleInstance`).
    func tryLock(_ name: String) throws -> (any HeldLock)?
    /// Gives back the memory the connections keep for later (SQLite's page caches), where
    /// there is any: a server after a kiosk's very large batch.
    func releaseMemory()
    /// Stops what the pool runs in the background.
    func close()
    /// Closes the pool and waits for the threads it started to end (`DocumentStore.close()`).
    func finish() async
}

extension StorePool {
    package func finish() async { close() }
    package func releaseMemory() {}
}

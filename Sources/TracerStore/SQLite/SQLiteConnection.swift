import CTracerSQLite
import Foundation

/// One SQLite connection. Not thread-safe: the pool hands it to one caller at a time.
final class SQLiteConnection: StoreConnection {
    let handle: OpaquePointer
    let path: String
    private var cache: [String: SQLiteStatement] = [:]

    init(path: String, readOnly: Bool = false) throws {
        var db: OpaquePointer?
        let flags =
            (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let db { sqlite3_close_v2(db) }
            throw StoreError(.sqlite, "cannot open the store: \(message)", context: path, sqliteCode: rc)
        }
        self.handle = db
        self.path = path
        sqlite3_extended_result_codes(db, 1)
    }

    deinit {
        frequent.removeAll()
        cache.removeAll()  // statements finalize before the connection closes
        sqlite3_close_v2(handle)
    }

    /// Runs SQL that returns no rows (schema, pragmas, transaction control).
    func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &message)
        if rc != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_free(message)
            throw StoreError(.sqlite, text, context: sql, sqliteCode: rc)
        }
    }

    /// A prepared statement for fixed SQL text, reset and kept for reuse.
    func prepared(_ sql: String) throws -> SQLiteStatement {
        if let cached = cache[sql] {
            cached.reset()
            return cached
        }
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw error(rc, sql) }
        let statement = SQLiteStatement(handle: stmt, sql: sql, connection: self)
        cache[sql] = statement
        return statement
    }

    private var frequent: [SQLiteStatement?] = Array(repeating: nil, count: FrequentStatement.allCases.count)

    func statement(_ sql: String) throws -> any StoreStatement { try prepared(sql) }

    /// A frequent statement, reset; `sql` is its text, the same every time for the same `key`.
    func statement(_ key: FrequentStatement, _ sql: @autoclosure () -> String) throws -> any StoreStatement {
        if let s = frequent[key.rawValue] {
            s.reset()
            return s
        }
        let s = try prepared(sql())
        frequent[key.rawValue] = s
        return s
    }

    /// Resets every statement still active: one left mid-way (or even at SQLITE_DONE) can keep
    /// the connection's read snapshot open past COMMIT, so that later reads see stale data.
    func resetActiveStatements() {
        var stmt = sqlite3_next_stmt(handle, nil)
        while let s = stmt {
            if sqlite3_stmt_busy(s) != 0 { sqlite3_reset(s) }
            stmt = sqlite3_next_stmt(handle, s)
        }
    }

    let parents = ParentCache()
    var streamsRows: Bool { true }

    func plan(_ sql: String) throws -> [String] {
        let s = try prepared("EXPLAIN QUERY PLAN " + sql)
        defer { s.reset() }
        var details: [String] = []
        while try s.step() { details.append(s.text(3)) }
        return details
    }

    func beginRead() throws {
        // Prepared once, not parsed on every read (sqlite3_exec would parse them each time).
        try statement(.begin, "BEGIN").run()
    }

    func endRead() {
        resetActiveStatements()
        try? statement(.commit, "COMMIT").run()
    }

    var changes: Int { Int(sqlite3_changes(handle)) }

    var pipelines: Bool { false }

    /// In-process: a statement costs no round trip, so it runs at once.
    func send(_ statement: any StoreStatement, changed: ((Int) -> Void)?) throws {
        try statement.run()
        changed?(changes)
    }

    func flush() throws {}
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    func error(_ rc: Int32, _ sql: String) -> StoreError {
        StoreError(.sqlite, String(cString: sqlite3_errmsg(handle)), context: sql, sqliteCode: rc)
    }
}

/// A prepared statement owned by its connection's cache.
final class SQLiteStatement: StoreStatement {
    let handle: OpaquePointer
    let sql: String
    unowned let connection: SQLiteConnection

    init(handle: OpaquePointer, sql: String, connection: SQLiteConnection) {
        self.handle = handle
        self.sql = sql
        self.connection = connection
    }

    deinit { sqlite3_finalize(handle) }

    /// The first bind that SQLite refused since the last reset (a value too large, an index out
    /// of range, no memory): `step` throws it, with SQLite's code, instead of running the
    /// statement with that parameter unbound (NULL).
    private var bindFailure: Int32?

    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        bindFailure = nil
    }

    /// Keeps a bind's result code: the first failure is thrown by `step`.
    private func bound(_ rc: Int32) {
        if rc != SQLITE_OK, bindFailure == nil { bindFailure = rc }
    }

    func bind(_ index: Int32, _ value: Int64) { bound(sqlite3_bind_int64(handle, index, value)) }
    func bind(_ index: Int32, _ value: Int) { bound(sqlite3_bind_int64(handle, index, Int64(value))) }
    func bind(_ index: Int32, _ value: Double) { bound(sqlite3_bind_double(handle, index, value)) }
    func bindNull(_ index: Int32) { bound(sqlite3_bind_null(handle, index)) }

    func bind(_ index: Int32, _ value: String) {
        var value = value
        value.withUTF8 { buf in
            let base = UnsafeRawPointer(buf.baseAddress ?? UnsafePointer(bitPattern: 1)!)
            bound(
                sqlite3_bind_text(
                    handle,
                    index,
                    base.assumingMemoryBound(to: CChar.self),
                    Int32(buf.count),
                    CTracerSQLite_TRANSIENT()
                )
            )
        }
    }

    func bindText(_ index: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { buf in
            bound(
                sqlite3_bind_text(
                    handle,
                    index,
                    UnsafeRawPointer(buf.baseAddress ?? UnsafePointer(bitPattern: 1)!)
                        .assumingMemoryBound(to: CChar.self),
                    Int32(buf.count),
                    CTracerSQLite_TRANSIENT()
                )
            )
        }
    }

    func bindBlob(_ index: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buf in
            bound(
                sqlite3_bind_blob(
                    handle,
                    index,
                    buf.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!,
                    Int32(buf.count),
                    CTracerSQLite_TRANSIENT()
                )
            )
        }
    }

    /// Advances: true when a row is ready, false when done.
    func step() throws -> Bool {
        if let rc = bindFailure {
            let e = StoreError(
                .sqlite,
                "a value could not be bound: \(String(cString: sqlite3_errstr(rc)))",
                context: sql,
                sqliteCode: rc
            )
            reset()
            throw e
        }
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let e = connection.error(rc, sql)
            sqlite3_reset(handle)
            throw e
        }
    }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }
    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    func text(_ column: Int32) -> String {
        guard let p = sqlite3_column_text(handle, column) else { return "" }
        let n = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }

    func bytes(_ column: Int32) -> UnsafeBufferPointer<UInt8> {
        let p = sqlite3_column_blob(handle, column)
        let n = Int(sqlite3_column_bytes(handle, column))
        return UnsafeBufferPointer(start: p?.assumingMemoryBound(to: UInt8.self), count: n)
    }
}

// The sqlite3 C API directly, not TracerStore: a baseline must be plain SQLite, with nothing of
// the store between it and the database (not even its connection and statement wrappers), or it
// would measure the store against part of itself.
import CTracerSQLite
import Foundation

/// The same rows written and read with plain prepared statements on the sqlite3 C API, with
/// the same pragmas and the same indexes as the store: the baseline the store's benchmark
/// measures itself against in the same run.
final class SQLiteBaseline {
    private let db: OpaquePointer
    private let insertStatement: OpaquePointer
    private let windowStatement: OpaquePointer
    private let pointStatement: OpaquePointer

    /// A fresh database with the interactions table and the indexes the store's benchmark declares.
    init(path: String, synchronousCommits: Bool = true) throws {
        var handle: OpaquePointer?
        // The flags the store opens its connections with.
        let rc = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let handle { sqlite3_close_v2(handle) }
            throw Failure(message: "cannot open \(path): \(message)")
        }
        sqlite3_extended_result_codes(handle, 1)
        do {
            try Self.execute(
                handle,
                """
                PRAGMA journal_mode = WAL;
                PRAGMA synchronous = \(synchronousCommits ? "FULL" : "NORMAL");
                PRAGMA cache_size = -65536;
                CREATE TABLE IF NOT EXISTS interactions (
                    parent TEXT NOT NULL, id TEXT NOT NULL, data TEXT NOT NULL,
                    device_id TEXT NOT NULL, start INTEGER NOT NULL,
                    PRIMARY KEY (parent, id)) WITHOUT ROWID;
                CREATE INDEX IF NOT EXISTS interactions_parent_start ON interactions (parent, start);
                CREATE INDEX IF NOT EXISTS interactions_device_start ON interactions (device_id, start);
                """
            )
            insertStatement = try Self.prepare(
                handle,
                "INSERT INTO interactions (parent, id, data, device_id, start) VALUES (?1, ?2, ?3, ?4, ?5)"
            )
            windowStatement = try Self.prepare(
                handle,
                "SELECT data FROM interactions WHERE parent = ?1 AND start >= ?2 AND start < ?3 ORDER BY start"
            )
            pointStatement = try Self.prepare(handle, "SELECT data FROM interactions WHERE parent = ?1 AND id = ?2")
        } catch {
            sqlite3_close_v2(handle)  // the benchmark ends here: a statement already prepared is left
            throw error
        }
        self.db = handle
    }

    deinit {
        for statement in [insertStatement, windowStatement, pointStatement] { sqlite3_finalize(statement) }
        sqlite3_close_v2(db)
    }

    /// One row: a document already encoded as JSON, and the values its indexes hold.
    struct Row: Sendable {
        var parent: String
        var id: String
        var json: String
        var deviceID: String
        var start: Int64
    }

    /// Inserts rows in one transaction.
    func insert(_ rows: [Row]) throws {
        try Self.execute(db, "BEGIN IMMEDIATE")
        let s = insertStatement
        for row in rows {
            sqlite3_reset(s)
            sqlite3_clear_bindings(s)
            bind(s, 1, row.parent)
            bind(s, 2, row.id)
            bind(s, 3, row.json)
            bind(s, 4, row.deviceID)
            sqlite3_bind_int64(s, 5, row.start)
            while try step(s, "INSERT") {}
        }
        sqlite3_reset(s)
        try Self.execute(db, "COMMIT")
    }

    /// The documents of one parent in a time window; returns how many, having read each one's text.
    func window(parent: String, from: Int64, to: Int64) throws -> Int {
        let s = windowStatement
        defer {
            sqlite3_reset(s)
            sqlite3_clear_bindings(s)
        }
        bind(s, 1, parent)
        sqlite3_bind_int64(s, 2, from)
        sqlite3_bind_int64(s, 3, to)
        var n = 0
        while try step(s, "SELECT (window)") { n += text(s, 0).utf8.count > 0 ? 1 : 0 }
        return n
    }

    /// One document's text by its key; returns its length.
    func point(parent: String, id: String) throws -> Int {
        let s = pointStatement
        defer {
            sqlite3_reset(s)
            sqlite3_clear_bindings(s)
        }
        bind(s, 1, parent)
        bind(s, 2, id)
        return try step(s, "SELECT (point)") ? text(s, 0).utf8.count : 0
    }

    // MARK: The C API

    struct Failure: Error, CustomStringConvertible {
        var message: String
        var description: String { "raw SQLite: \(message)" }
    }

    private static func execute(_ db: OpaquePointer, _ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &message)
        if rc != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_free(message)
            throw Failure(message: "\(text) (\(sql))")
        }
    }

    private static func prepare(_ db: OpaquePointer, _ sql: String) throws -> OpaquePointer {
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else {
            throw Failure(message: "\(String(cString: sqlite3_errmsg(db))) (\(sql))")
        }
        return statement
    }

    /// Binds text, copied by SQLite (SQLITE_TRANSIENT), as the store binds it.
    private func bind(_ s: OpaquePointer?, _ index: Int32, _ value: String) {
        var value = value
        value.withUTF8 { buf in
            let base = UnsafeRawPointer(buf.baseAddress ?? UnsafePointer(bitPattern: 1)!)
            _ = sqlite3_bind_text(
                s,
                index,
                base.assumingMemoryBound(to: CChar.self),
                Int32(buf.count),
                CTracerSQLite_TRANSIENT()
            )
        }
    }

    /// Advances: true when a row is ready, false when done.
    private func step(_ s: OpaquePointer?, _ what: String) throws -> Bool {
        switch sqlite3_step(s) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let message = String(cString: sqlite3_errmsg(db))
            sqlite3_reset(s)
            throw Failure(message: "\(message) (\(what))")
        }
    }

    private func text(_ s: OpaquePointer?, _ column: Int32) -> String {
        guard let p = sqlite3_column_text(s, column) else { return "" }
        let n = Int(sqlite3_column_bytes(s, column))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }
}

// libpq directly, not TracerStore: as with SQLiteBaseline, the baseline is the client library
// with nothing of the store between it and the database.
import CTracerPQ
import Foundation

/// The same rows written and read with plain prepared statements through libpq (the client the
/// store uses), one statement and one round trip per row, in a schema of its own, with the same
/// indexes as the store's benchmark declares: the baseline for `tracer-bench store --postgres`.
final class PostgresBaseline: Baseline {
    private let connection: OpaquePointer

    /// A fresh schema `schema` in the database at `uri`, with the interactions table.
    init(uri: String, schema: String, synchronousCommits: Bool = true) throws {
        guard let c = PQconnectdb(uri), PQstatus(c) == CONNECTION_OK else {
            throw Failure(message: "cannot connect to \(uri)")
        }
        connection = c
        try execute(
            """
            SET client_min_messages = warning;
            SET synchronous_commit = \(synchronousCommits ? "on" : "off");
            DROP SCHEMA IF EXISTS \(schema) CASCADE;
            CREATE SCHEMA \(schema);
            SET search_path = \(schema);
            CREATE TABLE interactions (
                parent TEXT COLLATE "C" NOT NULL, id TEXT COLLATE "C" NOT NULL, data TEXT NOT NULL,
                device_id TEXT COLLATE "C" NOT NULL, start BIGINT NOT NULL,
                PRIMARY KEY (parent, id));
            CREATE INDEX interactions_parent_start ON interactions (parent, start);
            CREATE INDEX interactions_device_start ON interactions (device_id, start);
            """
        )
        try prepare("ins", "INSERT INTO interactions (parent, id, data, device_id, start) VALUES ($1, $2, $3, $4, $5)")
        try prepare(
            "win",
            "SELECT data FROM interactions WHERE parent = $1 AND start >= $2 AND start < $3 ORDER BY start"
        )
        try prepare("pt", "SELECT data FROM interactions WHERE parent = $1 AND id = $2")
    }

    deinit { PQfinish(connection) }

    /// The first column of the first row a query returns, as text, on a connection of its own.
    static func scalar(uri: String, _ sql: String) throws -> String {
        guard let c = PQconnectdb(uri) else { throw Failure(message: "cannot connect to \(uri)") }
        defer { PQfinish(c) }
        let r = PQexec(c, sql)
        defer { PQclear(r) }
        guard PQresultStatus(r) == PGRES_TUPLES_OK, PQntuples(r) > 0 else {
            throw Failure(message: "\(String(cString: PQerrorMessage(c))) (\(sql))")
        }
        return String(cString: PQgetvalue(r, 0, 0))
    }

    /// Runs SQL on a connection of its own.
    static func execute(uri: String, _ sql: String) throws {
        guard let c = PQconnectdb(uri) else { throw Failure(message: "cannot connect to \(uri)") }
        defer { PQfinish(c) }
        let r = PQexec(c, "SET client_min_messages = warning; " + sql)
        defer { PQclear(r) }
        guard PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK else {
            throw Failure(message: "\(String(cString: PQerrorMessage(c))) (\(sql))")
        }
    }

    func insert(_ rows: [SQLiteBaseline.Row]) throws {
        try execute("BEGIN")
        for row in rows {
            try run("ins", [row.parent, row.id, row.json, row.deviceID, String(row.start)]) { _ in }
        }
        try execute("COMMIT")
    }

    /// The same rows in one transaction through libpq's pipeline, as the store sends its writes:
    /// a sync point every 256 statements, each segment's answers read while the server works on
    /// the next. The store against this is what its own work costs, apart from the round trips
    /// both save.
    func insertPipelined(_ rows: [SQLiteBaseline.Row]) throws {
        try execute("BEGIN")
        guard PQenterPipelineMode(connection) == 1 else { throw Failure(message: "cannot enter pipeline mode") }
        var segments: [Int] = []
        var sent = 0
        func sync() throws {
            guard PQpipelineSync(connection) == 1 else { throw Failure(message: "pipeline sync failed") }
            segments.append(sent)
            sent = 0
        }
        func read(_ count: Int) throws {
            for _ in 0..<count {
                let r = PQgetResult(connection)
                defer { PQclear(r) }
                try check(r, "ins (pipelined)")
                while let rest = PQgetResult(connection) { PQclear(rest) }
            }
            PQclear(PQgetResult(connection))  // the sync point's own
        }
        for row in rows {
            let sentOK = Self.withCStrings([row.parent, row.id, row.json, row.deviceID, String(row.start)]) {
                PQsendQueryPrepared(connection, "ins", 5, $0, nil, nil, 1)
            }
            guard sentOK == 1 else {
                throw Failure(message: String(cString: PQerrorMessage(connection)))
            }
            sent += 1
            if sent == 256 {
                try sync()
                while segments.count > 1 { try read(segments.removeFirst()) }
            }
        }
        if sent > 0 { try sync() }
        for count in segments { try read(count) }
        guard PQexitPipelineMode(connection) == 1 else { throw Failure(message: "cannot leave pipeline mode") }
        try execute("COMMIT")
    }

    func window(parent: String, from: Int64, to: Int64) throws -> Int {
        var n = 0
        try run("win", [parent, String(from), String(to)]) { r in
            for i in 0..<PQntuples(r) where PQgetlength(r, i, 0) > 0 { n += 1 }
        }
        return n
    }

    func point(parent: String, id: String) throws -> Int {
        var n = 0
        try run("pt", [parent, id]) { r in n = PQntuples(r) > 0 ? Int(PQgetlength(r, 0, 0)) : 0 }
        return n
    }

    // MARK: libpq

    struct Failure: Error, CustomStringConvertible {
        var message: String
        var description: String { "raw PostgreSQL: \(message)" }
    }

    private func execute(_ sql: String) throws {
        let r = PQexec(connection, sql)
        defer { PQclear(r) }
        try check(r, sql)
    }

    private func prepare(_ name: String, _ sql: String) throws {
        let r = PQprepare(connection, name, sql, 0, nil)
        defer { PQclear(r) }
        try check(r, sql)
    }

    /// Runs a prepared statement with text parameters (binary results, as the store reads them).
    private func run(_ name: String, _ parameters: [String], _ body: (OpaquePointer?) -> Void) throws {
        let r = Self.withCStrings(parameters) {
            PQexecPrepared(connection, name, Int32(parameters.count), $0, nil, nil, 1)
        }
        defer { PQclear(r) }
        try check(r, name)
        body(r)
    }

    /// Text parameters as libpq's array of C strings, alive while `body` runs.
    private static func withCStrings<T>(_ values: [String], _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
        let storage = values.map { strdup($0) }
        defer { for p in storage { free(p) } }
        return body(storage.map { UnsafePointer($0) })
    }

    private func check(_ r: OpaquePointer?, _ what: String) throws {
        let status = r.map { PQresultStatus($0) } ?? PGRES_FATAL_ERROR
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            throw Failure(message: "\(String(cString: PQerrorMessage(connection))) (\(what))")
        }
    }
}

/// What the store is measured against: the same rows in the same database, written and read
/// with the client library alone.
protocol Baseline: AnyObject {
    /// Inserts rows in one transaction.
    func insert(_ rows: [SQLiteBaseline.Row]) throws
    /// The documents of one parent in a time window; returns how many, having read each one.
    func window(parent: String, from: Int64, to: Int64) throws -> Int
    /// One document by its key; returns its length.
    func point(parent: String, id: String) throws -> Int
}

extension SQLiteBaseline: Baseline {}

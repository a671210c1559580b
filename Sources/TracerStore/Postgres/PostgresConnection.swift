import CTracerPQ
import Foundation

/// One PostgreSQL connection through libpq, synchronous like `SQLiteConnection`.
///
/// libpq rather than postgres-nio: the store's engine (query planning, the writer, the change
/// log, listeners) is synchronous and already runs off the event loops and the cooperative pool
/// (the server calls it on NIOThreadPool; the daemon and commands on their own threads). One
/// wrapper of a blocking client keeps that engine whole for both backends; postgres-nio would
/// mean either a second, asynchronous engine or blocking a thread on its futures, and 2.5 to
/// 4.5 more minutes of every cold build. Not thread-safe: one caller at a time.
final class PostgresConnection {
    private let handle: OpaquePointer
    /// Where it is connected, without a password.
    let target: String

    /// Connects with a libpq connection string or URI (`postgres://user@host:port/db`,
    /// `?host=/socket/dir` included).
    init(_ uri: String) throws {
        guard let c = PQconnectdb(uri) else {
            throw StoreError(.postgres, "cannot connect to PostgreSQL: out of memory", context: Self.redacted(uri))
        }
        guard PQstatus(c) == CONNECTION_OK else {
            let message = Self.firstLine(String(cString: PQerrorMessage(c)))
            PQfinish(c)
            throw StoreError(.postgres, "cannot connect to PostgreSQL: \(message)", context: Self.redacted(uri))
        }
        handle = c
        target = Self.redacted(uri)
    }

    deinit { PQfinish(handle) }

    /// Runs SQL that returns no rows (several statements allowed).
    func execute(_ sql: String) throws {
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        try check(result, sql)
    }

    /// A parameter: text, or bytes (sent binary, as `bytea`), or NULL.
    enum Parameter {
        case text(String)
        case bytes([UInt8])
        case null
    }

    /// Runs one statement with `$1…` parameters and returns its rows, each column as text or nil.
    func query(_ sql: String, _ parameters: [Parameter] = []) throws -> [[String?]] {
        let result = try run(sql, parameters)
        defer { PQclear(result) }
        let rows = Int(PQntuples(result))
        let columns = Int(PQnfields(result))
        return (0..<rows).map { r in
            (0..<columns).map { c in
                PQgetisnull(result, Int32(r), Int32(c)) == 1
                    ? nil : String(cString: PQgetvalue(result, Int32(r), Int32(c)))
            }
        }
    }

    /// Runs one statement and returns the first column of each row as raw bytes (binary results).
    func bytes(_ sql: String, _ parameters: [Parameter] = []) throws -> [[UInt8]] {
        let result = try run(sql, parameters, binaryResults: true)
        defer { PQclear(result) }
        return (0..<PQntuples(result)).map { r in
            let n = Int(PQgetlength(result, r, 0))
            guard let p = PQgetvalue(result, r, 0) else { return [] }
            return p.withMemoryRebound(to: UInt8.self, capacity: n) { Array(UnsafeBufferPointer(start: $0, count: n)) }
        }
    }

    private func run(_ sql: String, _ parameters: [Parameter], binaryResults: Bool = false) throws -> OpaquePointer? {
        // Each parameter's bytes stay alive until PQexecParams returns.
        var storage: [[CChar]?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        for p in parameters {
            switch p {
            case .text(let s):
                storage.append(Array(s.utf8CString))
                lengths.append(0)
                formats.append(0)
            case .bytes(let b):
                storage.append(b.map { CChar(bitPattern: $0) })
                lengths.append(Int32(b.count))
                formats.append(1)
            case .null:
                storage.append(nil)
                lengths.append(0)
                formats.append(0)
            }
        }
        let result = withPointers(storage) { values in
            PQexecParams(handle, sql, Int32(parameters.count), nil, values, lengths, formats, binaryResults ? 1 : 0)
        }
        do { try check(result, sql) } catch {
            PQclear(result)
            throw error
        }
        return result
    }

    private func withPointers<T>(_ arrays: [[CChar]?], _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
        var pointers: [UnsafePointer<CChar>?] = []
        func next(_ i: Int) -> T {
            if i == arrays.count { return body(pointers) }
            guard let a = arrays[i] else {
                pointers.append(nil)
                return next(i + 1)
            }
            return a.withUnsafeBufferPointer { buffer in
                pointers.append(buffer.baseAddress)
                return next(i + 1)
            }
        }
        return next(0)
    }

    private func check(_ result: OpaquePointer?, _ sql: String) throws {
        let status = result.map { PQresultStatus($0) } ?? PGRES_FATAL_ERROR
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let message = result.map { String(cString: PQresultErrorMessage($0)) } ?? ""
            let text = message.isEmpty ? String(cString: PQerrorMessage(handle)) : message
            throw StoreError(.postgres, "PostgreSQL: \(Self.firstLine(text))", context: sql)
        }
    }

    private static func firstLine(_ s: String) -> String {
        s.split(whereSeparator: \.isNewline).first.map(String.init) ?? s
    }

    /// The URI without its password (`postgres://user:secret@host/db` → `postgres://user@host/db`).
    static func redacted(_ uri: String) -> String {
        guard let at = uri.firstIndex(of: "@"), let scheme = uri.range(of: "://"), scheme.upperBound < at,
            let colon = uri[scheme.upperBound..<at].firstIndex(of: ":")
        else { return uri }
        return String(uri[..<colon]) + String(uri[at...])
    }
}

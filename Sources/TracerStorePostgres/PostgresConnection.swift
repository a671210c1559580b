import CTracerPQ
import Foundation
import TracerStore

/// One PostgreSQL connection through libpq, synchronous like `SQLiteConnection`.
///
/// libpq rather than postgres-nio: the store's engine (query planning, the writer, the change
/// log, listeners) is synchronous and already runs off the event loops and the cooperative pool
/// (the server calls it on NIOThreadPool; the daemon and commands on their own threads). One
/// wrapper of a blocking client keeps that engine whole for both backends; postgres-nio would
/// mean either a second, asynchronous engine or blocking a thread on its futures, and 2.5 to
/// 4.5 more minutes of every cold build. Not thread-safe: one caller at a time.
final class PostgresConnection: StoreConnection {
    let handle: OpaquePointer
    /// Where it is connected, without a password.
    let target: String

    /// Connects with a libpq connection string or URI (`postgres://user@host:port/db`,
    /// `?host=/socket/dir` included).
    init(_ uri: String) throws {
        guard let c = PQconnectdb(uri) else {
            throw StoreError(
                .postgres,
                "cannot connect to PostgreSQL: out of memory",
                context: DocumentStore.redacted(uri)
            )
        }
        guard PQstatus(c) == CONNECTION_OK else {
            let error = Self.error("cannot connect to PostgreSQL", connection: c, context: DocumentStore.redacted(uri))
            PQfinish(c)
            throw error
        }
        handle = c
        target = DocumentStore.redacted(uri)
        // The server's notices (a shutdown's "terminating connection" warning) are not printed on
        // standard error by libpq: the error that follows says what happened, in one line.
        PQsetNoticeProcessor(c, { _, _ in }, nil)
    }

    deinit {
        cache.removeAll()
        PQfinish(handle)
    }

    // MARK: The store's connection

    private var cache: [String: PostgresStatement] = [:]
    private var frequent: [PostgresStatement?] = Array(repeating: nil, count: FrequentStatement.allCases.count)
    let parents = ParentCache()
    /// Rows the last statement changed (its command tag's count).
    var changes = 0
    var streamsRows: Bool { false }

    func statement(_ sql: String) throws -> any StoreStatement { try prepared(sql) }

    func statement(_ key: FrequentStatement, _ sql: @autoclosure () -> String) throws -> any StoreStatement {
        if let s = frequent[key.rawValue] {
            s.reset()
            return s
        }
        let s = try prepared(sql())
        frequent[key.rawValue] = s
        return s
    }

    /// A statement prepared on the server once per connection (`?N` written as `$N`).
    func prepared(_ sql: String) throws -> PostgresStatement {
        if let cached = cache[sql] {
            cached.reset()
            return cached
        }
        try flush()
        let (text, used) = Self.translate(sql)
        let count = used.max() ?? 0
        // A parameter the text does not use (a scan of a collection group binds no path) has no
        // type the server could infer: it is declared text, and sent as NULL.
        let types: [UInt32] = (0..<count).map { used.contains($0 + 1) ? 0 : 25 }
        let name = "t\(cache.count)"
        let result = PQprepare(handle, name, text, Int32(count), types)
        defer { PQclear(result) }
        try check(result, sql)
        let statement = PostgresStatement(name: name, sql: sql, parameters: count, connection: self)
        cache[sql] = statement
        return statement
    }

    /// `?N` parameters as `$N`, and the numbers used (the store's SQL has no `?` in its literals).
    static func translate(_ sql: String) -> (String, Set<Int>) {
        var out = ""
        var used = Set<Int>()
        var chars = sql[...]
        while let q = chars.firstIndex(of: "?") {
            out += chars[..<q]
            var digits = chars.index(after: q)
            while digits < chars.endIndex, chars[digits].isASCII, chars[digits].isNumber {
                digits = chars.index(after: digits)
            }
            let number = chars[chars.index(after: q)..<digits]
            if let n = Int(number) {
                used.insert(n)
                out += "$" + number
            } else {
                out += "?"
            }
            chars = chars[digits...]
        }
        out += chars
        return (out, used)
    }

    func plan(_ sql: String) throws -> [String] {
        // The plan the server keeps for the prepared statement whatever its parameters.
        let statement = try prepared(sql)
        try execute("SET LOCAL plan_cache_mode = force_generic_plan")
        let nulls = Array(repeating: "NULL", count: Int(statement.parameters)).joined(separator: ", ")
        let rows = try query("EXPLAIN EXECUTE \(statement.name)\(nulls.isEmpty ? "" : "(\(nulls))")")
        return rows.compactMap { $0.first ?? nil }
    }

    func beginRead() throws {
        try statement(.begin, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY").run()
    }

    /// Ends a read transaction without waiting: a read-only transaction's COMMIT changes nothing,
    /// so it is sent and its answer read at the connection's next use (`finishCommit`, from
    /// `flush`, which every statement passes), by then long arrived. One round trip less a read.
    func endRead() {
        if (try? flush()) == nil || PQsendQuery(handle, "COMMIT") != 1 {
            _ = try? execute("ROLLBACK")
            return
        }
        commitInFlight = true
    }

    /// Reads the answer to a COMMIT sent by `endRead`; a failed one is rolled back (the server
    /// ends the transaction either way), a broken connection is found by the next statement.
    private func finishCommit() {
        guard commitInFlight else { return }
        commitInFlight = false
        var failed = false
        while let r = PQgetResult(handle) {
            if PQresultStatus(r) != PGRES_COMMAND_OK { failed = true }
            PQclear(r)
        }
        if failed, PQstatus(handle) == CONNECTION_OK {
            let r = PQexec(handle, "ROLLBACK")
            PQclear(r)
        }
    }

    /// Whether the server connection is gone (a restart, a network cut).
    var isBroken: Bool { PQstatus(handle) == CONNECTION_BAD }

    /// Connects again after the connection broke; statements are prepared again as they are used.
    func reconnect() throws {
        segment.removeAll()
        synced.removeAll()
        pipelineFailure = nil
        pipelining = false
        commitInFlight = false
        cache.removeAll()
        for i in frequent.indices { frequent[i] = nil }
        PQreset(handle)
        guard PQstatus(handle) == CONNECTION_OK else {
            throw error(nil, "cannot connect to PostgreSQL", context: target)
        }
    }

    /// Runs SQL that returns no rows (several statements allowed).
    func execute(_ sql: String) throws {
        try flush()
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
        try flush()
        // Each parameter's bytes stay alive until PQexecParams returns.
        var storage: [[UInt8]?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        for p in parameters {
            switch p {
            case .text(let s):
                storage.append(Array(s.utf8) + [0])
                lengths.append(0)
                formats.append(0)
            case .bytes(let b):
                storage.append(b)
                lengths.append(Int32(b.count))
                formats.append(1)
            case .null:
                storage.append(nil)
                lengths.append(0)
                formats.append(0)
            }
        }
        let result = PostgresStatement.withPointers(storage) { values in
            PQexecParams(handle, sql, Int32(parameters.count), nil, values, lengths, formats, binaryResults ? 1 : 0)
        }
        do { try check(result, sql) } catch {
            PQclear(result)
            throw error
        }
        return result
    }

    // MARK: The pipeline

    /// A statement sent and not yet answered.
    private typealias Sent = (sql: String, changed: ((Int) -> Void)?)
    /// Statements sent since the last sync point, oldest first.
    private var segment: [Sent] = []
    /// Segments ended by a sync point whose answers are not read yet, oldest first.
    private var synced: [[Sent]] = []
    /// The first failure read from an answer, thrown by the next `flush()`.
    private var pipelineFailure: StoreError?
    /// A read's COMMIT sent and its answer not read yet (`endRead`).
    private var commitInFlight = false
    /// Whether the connection is in libpq's pipeline mode.
    private var pipelining = false
    /// Statements between sync points. One segment's answers are read while the server works
    /// on the next (client and server busy at once), and two segments' answers (about 50 bytes
    /// a statement) stay far below what a socket holds, so the server never blocks writing
    /// them while this side blocks writing more statements.
    static let pipelineDepth = 256

    var pipelines: Bool { true }

    /// Sends a statement without waiting for its answer (libpq's pipeline mode), so that a
    /// batch of writes costs no round trip per statement: it cost 4 a document before, and the
    /// store wrote at 0.27× raw libpq's single-statement INSERTs (`Tools/bench/store --backend
    /// postgres`; BENCHMARKS.md has the figures since).
    func send(_ statement: any StoreStatement, changed: ((Int) -> Void)?) throws {
        finishCommit()
        guard let s = statement as? PostgresStatement else {
            try statement.run()
            changed?(changes)
            return
        }
        if !pipelining {
            guard PQenterPipelineMode(handle) == 1 else {
                throw StoreError(.postgres, "PostgreSQL: cannot enter pipeline mode", context: s.sql)
            }
            pipelining = true
        }
        guard s.send() == 1 else {
            let failure = error(context: s.sql)
            _ = try? flush()
            throw failure
        }
        segment.append((s.sql, changed))
        if segment.count >= Self.pipelineDepth {
            endSegment()
            // The segment before is answered by now, or nearly: read while the server goes on.
            while synced.count > 1 { read(synced.removeFirst()) }
            if pipelineFailure != nil { try flush() }
        }
    }

    /// Ends the segment being sent with a sync point (which sends it).
    private func endSegment() {
        if PQpipelineSync(handle) != 1 { pipelineFailure = pipelineFailure ?? error(context: nil) }
        synced.append(segment)
        segment.removeAll(keepingCapacity: true)
    }

    /// Reads the answers of one segment, and its sync point's.
    private func read(_ sent: [Sent]) {
        for (sql, changed) in sent {
            guard let r = PQgetResult(handle) else {
                pipelineFailure = pipelineFailure ?? error(context: sql)
                return
            }
            let status = PQresultStatus(r)
            if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK {
                changed?(Int(String(cString: PQcmdTuples(r))) ?? 0)
            } else if status != PGRES_PIPELINE_ABORTED, pipelineFailure == nil {
                pipelineFailure = error(r, context: sql)
            }
            PQclear(r)
            while let rest = PQgetResult(handle) { PQclear(rest) }  // up to the NULL that ends its answer
        }
        if let r = PQgetResult(handle) { PQclear(r) }  // the sync point's
    }

    /// Reads the answers to every statement sent, leaves pipeline mode, and throws the first
    /// failure among them. The connection is ready for anything afterwards, whatever happened.
    func flush() throws {
        finishCommit()
        guard pipelining else { return }
        if !segment.isEmpty { endSegment() }
        for sent in synced { read(sent) }
        synced.removeAll()
        pipelining = false
        if PQexitPipelineMode(handle) != 1 {
            while let r = PQgetResult(handle) { PQclear(r) }
            _ = PQexitPipelineMode(handle)
        }
        if let failure = pipelineFailure {
            pipelineFailure = nil
            throw failure
        }
    }

    func check(_ result: OpaquePointer?, _ sql: String) throws {
        let status = result.map { PQresultStatus($0) } ?? PGRES_FATAL_ERROR
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else { throw error(result, context: sql) }
    }

    /// Every libpq failure as one `StoreError`, as the SQLite connection has one funnel too: what
    /// failed, libpq's first line of why (the result's primary message, else the connection's), the
    /// result's SQLSTATE (callers decide by it, never by the text), and the SQL or the target.
    static func error(
        _ what: String = "PostgreSQL",
        connection: OpaquePointer,
        result: OpaquePointer? = nil,
        context: String?
    ) -> StoreError {
        // A result's primary message (PG_DIAG_MESSAGE_PRIMARY, 'M'): its text without libpq's
        // "ERROR:  " and the lines of detail after it.
        let primary = result.flatMap { PQresultErrorField($0, Int32(UInt8(ascii: "M"))) }.map { String(cString: $0) }
        let message = primary ?? result.map { String(cString: PQresultErrorMessage($0)) } ?? ""
        let text = message.isEmpty ? String(cString: PQerrorMessage(connection)) : message
        return StoreError(
            .postgres,
            "\(what): \(firstLine(text))",
            context: context,
            sqlstate: result.flatMap(sqlstate)
        )
    }

    /// The same on this connection.
    func error(_ result: OpaquePointer? = nil, _ what: String = "PostgreSQL", context: String?) -> StoreError {
        Self.error(what, connection: handle, result: result, context: context)
    }

    /// The SQLSTATE of a failed result (libpq's `PG_DIAG_SQLSTATE`, the field code 'C'), kept
    /// on the error so that callers decide by code, never by message text.
    static func sqlstate(_ result: OpaquePointer) -> String? {
        guard let field = PQresultErrorField(result, Int32(UInt8(ascii: "C"))) else { return nil }
        let code = String(cString: field)
        return code.isEmpty ? nil : code
    }

    static func firstLine(_ s: String) -> String {
        s.split(whereSeparator: \.isNewline).first.map(String.init) ?? s
    }
}

/// A statement prepared on the server: parameters collected as they are bound, run at the first
/// step, and its rows (in binary form) read from the result.
final class PostgresStatement: StoreStatement {
    let name: String
    let sql: String
    let parameters: Int32
    unowned let connection: PostgresConnection
    private var values: [[UInt8]?]
    private var formats: [Int32]
    private var result: OpaquePointer?
    private var row: Int32 = -1
    private var rows: Int32 = 0

    init(name: String, sql: String, parameters: Int, connection: PostgresConnection) {
        self.name = name
        self.sql = sql
        self.parameters = Int32(parameters)
        self.connection = connection
        values = Array(repeating: nil, count: parameters)
        formats = Array(repeating: 0, count: parameters)
    }

    deinit { if let result { PQclear(result) } }

    func reset() {
        if let result { PQclear(result) }
        result = nil
        row = -1
        rows = 0
        for i in values.indices { values[i] = nil }
    }

    private func set(_ index: Int32, _ bytes: [UInt8], binary: Bool) {
        let i = Int(index) - 1
        guard i >= 0, i < values.count else { return }  // a parameter the text does not use
        values[i] = bytes
        formats[i] = binary ? 1 : 0
    }

    // Text parameters are sent NUL-terminated; bytes in binary, with their length.
    func bind(_ index: Int32, _ value: Int64) { set(index, Array(String(value).utf8) + [0], binary: false) }
    func bind(_ index: Int32, _ value: String) { set(index, Array(value.utf8) + [0], binary: false) }
    func bindBlob(_ index: Int32, _ bytes: [UInt8]) { set(index, bytes, binary: true) }

    func step() throws -> Bool {
        if result == nil {
            try connection.flush()
            let lengths = zip(values, formats).map { v, f in f == 1 ? Int32(v?.count ?? 0) : 0 }
            let r = Self.withPointers(values) { pointers in
                PQexecPrepared(connection.handle, name, parameters, pointers, lengths, formats, 1)
            }
            do { try connection.check(r, sql) } catch {
                PQclear(r)
                throw error
            }
            result = r
            rows = PQntuples(r)
            row = -1
            connection.changes = Int(String(cString: PQcmdTuples(r))) ?? 0
        }
        if row < rows { row += 1 }
        return row < rows
    }

    /// Sends the statement with its parameters in pipeline mode (`PostgresConnection.send`):
    /// libpq copies them into its buffer at once. 1 when sent.
    func send() -> Int32 {
        let lengths = zip(values, formats).map { v, f in f == 1 ? Int32(v?.count ?? 0) : 0 }
        return Self.withPointers(values) { pointers in
            PQsendQueryPrepared(connection.handle, name, parameters, pointers, lengths, formats, 1)
        }
    }

    /// Each value's bytes as a C pointer, alive until `body` returns (libpq's parameter arrays).
    static func withPointers<T>(_ arrays: [[UInt8]?], _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
        var pointers: [UnsafePointer<CChar>?] = []
        pointers.reserveCapacity(arrays.count)
        func next(_ i: Int) -> T {
            if i == arrays.count { return body(pointers) }
            guard let a = arrays[i] else {
                pointers.append(nil)
                return next(i + 1)
            }
            return a.withUnsafeBufferPointer { buffer in
                // A zero-length binary value still needs a pointer that is not NULL.
                pointers.append(
                    UnsafeRawPointer(buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!)
                        .assumingMemoryBound(to: CChar.self)
                )
                return next(i + 1)
            }
        }
        return next(0)
    }

    func isNull(_ column: Int32) -> Bool { PQgetisnull(result, row, column) == 1 }

    func bytes(_ column: Int32) -> UnsafeBufferPointer<UInt8> {
        let n = Int(PQgetlength(result, row, column))
        let p = UnsafeRawPointer(PQgetvalue(result, row, column))
        return UnsafeBufferPointer(start: p?.assumingMemoryBound(to: UInt8.self), count: n)
    }

    /// An integer column in binary: 8, 4 or 2 bytes, big-endian (bigint, integer, smallint).
    func int64(_ column: Int32) -> Int64 {
        withBytes(column) { b in
            var v: Int64 = 0
            for byte in b { v = v << 8 | Int64(byte) }
            // Sign-extend the shorter forms.
            let bits = b.count * 8
            if bits > 0, bits < 64, v & (1 << (bits - 1)) != 0 { v -= 1 << bits }
            return v
        }
    }

    func text(_ column: Int32) -> String {
        withBytes(column) { String(decoding: $0, as: UTF8.self) }
    }
}

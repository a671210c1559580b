/// Runs queries: picks a declared index when one fits, scans it by key range, and checks every
/// filter on every candidate, so an index only ever narrows the scan and never changes the answer.
struct QueryEngine {
    let db: any StoreConnection
    let catalog: IndexCatalog

    /// How a query is read.
    struct Plan {
        var index: StoredIndex?
        var lower: [UInt8] = []
        var upper: [UInt8] = []
        var reverse = false
        /// Rows arrive in the query's order, so a limit can stop the scan early.
        var ordered = false
        /// Without an index: read one collection (true) or a whole collection group.
        var oneCollection = false
        /// The filters each candidate is checked against: all of the query's, but those the
        /// index's key range already decides exactly (a window on a timestamp), and whether the
        /// order's fields must be looked for (not when the index holds them: an entry exists only
        /// for a document that has every field of its index).
        var residual: [Filter]? = nil
        var orderFieldsHeld = false

        /// The statement; `paged` (a database that hands rows over all at once) reads a page at
        /// a time, each after the last key read.
        func sql(paged: Bool) -> String {
            if let index {
                let group = index.definition.scope == .collectionGroup
                return Self.indexSQL[(paged ? 4 : 0) + (group ? 2 : 0) + (reverse ? 1 : 0)]
            }
            return oneCollection ? (paged ? Self.pagedCollectionSQL : Self.collectionSQL) : Self.groupSQL
        }

        /// Which of the engine's statements `sql` is.
        var statement: FrequentStatement {
            if let index {
                let group = index.definition.scope == .collectionGroup
                return group
                    ? (reverse ? .groupIndexScanReversed : .groupIndexScan)
                    : (reverse ? .collectionIndexScanReversed : .collectionIndexScan)
            }
            return oneCollection ? .collectionScan : .groupScan
        }

        // Entries in key order, each joined to its document inside the database (one statement,
        // not a lookup per entry from here). A collection's documents share one parent, whose
        // path the query names; a group's need theirs. Built once: a query names one of them.
        // SQLite steps lazily and stops where the caller stops: its statements keep neither the
        // LIMIT nor the key column, which would only add work to every row there, nor the
        // collection's path, which the scan does not read back (PostgreSQL's keep it as a
        // parameter: their parameters are numbered without a gap).
        static let indexSQL = [false, true].flatMap { paged in
            [false, true].flatMap { group in
                [false, true].map { reverse in
                    """
                    SELECT \(group ? "parents.path" : paged ? "?4" : "NULL"), documents.id, documents.data, documents.created, \
                    documents.updated\(paged ? ", index_entries.key" : "") FROM index_entries \
                    JOIN documents ON documents.parent = index_entries.parent AND documents.id = index_entries.doc \
                    \(group ? "JOIN parents ON parents.id = index_entries.parent " : "")\
                    WHERE index_entries.idx = ?1 AND index_entries.key >= ?2 AND index_entries.key < ?3 \
                    ORDER BY index_entries.key\(reverse ? " DESC" : "")\(paged ? " LIMIT ?5" : "")
                    """
                }
            }
        }
        static let collectionSQL = "SELECT ?2, id, data, created, updated FROM documents WHERE parent = ?1 ORDER BY id"
        static let pagedCollectionSQL =
            "SELECT ?2, id, data, created, updated FROM documents WHERE parent = ?1 AND id > ?3 ORDER BY id LIMIT ?4"
        static let groupSQL = """
            SELECT p.path, d.id, d.data, d.created, d.updated
            FROM parents p JOIN documents d ON d.parent = p.id WHERE p.collection = ?1
            """
    }

    func run(_ query: Query) throws -> [DocumentSnapshot] {
        let (template, conjuncts) = try template(for: query)
        let orders = template.orders
        try Self.validate(query, orders: orders)
        if query.limit == 0 { return [] }
        if query.limitToLast {
            guard !query.orders.isEmpty else {
                throw StoreError(
                    .invalidQuery,
                    "a limit to the last documents needs an order (order by at least one field)",
                    context: query.source.description
                )
            }
            var flipped = query
            flipped.orders = orders.map { Query.Order($0.field, descending: !$0.descending) }
            flipped.start = query.end
            flipped.end = query.start
            flipped.limitToLast = false
            return try run(flipped).reversed()
        }
        let plan = Self.plan(template, query, conjuncts)
        var results: [DocumentSnapshot] = []
        results.reserveCapacity(min(query.limit ?? 32, 32))
        let orderFields = plan.orderFieldsHeld ? [] : orders.map(\.field).filter { !$0.isDocumentID }
        let filters = plan.residual ?? query.filters
        // What each row is checked against, taken out of the query once (perf: copying a cursor
        // out of it for every row showed in a window's profile).
        let (start, end, source) = plan.ordered ? (query.start, query.end, query.source) : (nil, nil, query.source)
        let limit = plan.ordered ? query.limit ?? .max : .max
        try scan(query, plan) { doc in
            guard orderFields.allSatisfy({ doc[$0] != nil }), filters.allSatisfy({ $0.matches(doc) }) else {
                return true
            }
            if let start, !Self.isAfterStart(doc, start, orders, source) { return true }
            if let end, !Self.isBeforeEnd(doc, end, orders, source) { return false }
            results.append(doc)
            return results.count < limit
        }
        if !plan.ordered {
            results.sort { Self.compare($0, $1, orders) < 0 }
            if let start = query.start { results.removeAll { !Self.isAfterStart($0, start, orders, query.source) } }
            if let end = query.end { results.removeAll { !Self.isBeforeEnd($0, end, orders, query.source) } }
            if let limit = query.limit, results.count > limit { results.removeLast(results.count - limit) }
        }
        return results
    }

    /// The plan a query gets, and the database's own plan for its statement.
    func explain(_ query: Query) throws -> QueryExplanation {
        try Self.validate(query)
        let (template, conjuncts) = try template(for: query)
        let p = Self.plan(template, query, conjuncts)
        // One statement: the index scan joined to its documents, or the collection's scan.
        let sql = p.sql(paged: !db.streamsRows)
        let details = try db.plan(sql)
        return QueryExplanation(
            index: p.index?.definition,
            orderedByIndex: p.ordered,
            sql: sql,
            databasePlan: details,
            scanned: query.source.scannedDescription
        )
    }

    /// Rows a scan reads at a time where the database hands a statement's rows over all at once
    /// (PostgreSQL): a query that stops early (a limit, an end cursor) does not read the rest.
    static let pageSize: Int64 = 256

    private func scan(_ query: Query, _ plan: Plan, _ body: (DocumentSnapshot) throws -> Bool) throws {
        let paged = !db.streamsRows
        let s = try db.statement(plan.statement, plan.sql(paged: paged))
        defer { s.reset() }
        let page = paged ? Self.pageSize : Int64.max
        if let index = plan.index {
            var (lower, upper) = (plan.lower, plan.upper)
            // One collection: its path built once, each document's from it and its id.
            var one: (segments: [String], text: String)?
            if case .collection(let c) = query.source { one = (c.segments, c.description) }
            while true {
                s.reset()
                s.bind(1, index.id)
                s.bindBlob(2, lower)
                s.bindBlob(3, upper)
                if let one, paged { s.bind(4, one.text) }
                if paged { s.bind(5, page) }
                var rows: Int64 = 0
                var last: [UInt8] = []
                while try s.step() {
                    rows += 1
                    let path: DocumentPath
                    if let one {
                        var full = one.segments
                        full.append(s.text(1))
                        path = DocumentPath(validated: full, parentText: one.text)
                    } else {
                        path = DocumentPath(parent: s.text(0), id: s.text(1))
                    }
                    if try !body(try Self.snapshot(s, path)) { return }
                    if rows == page { last = s.blob(5) }
                }
                guard rows == page else { return }
                // The next page: keys after the last one read (in the scan's direction).
                if plan.reverse { upper = last } else { lower = last + [0] }
            }
        }
        if case .collection(let c) = query.source {
            // A collection nothing was ever written to has no id, and no documents.
            guard let parent = try db.parentID(c.description) else { return }
            var after = ""
            while true {
                s.reset()
                s.bind(1, parent)
                s.bind(2, c.description)
                if paged {
                    s.bind(3, after)
                    s.bind(4, page)
                }
                var rows: Int64 = 0
                while try s.step() {
                    rows += 1
                    let path = DocumentPath(parent: s.text(0), id: s.text(1))
                    if try !body(try Self.snapshot(s, path)) { return }
                    if rows == page { after = path.id }
                }
                guard rows == page else { return }
            }
        }
        // A group's documents come in no order: all of them are read.
        s.bind(1, query.source.collectionID)
        while try s.step() {
            if try !body(try Self.snapshot(s, DocumentPath(parent: s.text(0), id: s.text(1)))) { break }
        }
    }

    /// The document on the statement's row: path, id, data, created, updated.
    private static func snapshot(_ s: any StoreStatement, _ path: DocumentPath) throws -> DocumentSnapshot {
        let fields = try s.withBytes(2) { try DocumentFields.read($0, path: path) }
        return DocumentSnapshot(path: path, fields: fields, created: s.int64(3), updated: s.int64(4))
    }

    /// Key bounds [lower, upper) that hold exactly the entries matching every range filter on an
    /// ascending index field, when they all compare timestamps (a time window: the hot query).
    /// A timestamp's key is its type tag and 8 bytes, so a bound strict or not is a key: `< t`
    /// ends before `t`'s key, `> t` starts after every key beginning with it. With such bounds,
    /// the filters need not be checked again on each candidate (perf: they were a sixth of a
    /// 5-minute window's time in Swift, each decoding the field from the document). Nil
    /// otherwise: the inclusive bounds, and every filter checked.
    static func exactTimestampRange(
        _ ranges: [(FieldPath, Filter.Operator, Value)],
        field: IndexDefinition.Field,
        prefix: [UInt8]
    ) -> ([UInt8], [UInt8])? {
        guard !field.descending, !ranges.isEmpty else { return nil }
        var low: (Timestamp, strict: Bool)?
        var high: (Timestamp, strict: Bool)?
        for (_, op, value) in ranges {
            guard case .timestamp(let t) = value else { return nil }
            switch op {
            case .greaterThan, .greaterThanOrEqual:
                let strict = op == .greaterThan
                if low == nil || t > low!.0 || (t == low!.0 && strict) { low = (t, strict) }
            case .lessThan, .lessThanOrEqual:
                let strict = op == .lessThan
                if high == nil || t < high!.0 || (t == high!.0 && strict) { high = (t, strict) }
            default:
                return nil
            }
        }
        func key(_ t: Timestamp) -> [UInt8] {
            var out = prefix
            IndexKey.append(.timestamp(t), to: &out)
            return out
        }
        let lower = low.map { $0.strict ? key($0.0) + [IndexKey.top] : key($0.0) } ?? prefix + [IndexKey.timestamp]
        let upper =
            high.map { $0.strict ? key($0.0) : key($0.0) + [IndexKey.top] }
            ?? prefix + [IndexKey.string]  // the next type's tag: every timestamp's key is below it
        return (lower, upper)
    }

    /// Key bounds [lower, upper) for a range on one index field after an equality prefix.
    /// Bounds are inclusive of the end values: exclusive comparisons are left to the filters.
    static func rangeKeys(
        prefix: [UInt8],
        low: Value?,
        high: Value?,
        typeOrder: Int,
        descending: Bool
    )
        -> ([UInt8], [UInt8])
    {
        func encoded(_ v: Value) -> [UInt8] {
            var out = prefix
            IndexKey.append(v, descending: descending, to: &out)
            return out
        }
        let typeStart = IndexKey.tag(forTypeOrder: typeOrder)
        let typeEnd = IndexKey.tag(forTypeOrder: typeOrder + 1)
        if !descending {
            let lower = low.map(encoded) ?? prefix + [typeStart]
            let upper = high.map { encoded($0) + [IndexKey.top] } ?? prefix + [typeEnd]
            return (lower, upper)
        }
        let lower = high.map(encoded) ?? prefix + [~typeStart]
        let upper = low.map { encoded($0) + [IndexKey.top] } ?? prefix + [~typeStart &+ 1]
        return (lower, upper)
    }

    // MARK: Order and cursors

    /// The explicit orders, then inequality fields not yet ordered, then `__name__`.
    static func effectiveOrders(_ query: Query) -> [Query.Order] {
        var orders = query.orders
        var inequalities: [FieldPath] = []
        func note(_ filter: Filter) {
            switch filter {
            case .field(let field, let op, _):
                if op.isInequality && !inequalities.contains(field) { inequalities.append(field) }
            case .and(let filters), .or(let filters):
                for f in filters { note(f) }
            }
        }
        for filter in query.filters { note(filter) }
        // In field-name order when there are several (sorting one would only cost the names).
        if inequalities.count > 1 { inequalities.sort { $0.description < $1.description } }
        for field in inequalities where !orders.contains(where: { $0.field == field }) {
            orders.append(Query.Order(field))
        }
        if orders.last?.field.isDocumentID != true {
            orders.append(Query.Order(.documentID, descending: orders.last?.descending ?? false))
        }
        return orders
    }

    static func compare(_ a: DocumentSnapshot, _ b: DocumentSnapshot, _ orders: [Query.Order]) -> Int {
        for o in orders {
            var c: Int
            if o.field.isDocumentID {
                c = a.path == b.path ? 0 : (a.path < b.path ? -1 : 1)
            } else {
                c = Value.compare(a[o.field] ?? .null, b[o.field] ?? .null)
            }
            if o.descending { c = -c }
            if c != 0 { return c }
        }
        return 0
    }

    /// The document against a cursor: negative before it, 0 at it, positive after it.
    static func position(
        _ doc: DocumentSnapshot,
        _ cursor: Query.Cursor,
        _ orders: [Query.Order],
        _ source: Query.Source
    )
        -> Int
    {
        for (value, o) in zip(cursor.values, orders) {
            var c: Int
            if o.field.isDocumentID {
                let target = cursorPath(value, source)
                c = target.map { doc.path == $0 ? 0 : (doc.path < $0 ? -1 : 1) } ?? 0
            } else {
                c = Value.compare(doc[o.field] ?? .null, value)
            }
            if o.descending { c = -c }
            if c != 0 { return c }
        }
        return 0
    }

    static func isAfterStart(_ doc: DocumentSnapshot, _ c: Query.Cursor, _ o: [Query.Order], _ s: Query.Source) -> Bool
    {
        let p = position(doc, c, o, s)
        return c.inclusive ? p >= 0 : p > 0
    }

    static func isBeforeEnd(_ doc: DocumentSnapshot, _ c: Query.Cursor, _ o: [Query.Order], _ s: Query.Source) -> Bool {
        let p = position(doc, c, o, s)
        return c.inclusive ? p <= 0 : p < 0
    }

    /// A `__name__` cursor value: a full document path, or an id in the queried collection.
    static func cursorPath(_ value: Value, _ source: Query.Source) -> DocumentPath? {
        guard case .string(let s) = value else { return nil }
        if s.contains("/") { return try? DocumentPath(s) }
        if case .collection(let c) = source { return try? c.document(s) }
        return nil
    }

    static func validate(_ query: Query, orders: [Query.Order]? = nil) throws {
        for f in query.filters { try f.validate() }
        if let limit = query.limit, limit < 0 {
            throw StoreError(.invalidQuery, "a limit cannot be negative", context: query.source.description)
        }
        let count = (orders ?? effectiveOrders(query)).count
        for cursor in [query.start, query.end].compactMap({ $0 }) where cursor.values.count > count {
            throw StoreError(
                .invalidQuery,
                "a cursor has \(cursor.values.count) values but the query orders by \(count) fields",
                context: query.source.description
            )
        }
    }
}

/// How a query is read: the index it uses and the database's plan for the statement.
public struct QueryExplanation: Sendable, CustomStringConvertible {
    /// The declared index the query scans, if any.
    public var index: IndexDefinition?
    /// Whether rows come in the query's order, so a limit stops the scan early.
    public var orderedByIndex: Bool
    /// The statement run (only bound parameters: no caller text is in it).
    public var sql: String
    /// The database's plan: SQLite's EXPLAIN QUERY PLAN lines, or PostgreSQL's EXPLAIN.
    public var databasePlan: [String]
    /// What is read when no index serves the query.
    var scanned = "the collection"

    public var description: String {
        let using = index.map { "index \($0)" } ?? "no index (reads every document of \(scanned))"
        return "uses \(using)\(orderedByIndex ? ", in order" : "")\n"
            + databasePlan.map { "  plan: \($0)" }.joined(separator: "\n")
    }
}

extension DocumentPath {
    /// A path from a stored parent path and id (both validated when written).
    init(parent: String, id: String) {
        self.init(parentText: parent, id: id)
    }
}

extension DocumentStore {
    /// The documents matching a query, in its order.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func getDocuments(_ query: Query) throws -> [DocumentSnapshot] {
        try pool.read { db in try QueryEngine(db: db, catalog: catalog).run(query) }
    }

    /// How many documents match a query (its limit applies).
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func count(_ query: Query) throws -> Int {
        try getDocuments(query).count
    }

    /// How a query would be read: which index, and SQLite's plan.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func explain(_ query: Query) throws -> QueryExplanation {
        try pool.read { db in try QueryEngine(db: db, catalog: catalog).explain(query) }
    }
}

/// Runs queries: picks a declared index when one fits, scans it by key range, and checks every
/// filter on every candidate, so an index only ever narrows the scan and never changes the answer.
struct QueryEngine {
    let db: SQLiteConnection
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

        var sql: String {
            if let index {
                let group = index.definition.scope == .collectionGroup
                return Self.indexSQL[(group ? 2 : 0) + (reverse ? 1 : 0)]
            }
            return oneCollection ? Self.collectionSQL : Self.groupSQL
        }

        /// Which of the engine's statements `sql` is.
        var statement: SQLiteConnection.Frequent {
            if let index {
                let group = index.definition.scope == .collectionGroup
                return group
                    ? (reverse ? .groupIndexScanReversed : .groupIndexScan)
                    : (reverse ? .collectionIndexScanReversed : .collectionIndexScan)
            }
            return oneCollection ? .collectionScan : .groupScan
        }

        // Entries in key order, each joined to its document inside SQLite (one statement, not
        // a lookup per entry from here). A collection's documents share one parent, whose path
        // the query names; a group's need theirs. Built once: a query names one of them.
        static let indexSQL = [false, true].flatMap { group in
            [false, true].map { reverse in
                """
                SELECT \(group ? "parents.path" : "?4"), documents.id, documents.data, documents.created, \
                documents.updated FROM index_entries \
                JOIN documents ON documents.parent = index_entries.parent AND documents.id = index_entries.doc \
                \(group ? "JOIN parents ON parents.id = index_entries.parent " : "")\
                WHERE index_entries.idx = ?1 AND index_entries.key >= ?2 AND index_entries.key < ?3 \
                ORDER BY index_entries.key\(reverse ? " DESC" : "")
                """
            }
        }
        static let collectionSQL = "SELECT ?2, id, data, created, updated FROM documents WHERE parent = ?1 ORDER BY id"
        static let groupSQL = """
            SELECT p.path, d.id, d.data, d.created, d.updated
            FROM parents p JOIN documents d ON d.parent = p.id WHERE p.collection = ?1
            """
    }

    func run(_ query: Query) throws -> [DocumentSnapshot] {
        let orders = Self.effectiveOrders(query)
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
        let plan = try plan(query, orders: orders)
        var results: [DocumentSnapshot] = []
        results.reserveCapacity(min(query.limit ?? 32, 32))
        let orderFields = orders.map(\.field).filter { !$0.isDocumentID }
        try scan(query, plan) { doc in
            guard orderFields.allSatisfy({ doc[$0] != nil }), query.filters.allSatisfy({ $0.matches(doc) }) else {
                return true
            }
            if plan.ordered {
                if let start = query.start, !Self.isAfterStart(doc, start, orders, query.source) { return true }
                if let end = query.end, !Self.isBeforeEnd(doc, end, orders, query.source) { return false }
            }
            results.append(doc)
            return !(plan.ordered && query.limit.map { results.count >= $0 } == true)
        }
        if !plan.ordered {
            results.sort { Self.compare($0, $1, orders) < 0 }
            if let start = query.start { results.removeAll { !Self.isAfterStart($0, start, orders, query.source) } }
            if let end = query.end { results.removeAll { !Self.isBeforeEnd($0, end, orders, query.source) } }
            if let limit = query.limit, results.count > limit { results.removeLast(results.count - limit) }
        }
        return results
    }

    /// The plan a query gets, and SQLite's own plan for its statement (EXPLAIN QUERY PLAN).
    func explain(_ query: Query) throws -> QueryExplanation {
        try Self.validate(query)
        let p = try plan(query, orders: Self.effectiveOrders(query))
        var details: [String] = []
        // One statement: the index scan joined to its documents, or the collection's scan.
        let s = try db.statement("EXPLAIN QUERY PLAN " + p.sql)
        while try s.step() { details.append(s.text(3)) }
        return QueryExplanation(
            index: p.index?.definition,
            orderedByIndex: p.ordered,
            sql: p.sql,
            sqlitePlan: details,
            scanned: query.source.scannedDescription
        )
    }

    private func scan(_ query: Query, _ plan: Plan, _ body: (DocumentSnapshot) throws -> Bool) throws {
        let s = try db.statement(plan.statement, plan.sql)
        defer { s.reset() }
        if let index = plan.index {
            s.bind(1, index.id)
            s.bindBlob(2, plan.lower)
            s.bindBlob(3, plan.upper)
            if case .collection(let c) = query.source {
                // One collection: its path built once, each document's from it and its id.
                let segments = c.segments
                let text = c.description
                s.bind(4, text)
                while try s.step() {
                    var full = segments
                    full.append(s.text(1))
                    let path = DocumentPath(validated: full, parentText: text)
                    if try !body(try Self.snapshot(s, path)) { break }
                }
            } else {
                while try s.step() {
                    if try !body(try Self.snapshot(s, DocumentPath(parent: s.text(0), id: s.text(1)))) { break }
                }
            }
            return
        }
        if case .collection(let c) = query.source {
            // A collection nothing was ever written to has no id, and no documents.
            guard let parent = try db.parentID(c.description) else { return }
            s.bind(1, parent)
            s.bind(2, c.description)
        } else {
            s.bind(1, query.source.collectionID)
        }
        while try s.step() {
            if try !body(try Self.snapshot(s, DocumentPath(parent: s.text(0), id: s.text(1)))) { break }
        }
    }

    /// The document on the statement's row: path, id, data, created, updated.
    private static func snapshot(_ s: SQLiteStatement, _ path: DocumentPath) throws -> DocumentSnapshot {
        let fields = try s.withBytes(2) { try DocumentFields.read($0, path: path) }
        return DocumentSnapshot(path: path, fields: fields, created: s.int64(3), updated: s.int64(4))
    }

    // MARK: Planning

    private func plan(_ query: Query, orders: [Query.Order]) throws -> Plan {
        let conjuncts = query.filters.flatMap(\.conjuncts)
        // A handful of fields: a list compares faster than a set hashes them.
        let constrained = conjuncts.map(\.0) + orders.map(\.field)
        let wantedScope: IndexDefinition.Scope
        var fallback = Plan()
        switch query.source {
        case .collection:
            wantedScope = .collection
            fallback.oneCollection = true
            fallback.ordered = orders.count == 1 && !orders[0].descending
        case .group:
            wantedScope = .collectionGroup
        }
        var best: (score: Int, plan: Plan)?
        for index in try catalog.indexes(for: query.source.collectionID, db)
        where index.definition.scope == wantedScope {
            let fields = index.definition.fields
            guard fields.allSatisfy({ constrained.contains($0.path) }) else { continue }
            var prefix: [UInt8] = []
            if case .collection(let c) = query.source { IndexKey.append(.string(c.description), to: &prefix) }
            var k = 0
            var equalityFields: [FieldPath] = []
            while k < fields.count,
                let eq = conjuncts.first(where: { $0.0 == fields[k].path && $0.1 == .equal })
            {
                IndexKey.append(eq.2, descending: fields[k].descending, to: &prefix)
                equalityFields.append(fields[k].path)
                k += 1
            }
            var plan = Plan(index: index, lower: prefix, upper: prefix + [IndexKey.top])
            var hasRange = false
            if k < fields.count {
                let ranges = conjuncts.filter {
                    $0.0 == fields[k].path
                        && [.lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual].contains($0.1)
                }
                if let first = ranges.first {
                    hasRange = true
                    let lows = ranges.filter { $0.1 == .greaterThan || $0.1 == .greaterThanOrEqual }.map(\.2)
                    let highs = ranges.filter { $0.1 == .lessThan || $0.1 == .lessThanOrEqual }.map(\.2)
                    let low = lows.max { Value.compare($0, $1) < 0 }
                    let high = highs.min { Value.compare($0, $1) < 0 }
                    (plan.lower, plan.upper) = Self.rangeKeys(
                        prefix: prefix,
                        low: low,
                        high: high,
                        typeOrder: first.2.typeOrder,
                        descending: fields[k].descending
                    )
                }
            }
            // Does the index give the query's order? Orders on fields fixed by equality do not count.
            let named = orders.dropLast().filter { !equalityFields.contains($0.field) }
            let rest = fields[k...]
            if rest.count == named.count, !named.contains(where: { $0.field.isDocumentID }),
                zip(rest, named).allSatisfy({ $0.path == $1.field })
            {
                let nameDescending = orders.last!.descending
                let indexNameDescending = fields.last!.descending
                let forward = zip(rest, named).allSatisfy { $0.descending == $1.descending }
                let backward = zip(rest, named).allSatisfy { $0.descending != $1.descending }
                if forward && nameDescending == indexNameDescending {
                    plan.ordered = true
                } else if backward && nameDescending != indexNameDescending {
                    plan.ordered = true
                    plan.reverse = true
                }
            }
            guard k > 0 || hasRange || plan.ordered else { continue }
            let score = k * 4 + (hasRange ? 2 : 0) + (plan.ordered ? 1 : 0)
            if best == nil || score > best!.score { best = (score, plan) }
        }
        return best?.plan ?? fallback
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
        for (field, op, _) in query.filters.flatMap(\.allFields) where op.isInequality && !inequalities.contains(field)
        {
            inequalities.append(field)
        }
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

/// How a query is read: the index it uses and SQLite's plan for the statement.
public struct QueryExplanation: Sendable, CustomStringConvertible {
    /// The declared index the query scans, if any.
    public var index: IndexDefinition?
    /// Whether rows come in the query's order, so a limit stops the scan early.
    public var orderedByIndex: Bool
    /// The statement run (only bound parameters: no caller text is in it).
    public var sql: String
    /// SQLite's EXPLAIN QUERY PLAN lines.
    public var sqlitePlan: [String]
    /// What is read when no index serves the query.
    var scanned = "the collection"

    public var description: String {
        let using = index.map { "index \($0)" } ?? "no index (reads every document of \(scanned))"
        return "uses \(using)\(orderedByIndex ? ", in order" : "")\n"
            + sqlitePlan.map { "  sqlite: \($0)" }.joined(separator: "\n")
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
    public func getDocuments(_ query: Query) throws -> [DocumentSnapshot] {
        try pool.read { db in try QueryEngine(db: db, catalog: catalog).run(query) }
    }

    /// How many documents match a query (its limit applies).
    public func count(_ query: Query) throws -> Int {
        try getDocuments(query).count
    }

    /// How a query would be read: which index, and SQLite's plan.
    public func explain(_ query: Query) throws -> QueryExplanation {
        try pool.read { db in try QueryEngine(db: db, catalog: catalog).explain(query) }
    }
}

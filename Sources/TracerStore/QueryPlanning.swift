/// Planning a query in two steps: what its shape decides (its orders, the index, which filters
/// fix the index's fields and bound its range, which are left to check on each candidate), kept
/// per shape in the catalog; and the key bounds its values give, worked out at each run.
///
/// Why kept: a store answers the same few queries over and over with other values (a beacon's
/// 5-minute window, a device's windows since a time), and choosing the index again each time was
/// a quarter of a query's time in Swift (`perf`; an empty window cost 2.4 × raw SQLite's, 2.0 ×
/// with plans kept: BENCHMARKS.md, "A plan kept per query shape").
extension QueryEngine {
    /// A query without its values: what its plan is chosen by. Nil for a query whose filters are
    /// not all plain field filters (an `and` or an `or`): which of those an index's range
    /// settles depends on their values, so their plans are not kept.
    struct Shape: Hashable, Sendable {
        struct Field: Hashable, Sendable {
            var path: FieldPath
            var op: Filter.Operator
            /// The value's type: a range is encoded by its type, and only timestamps are exact.
            var typeOrder: Int
        }

        var group: Bool
        var collectionID: String
        var filters: [Field]
        var orders: [Query.Order]

        init?(_ query: Query) {
            var filters: [Field] = []
            filters.reserveCapacity(query.filters.count)
            for f in query.filters {
                guard case .field(let path, let op, let value) = f else { return nil }
                filters.append(Field(path: path, op: op, typeOrder: value.typeOrder))
            }
            switch query.source {
            case .collection(let c): (group, collectionID) = (false, c.id)
            case .group(let id): (group, collectionID) = (true, id)
            }
            self.filters = filters
            self.orders = query.orders
        }
    }

    /// What a query's shape decides. Conjuncts are numbered as `Filter.conjuncts` lists them,
    /// filter after filter; filters as the query lists them.
    struct Template: Sendable {
        enum Range: Sendable {
            case none
            /// Timestamps on an ascending field: the key range decides them exactly.
            case exact([Int], field: IndexDefinition.Field)
            /// Any other range: inclusive bounds, and every filter checked.
            case inclusive(lows: [Int], highs: [Int], typeOrder: Int, descending: Bool)
        }

        /// The explicit orders, then the implicit ones (`effectiveOrders`).
        var orders: [Query.Order]
        var index: StoredIndex?
        var oneCollection = false
        var ordered = false
        var reverse = false
        var orderFieldsHeld = false
        /// The conjuncts fixing the index's leading fields, in the index's order.
        var equalities: [(conjunct: Int, descending: Bool)] = []
        var range = Range.none
        /// The filters each candidate is checked against; nil: all of them.
        var residual: [Int]?
    }

    /// A query's template and its conjuncts: its shape's template kept in the catalog for the
    /// next query of its shape.
    func template(for query: Query) throws -> (Template, conjuncts: [(FieldPath, Filter.Operator, Value)]) {
        let (version, indexes) = try catalog.current(db)
        let candidates = { indexes[query.source.collectionID] ?? [] }
        guard let shape = Shape(query) else {
            let conjuncts = query.filters.flatMap(\.conjuncts)
            return (template(query, conjuncts, candidates()), conjuncts)
        }
        // A plain query's conjuncts are its filters: gathered in one array, not one per filter.
        var conjuncts: [(FieldPath, Filter.Operator, Value)] = []
        conjuncts.reserveCapacity(query.filters.count)
        for case .field(let path, let op, let value) in query.filters { conjuncts.append((path, op, value)) }
        if let kept = catalog.template(shape, version: version) { return (kept, conjuncts) }
        let template = template(query, conjuncts, candidates())
        catalog.keep(template, for: shape, version: version)
        return (template, conjuncts)
    }

    /// The plan of a query from its template: the key bounds its values give.
    static func plan(
        _ t: Template,
        _ query: Query,
        _ conjuncts: [(FieldPath, Filter.Operator, Value)]
    ) -> Plan {
        var plan = Plan()
        plan.oneCollection = t.oneCollection
        plan.ordered = t.ordered
        plan.reverse = t.reverse
        plan.orderFieldsHeld = t.orderFieldsHeld
        guard let index = t.index else { return plan }
        // A collection index's keys start with the collection's path.
        var prefix: [UInt8] = []
        prefix.reserveCapacity(128)
        if case .collection(let c) = query.source { IndexKey.append(.string(c.description), to: &prefix) }
        for e in t.equalities { IndexKey.append(conjuncts[e.conjunct].2, descending: e.descending, to: &prefix) }
        plan.index = index
        plan.lower = prefix
        plan.upper = prefix + [IndexKey.top]
        switch t.range {
        case .none:
            break
        case .exact(let ranges, let field):
            // The same shape has the same types, so this cannot fail; were it to, every filter
            // is checked on the index's whole prefix, which is slower and as right.
            guard let exact = Self.exactTimestampRange(ranges.map { conjuncts[$0] }, field: field, prefix: prefix)
            else { return plan }
            (plan.lower, plan.upper) = exact
        case .inclusive(let lows, let highs, let typeOrder, let descending):
            let low = lows.map { conjuncts[$0].2 }.max { Value.compare($0, $1) < 0 }
            let high = highs.map { conjuncts[$0].2 }.min { Value.compare($0, $1) < 0 }
            (plan.lower, plan.upper) = Self.rangeKeys(
                prefix: prefix,
                low: low,
                high: high,
                typeOrder: typeOrder,
                descending: descending
            )
        }
        plan.residual = t.residual.map { $0.map { query.filters[$0] } }
        return plan
    }

    /// Chooses the index for a query: the one whose leading fields the most equalities fix, then
    /// one with a range, then one in the query's order.
    func template(
        _ query: Query,
        _ conjuncts: [(FieldPath, Filter.Operator, Value)],
        _ indexes: [StoredIndex]
    ) -> Template {
        let orders = Self.effectiveOrders(query)
        // A handful of fields: a list compares faster than a set hashes them.
        let constrained = conjuncts.map(\.0) + orders.map(\.field)
        let wantedScope: IndexDefinition.Scope
        var fallback = Template(orders: orders)
        switch query.source {
        case .collection:
            wantedScope = .collection
            fallback.oneCollection = true
            fallback.ordered = orders.count == 1 && !orders[0].descending
        case .group:
            wantedScope = .collectionGroup
        }
        var best: (score: Int, template: Template)?
        for index in indexes where index.definition.scope == wantedScope {
            let fields = index.definition.fields
            guard fields.allSatisfy({ constrained.contains($0.path) }) else { continue }
            var t = Template(orders: orders, index: index)
            var k = 0
            var equalityFields: [FieldPath] = []
            while k < fields.count,
                let eq = conjuncts.firstIndex(where: { $0.0 == fields[k].path && $0.1 == .equal })
            {
                t.equalities.append((eq, fields[k].descending))
                equalityFields.append(fields[k].path)
                k += 1
            }
            t.orderFieldsHeld = orders.allSatisfy { o in
                o.field.isDocumentID || fields.contains { $0.path == o.field }
            }
            var hasRange = false
            if k < fields.count {
                let ranges = conjuncts.indices.filter { conjuncts[$0].0 == fields[k].path && conjuncts[$0].1.isRange }
                if let first = ranges.first {
                    hasRange = true
                    if Self.exactTimestampRange(ranges.map { conjuncts[$0] }, field: fields[k], prefix: []) != nil {
                        t.range = .exact(ranges, field: fields[k])
                        t.residual = query.filters.indices.filter { i in
                            guard case .field(let path, let op, let value) = query.filters[i] else { return true }
                            return !ranges.contains {
                                conjuncts[$0].0 == path && conjuncts[$0].1 == op && conjuncts[$0].2 == value
                            }
                        }
                    } else {
                        let op = { (i: Int) in conjuncts[i].1 }
                        t.range = .inclusive(
                            lows: ranges.filter { op($0) == .greaterThan || op($0) == .greaterThanOrEqual },
                            highs: ranges.filter { op($0) == .lessThan || op($0) == .lessThanOrEqual },
                            typeOrder: conjuncts[first].2.typeOrder,
                            descending: fields[k].descending
                        )
                    }
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
                    t.ordered = true
                } else if backward && nameDescending != indexNameDescending {
                    t.ordered = true
                    t.reverse = true
                }
            }
            guard k > 0 || hasRange || t.ordered else { continue }
            let score = k * 4 + (hasRange ? 2 : 0) + (t.ordered ? 1 : 0)
            if best == nil || score > best!.score { best = (score, t) }
        }
        return best?.template ?? fallback
    }
}

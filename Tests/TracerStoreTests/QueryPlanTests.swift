import Testing
import TracerTesting

@_spi(Blocking) @testable import TracerStore

/// Plans kept per query shape (`QueryEngine.template(for:)`): a kept plan must be the plan the
/// query's own values would have chosen, and a plan kept before an index was declared must not
/// outlive the catalog it was chosen in.
@Suite struct QueryPlanTests {
    /// What a plan decides, comparable.
    struct Decided: Equatable, CustomStringConvertible {
        var index: Int64?
        var lower: [UInt8]
        var upper: [UInt8]
        var ordered: Bool
        var reverse: Bool
        var oneCollection: Bool
        var orderFieldsHeld: Bool
        var residual: [Filter]?
        var orders: [Query.Order]

        init(_ plan: QueryEngine.Plan, _ orders: [Query.Order]) {
            index = plan.index?.id
            (lower, upper) = (plan.lower, plan.upper)
            (ordered, reverse, oneCollection) = (plan.ordered, plan.reverse, plan.oneCollection)
            orderFieldsHeld = plan.orderFieldsHeld
            residual = plan.residual
            self.orders = orders
        }

        var description: String {
            "index \(index.map(String.init) ?? "none") [\(lower), \(upper)) ordered \(ordered) reverse \(reverse) "
                + "residual \(residual.map { "\($0.count)" } ?? "all") orders \(orders.map(\.field))"
        }
    }

    /// A random query of few shapes and many values: the oracle suite's, with time windows.
    static func query(_ g: inout SplitMix64, _ source: Query.Source) -> Query {
        guard Bool.random(using: &g) else { return QueryPropertyTests.randomQuery(&g, source: source) }
        var q = source.isGroup ? Query(collectionGroup: "c") : Query(collection: source.collection!)
        let ops: [Filter.Operator] = [.lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual, .equal]
        for _ in 0..<Int.random(in: 1...3, using: &g) {
            let seconds = Double(Int.random(in: 0..<100, using: &g))
            let value: Value =
                Int.random(in: 0..<5, using: &g) == 0 ? .integer(1) : .timestamp(Timestamp(seconds: seconds))
            q = q.where(["t", "b"].randomElement(using: &g)!, ops.randomElement(using: &g)!, value)
        }
        return q
    }

    @Test func aKeptPlanIsThePlanTheQuerysOwnValuesChoose() throws {
        var g = SplitMix64(seed: 11)
        let (store, d) = try DocumentStore.temporary()
        _ = d
        try QueryPropertyTests.declareEveryIndex(store, also: [["t"]])
        let sources: [Query.Source] = [.collection(try CollectionPath("p/x/c")), .group("c")]
        var kept = 0
        var shapes = Set<QueryEngine.Shape>()
        try store.pool.read { db in
            let engine = QueryEngine(db: db, catalog: store.catalog)
            let indexes = try store.catalog.current(db).byCollection["c"] ?? []
            for n in 0..<3000 {
                let q = Self.query(&g, sources[n % 2])
                let conjuncts = q.filters.flatMap(\.conjuncts)
                let (template, _) = try engine.template(for: q)
                let fresh = engine.template(q, conjuncts, indexes)
                let got = Decided(QueryEngine.plan(template, q, conjuncts), template.orders)
                let want = Decided(QueryEngine.plan(fresh, q, conjuncts), fresh.orders)
                #expect(got == want, "\(q)\nkept  \(got)\nfresh \(want)")
                if let shape = QueryEngine.Shape(q) {
                    if shapes.contains(shape) { kept += 1 }
                    shapes.insert(shape)
                }
            }
        }
        // Most queries are of a shape seen before, so most plans above were kept ones.
        #expect(kept > 1000, "only \(kept) of 3,000 queries met a shape seen before")
    }

    @Test func aPlanKeptBeforeAnIndexIsDeclaredIsChosenAgainAfter() throws {
        let (store, d) = try DocumentStore.temporary()
        _ = d
        let c = try CollectionPath("p/x/c")
        for i in 0..<5 { try store.set(try c.document("d\(i)"), ["t": .timestamp(Timestamp(seconds: Double(i)))]) }
        let window = { (from: Double) in
            Query(collection: c).where("t", .greaterThanOrEqual, .timestamp(Timestamp(seconds: from)))
                .where("t", .lessThan, .timestamp(Timestamp(seconds: from + 2)))
        }
        #expect(try store.explain(window(1)).index == nil)
        #expect(try store.getDocuments(window(1)).map(\.id) == ["d1", "d2"])
        try store.declareIndex(IndexDefinition(collectionID: "c", scope: .collection, fields: [.init("t")]))
        #expect(try store.explain(window(2)).index?.fields.map(\.path) == ["t"])
        #expect(try store.getDocuments(window(2)).map(\.id) == ["d2", "d3"])
    }
}

extension Query.Source {
    fileprivate var isGroup: Bool {
        if case .group = self { return true }
        return false
    }

    fileprivate var collection: CollectionPath? {
        if case .collection(let c) = self { return c }
        return nil
    }
}

import Testing
import TracerTesting

@_spi(Blocking) @testable import TracerStore

@Suite struct QuerySemanticsTests {
    let store: DocumentStore
    let dir: TemporaryDirectory
    let things: CollectionPath

    init() throws {
        (store, dir) = try DocumentStore.temporary()
        things = try CollectionPath("things")
        let docs: [String: DocumentData] = [
            "n1": ["v": 1, "tags": ["a", "b"]],
            "n2": ["v": 2.5, "tags": ["c"]],
            "n3": ["v": .double(.nan)],
            "s": ["v": "1"],
            "null": ["v": .null],
            "none": ["other": true],
            "t": ["v": .timestamp(Timestamp(seconds: 0))],
            "arr": ["v": [1, 2]],
        ]
        for (id, data) in docs { try store.set(try things.document(id), data) }
    }

    func ids(_ q: Query) throws -> [String] {
        try store.getDocuments(q).map(\.id)
    }

    @Test func equalityMatchesAcrossIntegerAndDouble() throws {
        #expect(try ids(Query(collection: things).where("v", .equal, 1.0)) == ["n1"])
        #expect(try ids(Query(collection: things).where("v", .equal, .double(.nan))) == ["n3"])
        #expect(try ids(Query(collection: things).where("v", .equal, .null)) == ["null"])
    }

    @Test func notEqualAndNotInNeverMatchAMissingField() throws {
        // An inequality orders by its field (then by name) unless told otherwise.
        #expect(try ids(Query(collection: things).where("v", .notEqual, 1)) == ["null", "n3", "n2", "t", "s", "arr"])
        #expect(try ids(Query(collection: things).where("v", .notIn, [1, "1"])) == ["null", "n3", "n2", "t", "arr"])
        #expect(try ids(Query(collection: things).where("v", .notIn, [1, .null])) == [])
    }

    @Test func rangesMatchOnlyTheirOwnType() throws {
        // Ordered by v, then name: NaN sorts before every other number.
        #expect(try ids(Query(collection: things).where("v", .greaterThan, 0)) == ["n1", "n2"])
        #expect(try ids(Query(collection: things).where("v", .lessThan, 100)) == ["n3", "n1", "n2"])
        #expect(try ids(Query(collection: things).where("v", .greaterThanOrEqual, "")) == ["s"])
    }

    @Test func arrayOperators() throws {
        #expect(try ids(Query(collection: things).where("tags", .arrayContains, "c")) == ["n2"])
        #expect(try ids(Query(collection: things).where("tags", .arrayContainsAny, ["a", "c"])) == ["n1", "n2"])
        #expect(try ids(Query(collection: things).where("v", .in, [2.5, "1", [1, 2]])) == ["arr", "n2", "s"])
    }

    @Test func orderByFollowsTypeOrderAndDropsMissingFields() throws {
        #expect(try ids(Query(collection: things).order(by: "v")) == ["null", "n3", "n1", "n2", "t", "s", "arr"])
        #expect(try ids(Query(collection: things).order(by: "v", descending: true).limit(2)) == ["arr", "s"])
    }

    @Test func orFilters() throws {
        let q = Query(collection: things).where(.or([.field("v", .equal, 1), .field("other", .equal, true)]))
        #expect(try ids(q) == ["n1", "none"])
    }

    @Test func cursorsAndLimitToLast() throws {
        let byV = Query(collection: things).where("v", .in, [1, 2.5, "1", .null]).order(by: "v")
        #expect(try ids(byV) == ["null", "n1", "n2", "s"])
        #expect(try ids(byV.start(at: 1)) == ["n1", "n2", "s"])
        #expect(try ids(byV.start(after: 1)) == ["n2", "s"])
        #expect(try ids(byV.end(at: 2.5)) == ["null", "n1", "n2"])
        #expect(try ids(byV.end(before: 2.5)) == ["null", "n1"])
        #expect(try ids(byV.limit(toLast: 2)) == ["n2", "s"])
        #expect(try ids(byV.start(at: 2.5, "n2")) == ["n2", "s"])
        #expect(try ids(byV.start(after: 2.5, "n2")) == ["s"])
    }

    @Test func collectionGroupQueriesReachEveryDepth() throws {
        try store.set(try DocumentPath("beacons/b1/interactions/i1"), ["d": 1])
        try store.set(try DocumentPath("beacons/b2/interactions/i2"), ["d": 2])
        try store.set(try DocumentPath("sites/s/beacons/b3/interactions/i3"), ["d": 3])
        try store.set(try DocumentPath("interactions/top"), ["d": 4])
        let q = Query(collectionGroup: "interactions").where("d", .greaterThan, 1).order(by: "d", descending: true)
        #expect(
            try store.getDocuments(q).map(\.path.description) == [
                "interactions/top", "sites/s/beacons/b3/interactions/i3", "beacons/b2/interactions/i2",
            ]
        )
        #expect(try store.count(Query(collectionGroup: "interactions")) == 4)
    }

    @Test func rejectsMalformedQueries() {
        #expect(throws: StoreError.self) { try store.getDocuments(Query(collection: things).where("v", .in, [])) }
        #expect(throws: StoreError.self) {
            try store.getDocuments(Query(collection: things).where("v", .in, .array(Array(repeating: 1, count: 31))))
        }
        #expect(throws: StoreError.self) { try store.getDocuments(Query(collection: things).limit(toLast: 1)) }
        #expect(throws: StoreError.self) { try store.getDocuments(Query(collection: things).start(at: 1, 2)) }
        #expect(throws: StoreError.self) {
            try store.getDocuments(Query(collection: things).where("v", .equal, .serverTimestamp))
        }
    }

    @Test func filterTextParses() throws {
        #expect(
            try Filter.parse(#"proximity in ["near", "immediate"]"#) == .field("proximity", .in, ["near", "immediate"])
        )
        #expect(try Filter.parse("`odd field` >= 3") == .field(try FieldPath(["odd field"]), .greaterThanOrEqual, 3))
        #expect(throws: StoreError.self) { try Filter.parse("proximity == near") }
        #expect(throws: StoreError.self) { try Filter.parse("a ~ 1") }
        #expect(throws: StoreError.self) { try Filter.parse("a") }
    }
}

/// Random documents and random queries: a store with indexes, one without, and a brute-force
/// oracle written here must give the same answers.
@Suite struct QueryPropertyTests {
    static let fields: [FieldPath] = ["a", "b", "m.x"]

    static func randomDocument(_ g: inout SplitMix64) -> DocumentData {
        var data: DocumentData = [:]
        if Int.random(in: 0..<5, using: &g) > 0 { data["a"] = smallValue(&g) }
        if Int.random(in: 0..<5, using: &g) > 0 { data["b"] = .integer(Int64.random(in: 0..<4, using: &g)) }
        if Bool.random(using: &g) { data["m"] = ["x": smallValue(&g)] }
        if Bool.random(using: &g) {
            data["tags"] = .array((0..<Int.random(in: 0..<3, using: &g)).map { _ in smallValue(&g) })
        }
        return data
    }

    static func smallValue(_ g: inout SplitMix64) -> Value {
        [.null, true, 0, 1, 2, 1.5, -1, .double(.nan), "a", "b", "", .timestamp(Timestamp(seconds: 5)), .bytes([1])]
            .randomElement(using: &g)!
    }

    static func randomQuery(_ g: inout SplitMix64, source: Query.Source) -> Query {
        var q: Query
        switch source {
        case .collection(let c): q = Query(collection: c)
        case .group(let id): q = Query(collectionGroup: id)
        }
        let ops: [Filter.Operator] = [
            .equal, .notEqual, .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual, .in, .notIn,
        ]
        for _ in 0..<Int.random(in: 0..<3, using: &g) {
            let field = fields.randomElement(using: &g)!
            let op = ops.randomElement(using: &g)!
            let value: Value = [.in, .notIn].contains(op) ? [smallValue(&g), smallValue(&g)] : smallValue(&g)
            q = q.where(field, op, value)
        }
        if Int.random(in: 0..<6, using: &g) == 0 {
            q = q.where("tags", .arrayContains, smallValue(&g))
        }
        for _ in 0..<Int.random(in: 0..<3, using: &g) {
            q = q.order(by: fields.randomElement(using: &g)!, descending: Bool.random(using: &g))
        }
        if Bool.random(using: &g) {
            let n = Int.random(in: 0..<6, using: &g)
            q = !q.orders.isEmpty && Bool.random(using: &g) ? q.limit(toLast: n) : q.limit(n)
        }
        if !q.orders.isEmpty, Int.random(in: 0..<3, using: &g) == 0 {
            q.start = Query.Cursor(values: [smallValue(&g)], inclusive: Bool.random(using: &g))
        }
        if !q.orders.isEmpty, Int.random(in: 0..<4, using: &g) == 0 {
            q.end = Query.Cursor(values: [smallValue(&g)], inclusive: Bool.random(using: &g))
        }
        return q
    }

    /// The answer worked out by brute force, independently of the engine's planner.
    static func oracle(_ docs: [DocumentSnapshot], _ q: Query) -> [String] {
        var orders = q.orders
        for f in Set(q.filters.flatMap(\.allFields).filter { $0.1.isInequality }.map(\.0)).sorted(by: {
            $0.description < $1.description
        })
        where !orders.contains(where: { $0.field == f }) {
            orders.append(Query.Order(f))
        }
        let nameDescending = orders.last?.descending ?? false
        func cmp(_ a: DocumentSnapshot, _ b: DocumentSnapshot) -> Int {
            for o in orders {
                let c = Value.compare(a[o.field]!, b[o.field]!)
                if c != 0 { return o.descending ? -c : c }
            }
            let c = a.path == b.path ? 0 : (a.path < b.path ? -1 : 1)
            return nameDescending ? -c : c
        }
        func position(_ d: DocumentSnapshot, _ cursor: Query.Cursor) -> Int {
            for (v, o) in zip(cursor.values, orders) {
                let c = Value.compare(d[o.field]!, v)
                if c != 0 { return o.descending ? -c : c }
            }
            return 0
        }
        var result = docs.filter { d in
            orders.allSatisfy { d[$0.field] != nil } && q.filters.allSatisfy { $0.matches(d) }
        }.sorted { cmp($0, $1) < 0 }
        if let s = q.start { result = result.filter { s.inclusive ? position($0, s) >= 0 : position($0, s) > 0 } }
        if let e = q.end { result = result.filter { e.inclusive ? position($0, e) <= 0 : position($0, e) < 0 } }
        if let n = q.limit {
            result = q.limitToLast ? Array(result.suffix(n)) : Array(result.prefix(n))
        }
        return result.map(\.path.description)
    }

    /// Every shape of index the planner can pick on collection "c": equality prefixes, ranges,
    /// descending fields, both scopes.
    static func declareEveryIndex(_ store: DocumentStore, also: [[String]] = []) throws {
        for scope in [IndexDefinition.Scope.collection, .collectionGroup] {
            for fields in [["a"], ["b", "a"], ["a", "b"], ["m.x"], ["b", "m.x"]] + also {
                for descending in [false, true] {
                    try store.declareIndex(
                        IndexDefinition(
                            collectionID: "c",
                            scope: scope,
                            fields: fields.enumerated().map { i, f in
                                .init(FieldPath(stringLiteral: f), descending: descending && i == fields.count - 1)
                            }
                        )
                    )
                }
            }
        }
    }

    @Test(arguments: [1, 2, 3])
    func indexedPlainAndOracleAgree(seed: UInt64) throws {
        var g = SplitMix64(seed: seed)
        let (indexed, d1) = try DocumentStore.temporary()
        let (plain, d2) = try DocumentStore.temporary()
        _ = (d1, d2)
        try Self.declareEveryIndex(indexed)
        let parents = [try CollectionPath("c"), try CollectionPath("p/x/c"), try CollectionPath("p/y/c")]
        var all: [DocumentSnapshot] = []
        var batch = WriteBatch()
        for i in 0..<300 {
            let path = try parents[i % 3].document(String(format: "d%03d", (i * 7919) % 1000))
            let data = Self.randomDocument(&g)
            batch.set(path, data)
            all.append(DocumentSnapshot(path: path, data: data))
        }
        try indexed.commit(batch)
        try plain.commit(batch)
        var usedIndex = 0
        for n in 0..<400 {
            let source: Query.Source = n % 2 == 0 ? .collection(parents[1]) : .group("c")
            let q = Self.randomQuery(&g, source: source)
            let scoped = all.filter { d in
                if case .collection(let c) = source { return d.path.parent == c }
                return true
            }
            let expected = Self.oracle(scoped, q)
            let fromIndexed = try indexed.getDocuments(q).map(\.path.description)
            let fromPlain = try plain.getDocuments(q).map(\.path.description)
            let explanation = try indexed.explain(q)
            #expect(fromIndexed == expected, "\(q)\n\(explanation)\ngot \(fromIndexed)\nwant \(expected)")
            #expect(fromPlain == expected, "\(q)\ngot \(fromPlain)\nwant \(expected)")
            if try indexed.explain(q).index != nil { usedIndex += 1 }
        }
        #expect(usedIndex > 100, "the random queries should exercise the indexes")
    }

    /// Time windows, the hot query, whose bounds the index decides exactly (the filters are not
    /// checked again on each candidate): every strict and non-strict bound, one or two, at and
    /// between stored times, with documents of other types and none in the field, against the
    /// oracle, on a collection index and a group index.
    @Test func timeWindowsOnAnIndexMatchTheOracleAtEveryBound() throws {
        var g = SplitMix64(seed: 7)
        let (indexed, d) = try DocumentStore.temporary()
        _ = d
        for scope in [IndexDefinition.Scope.collection, .collectionGroup] {
            try indexed.declareIndex(IndexDefinition(collectionID: "w", scope: scope, fields: [.init("t")]))
        }
        let parent = try CollectionPath("p/x/w")
        var all: [DocumentSnapshot] = []
        var batch = WriteBatch()
        for i in 0..<120 {
            let path = try parent.document(String(format: "d%03d", i))
            var data: DocumentData = ["n": .integer(Int64(i))]
            switch i % 10 {
            case 8: data["t"] = .integer(Int64(i % 20))
            case 9: break
            default: data["t"] = .timestamp(Timestamp(microseconds: Int64(i % 20) * 1_000_000 + Int64(i % 3)))
            }
            batch.set(path, data)
            all.append(DocumentSnapshot(path: path, data: data))
        }
        try indexed.commit(batch)
        let ops: [Filter.Operator] = [.lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual]
        var exact = 0
        for n in 0..<300 {
            var q = n % 2 == 0 ? Query(collection: parent) : Query(collectionGroup: "w")
            for _ in 0..<Int.random(in: 1...2, using: &g) {
                let at = Timestamp(
                    microseconds: Int64.random(in: 0..<21, using: &g) * 1_000_000 + Int64.random(in: 0..<3, using: &g)
                )
                q = q.where("t", ops.randomElement(using: &g)!, .timestamp(at))
            }
            if Int.random(in: 0..<4, using: &g) == 0 { q = q.where("n", .greaterThan, .integer(50)) }
            let expected = Self.oracle(all, q)
            let got = try indexed.getDocuments(q).map(\.path.description)
            #expect(got == expected, "\(q)\ngot \(got)\nwant \(expected)")
            if try indexed.explain(q).index != nil { exact += 1 }
        }
        #expect(exact == 300, "every window should be read from an index")
    }
}

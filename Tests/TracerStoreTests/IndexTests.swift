import Testing
import TracerTesting

@_spi(Blocking) @testable import TracerStore

@Suite struct IndexTests {
    let store: DocumentStore
    let dir: TemporaryDirectory

    init() throws {
        (store, dir) = try DocumentStore.temporary()
        var batch = WriteBatch()
        for b in 0..<5 {
            for i in 0..<50 {
                batch.set(
                    try DocumentPath("beacons/b\(b)/interactions/i\(i)"),
                    ["deviceId": .string("d\(i % 7)"), "start": .timestamp(Timestamp(seconds: Double(i * 30)))]
                )
            }
        }
        try store.commit(batch)
    }

    @Test func aDeviceQueryUsesTheDeclaredGroupIndex() throws {
        let index = IndexDefinition(collectionID: "interactions", scope: .collectionGroup, "deviceId", "start")
        let q = Query(collectionGroup: "interactions").where("deviceId", .equal, "d3")
            .where("start", .greaterThanOrEqual, .timestamp(Timestamp(seconds: 300))).order(by: "start")
        let before = try store.explain(q)
        #expect(before.index == nil)
        // Without the index: every document of every `interactions` collection, through their parents.
        #expect(before.databasePlan.joined().contains("parents_by_collection"), "\(before.databasePlan)")
        if !store.isPostgres {
            #expect(before.databasePlan.joined().contains("USING PRIMARY KEY (parent=?)"), "\(before.databasePlan)")
        }
        let expected = try store.getDocuments(q).map(\.path)

        try store.declareIndex(index)
        let after = try store.explain(q)
        #expect(after.index == index)
        #expect(after.orderedByIndex)
        // The database's own plan: a range search on the index entries' primary key, then a
        // primary-key lookup of each document. No scan, no sort.
        let plan = after.databasePlan.joined(separator: "\n")
        if store.isPostgres {
            #expect(plan.contains("Index Scan using index_entries_pkey on index_entries"), "\(plan)")
            #expect(plan.contains("Index Cond: ((idx = $1) AND (key >= $2) AND (key < $3))"), "\(plan)")
            #expect(plan.contains("Index Scan using documents_pkey on documents"), "\(plan)")
            #expect(!plan.contains("Seq Scan") && !plan.contains("Sort"), "\(plan)")
        } else {
            #expect(plan.contains("SEARCH index_entries USING PRIMARY KEY (idx=? AND key>? AND key<?)"), "\(plan)")
            #expect(plan.contains("SEARCH documents USING PRIMARY KEY (parent=? AND id=?)"), "\(plan)")
            #expect(!plan.contains("SCAN") && !plan.contains("TEMP B-TREE"), "\(plan)")
        }
        #expect(try store.getDocuments(q).map(\.path) == expected)
        #expect(expected.count == 30)
    }

    @Test func aTimeWindowOnOneBeaconUsesTheCollectionIndex() throws {
        try store.declareIndex(IndexDefinition(collectionID: "interactions", "start"))
        let q = Query(collection: try CollectionPath("beacons/b2/interactions"))
            .where("start", .greaterThanOrEqual, .timestamp(Timestamp(seconds: 600)))
            .where("start", .lessThan, .timestamp(Timestamp(seconds: 900)))
        let explanation = try store.explain(q)
        #expect(explanation.index?.fields.map(\.path) == ["start"])
        #expect(try store.getDocuments(q).map(\.id) == (20..<30).map { "i\($0)" })
    }

    @Test func indexesFollowUpdatesAndDeletes() throws {
        try store.declareIndex(IndexDefinition(collectionID: "interactions", scope: .collectionGroup, "deviceId"))
        let p = try DocumentPath("beacons/b0/interactions/i3")
        let q = Query(collectionGroup: "interactions").where("deviceId", .equal, "moved")
        try store.update(p, ["deviceId": "moved"])
        #expect(try store.getDocuments(q).map(\.path) == [p])
        try store.update(p, ["deviceId": .delete])
        #expect(try store.getDocuments(q).isEmpty)
        try store.set(p, ["deviceId": "moved"])
        try store.delete(p)
        #expect(try store.getDocuments(q).isEmpty)
        #expect(try store.explain(q).index != nil)
    }

    @Test func anotherProcessSeesADeclaredIndex() throws {
        let other = try DocumentStore(path: store.path)
        _ = try other.getDocuments(Query(collectionGroup: "interactions"))  // caches the empty catalogue
        try store.declareIndex(IndexDefinition(collectionID: "interactions", scope: .collectionGroup, "deviceId"))
        // The other handle must maintain the index on its writes.
        try other.set(try DocumentPath("beacons/b9/interactions/new"), ["deviceId": "fresh"])
        let q = Query(collectionGroup: "interactions").where("deviceId", .equal, "fresh")
        #expect(try store.explain(q).index != nil)
        #expect(try store.getDocuments(q).count == 1)
    }

    @Test func theStatementsCarryNoCallerText() throws {
        let hostile = "x'); DROP TABLE documents; --"
        try store.declareIndex(IndexDefinition(collectionID: "interactions", scope: .collectionGroup, "deviceId"))
        let q = Query(collectionGroup: "interactions").where("deviceId", .equal, .string(hostile))
        let explanation = try store.explain(q)
        #expect(!explanation.sql.contains(hostile) && !explanation.sql.contains("d3"))
        #expect(try store.getDocuments(q).isEmpty)
        #expect(try store.count(Query(collectionGroup: "interactions")) == 250)
    }
}

import Foundation
import Testing
import TracerTesting

@_spi(Blocking) @testable import TracerStore

@Suite struct WriteTests {
    let clock = ManualClock()
    let store: DocumentStore
    let dir: TemporaryDirectory

    init() throws {
        (store, dir) = try DocumentStore.temporary(clock: clock)
    }

    func path(_ p: String) throws -> DocumentPath { try DocumentPath(p) }

    @Test func setReplacesAndKeepsCreateTime() throws {
        let p = try path("beacons/b-101")
        try store.set(p, ["name": "Lab door", "major": 2])
        clock.advance(seconds: 5)
        try store.set(p, ["name": "Lab"])
        let doc = try store.get(p)
        #expect(doc.data == ["name": "Lab"])
        #expect(doc.createTime == Timestamp(seconds: 1_763_776_800))
        #expect(doc.updateTime == Timestamp(seconds: 1_763_776_805))
    }

    @Test func mergeSetsLeavesAndDeletesFields() throws {
        let p = try path("devices/d1")
        try store.set(p, ["status": "clear", "meta": ["a": 1, "b": 2], "gone": true])
        try store.set(p, ["meta": ["b": 3, "c": 4], "gone": .delete, "risk": "low"], merge: true)
        #expect(try store.get(p).data == ["status": "clear", "meta": ["a": 1, "b": 3, "c": 4], "risk": "low"])
    }

    @Test func updateReplacesAtFieldPaths() throws {
        let p = try path("devices/d1")
        try store.set(p, ["meta": ["a": 1, "b": 2], "n": 1])
        try store.update(p, ["meta.a": 10, "n": .delete, "`odd.key`": "x", "deep.new.field": true])
        #expect(
            try store.get(p).data == [
                "meta": ["a": 10, "b": 2], "odd.key": "x", "deep": ["new": ["field": true]],
            ]
        )
    }

    @Test func updateOfMissingDocumentFails() throws {
        #expect {
            try store.update(try path("devices/none"), ["a": 1])
        } throws: { ($0 as? StoreError)?.code == .notFound }
    }

    @Test func createIsCreateOnly() throws {
        let p = try path("reports/r1")
        try store.create(p, ["a": 1])
        #expect { try store.create(p, ["a": 2]) } throws: { ($0 as? StoreError)?.code == .alreadyExists }
        #expect(try store.get(p).data == ["a": 1])
    }

    @Test func sentinelsResolveAgainstTheStoredDocument() throws {
        let p = try path("devices/d1")
        try store.set(p, ["count": 1, "ratio": 0.5, "tags": ["a", "b"], "at": .serverTimestamp])
        clock.advance(seconds: 60)
        try store.update(
            p,
            [
                "count": .increment(Int64(2)), "ratio": .increment(0.25), "fresh": .increment(Int64(7)),
                "tags": .arrayUnion(["b", "c"]), "at": .serverTimestamp, "big": .increment(Int64.max),
            ]
        )
        try store.update(p, ["big": .increment(Int64(5))])
        let data = try #require(try store.get(p).data)
        #expect(data["count"] == 3)
        #expect(data["ratio"] == 0.75)
        #expect(data["fresh"] == 7)
        #expect(data["tags"] == ["a", "b", "c"])
        #expect(data["at"] == .timestamp(Timestamp(seconds: 1_763_776_860)))
        #expect(data["big"] == .integer(Int64.max))  // saturates rather than wrapping
        try store.update(p, ["tags": .arrayRemove(["a", "zzz"])])
        #expect(try store.get(p).data?["tags"] == ["b", "c"])
    }

    @Test func deleteRemovesOnlyTheDocument() throws {
        try store.set(try path("beacons/b1"), ["a": 1])
        try store.set(try path("beacons/b1/interactions/i1"), ["a": 1])
        try store.delete(try path("beacons/b1"))
        try store.delete(try path("beacons/never"))  // nothing there: no error
        #expect(!(try store.get(try path("beacons/b1")).exists))
        #expect(try store.get(try path("beacons/b1/interactions/i1")).exists)
    }

    @Test func addMakesRandomIDs() throws {
        let c = try CollectionPath("beacons/b1/interactions")
        let a = try store.add(c, ["n": 1])
        let b = try store.add(c, ["n": 2])
        #expect(a != b && a.id.count == 20 && a.parent == c)
        #expect(try store.getDocuments(Query(collection: c)).count == 2)
    }

    static let invalidData: [(DocumentData, String)] = [
        (["__x__": 1], "reserved"),
        (["a": [[1]]], "array may not directly contain an array"),
        (["a": [.serverTimestamp]], "inside an array"),
        (["a": .delete], "only for update and merging set"),
        (["": 1], "empty"),
        // The field named is the one at fault, not what was checked before it (an array's
        // elements come in order).
        (["a": [["x": 1], ["y": [[1]]]]], "field a.y)"),
    ]

    @Test(arguments: invalidData)
    func rejectsInvalidData(_ data: DocumentData, _ reason: String) throws {
        let p = try path("x/y")
        #expect {
            try store.set(p, data)
        } throws: { error in
            guard let e = error as? StoreError else { return false }
            return e.code == .invalidValue && e.description.contains(reason) && e.description.contains("x/y")
        }
        #expect(!(try store.get(p).exists))
    }

    @Test func rejectsDocumentsOverOneMebibyte() throws {
        let p = try path("x/big")
        let big = String(repeating: "a", count: 1_048_576)
        #expect { try store.set(p, ["s": .string(big)]) } throws: { ($0 as? StoreError)?.code == .tooLarge }
        try store.set(p, ["s": .string(String(repeating: "a", count: 1_048_000))])
        #expect(try store.get(p).exists)
    }

    /// A write checks the 1 MiB limit by the stored form's length and walks the data only when
    /// that could be over it (`WriteRules.stored(_:path:)`): the bound must hold for
    /// any document.
    @Test func firestoreSizeIsWithinFourTimesTheStoredForm() throws {
        var g = SplitMix64(seed: 46)
        let p = try path("beacons/b1/interactions/i1")
        for _ in 0..<5_000 {
            var data: DocumentData = [:]
            for _ in 0..<Int.random(in: 0..<6, using: &g) {
                data[RandomValues.string(&g, minLength: 1)] = RandomValues.value(&g)
            }
            let bound = WriteRules.nameSize(p) + 32 + 4 * DocumentCodec.encode(data).count
            #expect(WriteRules.size(of: data, path: p) <= bound, "\(data)")
        }
    }

    /// Integers count 8 bytes each and are stored in 2: 140,000 zeros are over the limit in a
    /// stored form of 280 kB, so the short stored form must not let them through.
    @Test func rejectsDocumentsOverTheLimitInAShortStoredForm() throws {
        let p = try path("x/zeros")
        let zeros = Value.array(Array(repeating: .integer(0), count: 140_000))
        #expect(DocumentCodec.encode(["z": zeros]).count < 300_000)
        #expect { try store.set(p, ["z": zeros]) } throws: { ($0 as? StoreError)?.code == .tooLarge }
        #expect(!(try store.get(p).exists))
        try store.set(p, ["z": .array(Array(repeating: .integer(0), count: 130_000))])
        #expect(try store.get(p).exists)
    }

    @Test func rejectsValuesNestedTooDeep() throws {
        var v: Value = 1
        for _ in 0..<21 { v = .map(["a": v]) }
        #expect { try store.set(try path("x/deep"), ["a": v]) } throws: { ($0 as? StoreError)?.code == .invalidValue }
    }

    @Test func batchesAreAtomicAndUncapped() throws {
        var batch = WriteBatch()
        for i in 0..<2_000 { batch.set(try path("beacons/b1/interactions/i\(i)"), ["i": .integer(Int64(i))]) }
        try store.commit(batch)
        #expect(try store.count(Query(collection: try CollectionPath("beacons/b1/interactions"))) == 2_000)

        var failing = WriteBatch()
        failing.set(try path("beacons/b2"), ["a": 1])
        failing.delete(try path("beacons/b1/interactions/i0"))
        failing.update(try path("beacons/missing"), ["a": 1])  // fails: nothing of the batch may land
        #expect(throws: StoreError.self) { try store.commit(failing) }
        #expect(!(try store.get(try path("beacons/b2")).exists))
        #expect(try store.get(try path("beacons/b1/interactions/i0")).exists)
    }

    @Test func transactionsReadThenWriteAtomically() throws {
        let p = try path("counters/c")
        try store.set(p, ["n": 0])
        for _ in 0..<10 {
            try store.runTransaction { tx in
                let n = try tx.get(p).data?["n"]?.doubleValue ?? 0
                tx.update(p, ["n": .integer(Int64(n) + 1)])
            }
        }
        #expect(try store.get(p).data?["n"] == 10)

        struct Abort: Error {}
        #expect(throws: Abort.self) {
            try store.runTransaction { tx in
                tx.set(p, ["n": 999])
                throw Abort()
            }
        }
        #expect(try store.get(p).data?["n"] == 10)

        #expect {
            try store.runTransaction { tx in
                tx.set(p, ["n": 1])
                _ = try tx.get(p)
            }
        } throws: { ($0 as? StoreError)?.description.contains("reads before its writes") == true }
    }

    @Test func concurrentTransactionsLoseNoIncrements() throws {
        let p = try path("counters/c")
        try store.set(p, ["n": 0])
        let store = self.store
        // Four threads at once, each through the command line's synchronous writes: the
        // transactions contend for the writer (the async face would queue them one by one).
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<50 {
                try? store.write { db in
                    try db.runTransaction { tx in
                        let n = try tx.get(p).data?["n"]?.doubleValue ?? 0
                        tx.set(p, ["n": .integer(Int64(n) + 1)])
                    }
                }
            }
        }
        #expect(try store.get(p).data?["n"] == 200)
    }

    @Test func fetchReadsDocumentsAndCollectionsInOneStatement() throws {
        try store.set(path("tokens/t1"), ["role": "device"])
        try store.set(path("devices/d1"), ["status": "exposed"])
        try store.set(path("devices/d1/exposures/b"), ["from": 2])
        try store.set(path("devices/d1/exposures/a"), ["from": 3])
        try store.set(path("devices/d2/exposures/c"), ["from": 1])
        let exposures = try CollectionPath("devices/d1/exposures")
        let fetched = try store.fetch(
            [path("tokens/t1"), path("devices/none"), path("devices/d1")],
            collections: [exposures, CollectionPath("devices/none/exposures")]
        )
        #expect(fetched.documents.map(\.path.description) == ["tokens/t1", "devices/none", "devices/d1"])
        #expect(fetched.documents.map(\.exists) == [true, false, true])
        #expect(fetched.documents[2] == (try store.get(path("devices/d1"))))
        // A collection's documents in the order of their ids, as a query of it reads them.
        #expect(fetched.collections.map { $0.map(\.path.id) } == [["a", "b"], []])
        #expect(fetched.collections[0] == (try store.getDocuments(Query(collection: exposures))))
        // Again, with the parents' ids now known to the connection (parameters, not lookups).
        let again = try store.fetch([path("devices/d1"), path("tokens/t1")], collections: [exposures])
        #expect(again.documents == [fetched.documents[2], fetched.documents[0]])
        #expect(again.collections == [fetched.collections[0]])
        #expect(try store.fetch([]).documents.isEmpty)
    }
}

/// SQLite's result codes are kept where they arise: a bind SQLite refuses is an error with its
/// code at the statement's step, never a statement run with that parameter left NULL.
@Suite(.disabled(if: TestBackend.isPostgres, "SQLite itself: the PostgreSQL pass would run it again"))
struct SQLiteErrorFunnelTests {
    @Test func aRefusedBindIsAnErrorWithSQLitesCode() throws {
        let dir = TemporaryDirectory("tracer-funnel")
        let c = try SQLiteConnection(path: dir.file("s.sqlite"))
        let s = try c.statement("SELECT ?1")
        s.bind(2, Int64(5))  // no parameter 2: SQLITE_RANGE
        let e = #expect(throws: StoreError.self) { _ = try s.step() }
        #expect(e?.sqliteCode == 25, "\(String(describing: e))")  // SQLITE_RANGE
        #expect(e?.code == .sqlite && e?.context == "SELECT ?1")
        // Reset, the statement runs again with good bindings.
        s.bind(1, Int64(7))
        #expect(try s.step())
        #expect(s.int64(0) == 7)
        s.reset()
    }
}

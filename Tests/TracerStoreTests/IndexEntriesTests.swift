import Testing
import TracerTesting

@_spi(Blocking) @testable import TracerStore

/// Covering reads: an index's values decoded from its keys, without the documents.
@Suite struct IndexEntriesTests {
    @Test func valuesComeBackFromTheKeysInOrderWithinTheRange() throws {
        let (store, dir) = try DocumentStore.temporary()
        _ = dir
        let index = IndexDefinition(collectionID: "interactions", "start", "deviceId", "end", "distance")
        try store.declareIndex(index)
        let c = try CollectionPath("beacons/k/interactions")
        let rows: [(Double, String, Double, Value)] = [
            (100, "b", 129, .double(1.25)), (0, "a\u{0}z", 29, .double(-0.5)), (200, "c", 229, .integer(3)),
            (300, "é", 329, .integer(Int64.max)), (100, "a", 129, .double(7)),
        ]
        for (n, r) in rows.enumerated() {
            try store.set(
                c.document("i\(n)"),
                [
                    "start": .timestamp(Timestamp(seconds: r.0)), "deviceId": .string(r.1),
                    "end": .timestamp(Timestamp(seconds: r.2)), "distance": r.3, "other": "not in the index",
                ]
            )
        }
        try store.set(c.document("nodistance"), ["start": .timestamp(Timestamp(seconds: 150)), "deviceId": "x"])
        try store.set(
            CollectionPath("beacons/elsewhere/interactions").document("o"),
            [
                "start": .timestamp(Timestamp(seconds: 150)), "deviceId": "y", "end": .timestamp(Timestamp(seconds: 1)),
                "distance": 1.0,
            ]
        )

        let entries = try store.indexEntries(
            index,
            in: c,
            from: .timestamp(Timestamp(seconds: 100)),
            through: .timestamp(Timestamp(seconds: 300))
        )
        #expect(
            entries.map { $0.path?.description ?? "" } == [
                "beacons/k/interactions/i4", "beacons/k/interactions/i0", "beacons/k/interactions/i2",
                "beacons/k/interactions/i3",
            ]
        )
        #expect(
            entries[0].values == [
                .timestamp(Timestamp(seconds: 100)), "a", .timestamp(Timestamp(seconds: 129)), .double(7),
            ]
        )
        #expect(entries[1].values[3] == .double(1.25))
        #expect(entries[2].values[3].doubleValue == 3)
        #expect(entries[3].values[1] == "é" && entries[3].values[3] == .integer(Int64.max))
        let all = try store.indexEntries(
            index,
            in: c,
            from: .timestamp(Timestamp(seconds: 0)),
            through: .timestamp(Timestamp(seconds: 0))
        )
        #expect(all.map { $0.values[1] } == [.string("a\u{0}z")])
        #expect(all.first?.values[3] == .double(-0.5))
        let bare = try store.indexEntries(
            index,
            in: c,
            from: .timestamp(Timestamp(seconds: 100)),
            through: .timestamp(Timestamp(seconds: 300)),
            paths: false
        )
        #expect(bare.map(\.values) == entries.map(\.values) && bare.allSatisfy { $0.path == nil })
        #expect(throws: StoreError.self) {
            try store.indexEntries(
                IndexDefinition(collectionID: "interactions", "start", "samples"),
                in: c,
                from: .null,
                through: .null
            )
        }
    }

    /// One device's windows across every beacon, by (deviceId, start), from a group index alone.
    @Test func aGroupIndexGivesOneValuesRangeAcrossCollectionsWithPaths() throws {
        let (store, dir) = try DocumentStore.temporary()
        _ = dir
        let index = IndexDefinition(
            collectionID: "interactions",
            scope: .collectionGroup,
            "deviceId",
            "start",
            "end",
            "distance"
        )
        try store.declareIndex(index)
        let rows: [(String, String, Double, Double)] = [
            ("a", "d", 100, 1.5), ("b", "d", 50, 2), ("a", "d", 400, 3), ("a", "e", 100, 4), ("c", "d\u{0}", 100, 5),
        ]
        for (n, r) in rows.enumerated() {
            try store.set(
                CollectionPath("beacons/\(r.0)/interactions").document("i\(n)"),
                [
                    "deviceId": .string(r.1), "start": .timestamp(Timestamp(seconds: r.2)),
                    "end": .timestamp(Timestamp(seconds: r.2 + 29)), "distance": .double(r.3),
                ]
            )
        }
        let entries = try store.groupIndexEntries(
            index,
            equal: "d",
            from: .timestamp(Timestamp(seconds: 50)),
            through: .timestamp(Timestamp(seconds: 100))
        )
        #expect(
            entries.map { $0.path?.description ?? "" } == ["beacons/b/interactions/i1", "beacons/a/interactions/i0"]
        )
        #expect(
            entries.last?.values == [
                "d", .timestamp(Timestamp(seconds: 100)), .timestamp(Timestamp(seconds: 129)), .double(1.5),
            ]
        )
        #expect(throws: StoreError.self) {
            try store.groupIndexEntries(
                IndexDefinition(collectionID: "interactions", "start", "deviceId"),
                equal: "d",
                from: .null,
                through: .null
            )
        }
    }
}

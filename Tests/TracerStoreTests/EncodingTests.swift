import Foundation
import Testing
import TracerTesting

@_spi(Blocking) @testable import TracerStore

/// The stored form (schema 2): documents in `DocumentCodec`'s binary, parents interned, and a
/// schema-1 store written by an earlier tracer upgraded in place.
@Suite struct EncodingTests {
    static let path = try! DocumentPath("c/d")

    @Test func everyValueRoundTrips() throws {
        var g = SplitMix64(seed: 7)
        for _ in 0..<20_000 {
            var fields: DocumentData = [:]
            for _ in 0..<Int.random(in: 0..<6, using: &g) {
                fields[RandomValues.string(&g, minLength: 1)] = RandomValues.value(&g)
            }
            let decoded = try DocumentCodec.decode(DocumentCodec.encode(fields), path: Self.path)
            // Compared as JSON text: NaN is not equal to itself, and -0.0 must stay -0.0.
            #expect(JSON.string(decoded) == JSON.string(fields))
        }
        let edges: DocumentData = [
            "min": .integer(.min), "max": .integer(.max), "negZero": .double(-0.0), "nan": .double(.nan),
            "early": .timestamp(Timestamp(microseconds: .min)), "late": .timestamp(Timestamp(microseconds: .max)),
            "empty": "", "bytes": .bytes([0, 255]), "deep": ["a": ["b": ["c": [1, "x", ["k": .null]]]]],
            "long": .string(String(repeating: "é", count: 70_000)),
        ]
        let decoded = try DocumentCodec.decode(DocumentCodec.encode(edges), path: Self.path)
        #expect(JSON.string(decoded) == JSON.string(edges))
    }

    /// A document read from the store decodes only the fields asked for, and the whole of it
    /// when `data` is read: the same values either way.
    @Test func lazyFieldsMatchTheDecodedDocument() throws {
        var g = SplitMix64(seed: 3)
        for _ in 0..<3_000 {
            var fields: DocumentData = [:]
            for _ in 0..<Int.random(in: 1..<6, using: &g) {
                fields[RandomValues.string(&g, minLength: 1)] = RandomValues.value(&g)
            }
            let lazy = try DocumentCodec.encode(fields).withUnsafeBufferPointer {
                try DocumentFields.read($0, path: Self.path)
            }
            for (key, value) in fields {
                let field = try FieldPath([key])
                #expect(lazy.value(at: field).map { JSON.string($0) } == JSON.string(value))
                if case .map(let inner) = value, let (k, v) = inner.first {
                    #expect(lazy.value(at: try FieldPath([key, k])).map { JSON.string($0) } == JSON.string(v))
                }
            }
            #expect(lazy.value(at: try FieldPath(["not-a-field-\u{1F600}"])) == nil)
            #expect(JSON.string(lazy.all) == JSON.string(fields))
        }
        // Canonically equal names find each other, as in a dictionary: é composed and not.
        let lazy = try DocumentCodec.encode(["caf\u{E9}": 1]).withUnsafeBufferPointer {
            try DocumentFields.read($0, path: Self.path)
        }
        #expect(lazy.value(at: try FieldPath(["cafe\u{301}"])) == 1)
    }

    /// Schema 1's JSON text is still read (a row no upgrade has touched).
    @Test func jsonTextStillDecodes() throws {
        let text = Array(#"{"a":1,"t":{"__time__":"2026-11-22T10:00:00Z"}}"#.utf8)
        #expect(
            try DocumentCodec.decode(text, path: Self.path)
                == ["a": 1, "t": .timestamp(Timestamp(seconds: 1_795_341_600))]
        )
    }

    /// Damaged bytes are an error naming the document, never a trap or a wrong document.
    @Test func damageIsAnErrorNotACrash() throws {
        var g = SplitMix64(seed: 11)
        var refused = 0
        for _ in 0..<5_000 {
            var fields: DocumentData = [:]
            for _ in 0..<4 { fields[RandomValues.string(&g, minLength: 1)] = RandomValues.value(&g) }
            var bytes = DocumentCodec.encode(fields)
            if Bool.random(using: &g) {
                bytes.removeLast(Int.random(in: 1...bytes.count, using: &g))
            } else {
                let i = Int.random(in: 0..<bytes.count, using: &g)
                bytes[i] ^= UInt8.random(in: 1...255, using: &g)
            }
            // The check a read makes (before decoding lazily) agrees with the decoder.
            let wellFormed = bytes.withUnsafeBufferPointer { DocumentCodec.isWellFormed($0) }
            do {
                _ = try DocumentCodec.decode(bytes, path: Self.path)
                #expect(wellFormed || bytes.first != DocumentCodec.documentTag)
            } catch let e as StoreError {
                #expect(e.context == "c/d")
                #expect(!wellFormed)
                refused += 1
            }
        }
        #expect(refused > 2_500, "damage went unnoticed too often: \(refused) of 5000 refused")
    }
}

/// Collection paths interned in `parents`: what a rolled-back transaction interned is
/// forgotten, so that no document is written under an id the table never kept.
@Suite struct ParentTests {
    struct Refused: Error {}

    @Test func aRolledBackTransactionLeavesNoOrphans() throws {
        let (store, dir) = try DocumentStore.temporary()
        _ = dir
        let path = try DocumentPath("rooms/r1/visits/v1")
        #expect(throws: Refused.self) {
            try store.runTransaction { t in
                t.set(path, ["n": 1])
                throw Refused()
            }
        }
        // A batch that fails part-way (its second write) rolls back its first one's interning.
        var batch = WriteBatch()
        batch.set(try DocumentPath("rooms/r2/visits/v1"), ["n": 1])
        batch.create(try DocumentPath("rooms/r2/visits/v1"), ["n": 2])
        #expect(throws: StoreError.self) { try store.commit(batch) }

        try store.set(path, ["n": 2])
        try store.set(try DocumentPath("rooms/r2/visits/v2"), ["n": 3])
        // Read through the parents table (a join), not only by the cached id.
        var exported: [String] = []
        try store.export(.all) { exported.append($0.path.description) }
        #expect(exported == ["rooms/r1/visits/v1", "rooms/r2/visits/v2"])
        #expect(try store.getDocuments(Query(collectionGroup: "visits")).count == 2)
        #expect(try store.getDocuments(Query(collection: try CollectionPath("rooms/r1/visits"))).count == 1)
        #expect(try store.get(path).data == ["n": 2])
        #expect(try store.integrityCheck() == "ok")
    }
}

/// A store written by tracer before schema 2 (Tests/Fixtures/store-v1: JSON documents, parent
/// paths as text), opened by this one.
@Suite struct UpgradeTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/store-v1")

    func copy(into dir: TemporaryDirectory) throws -> String {
        let path = dir.file("store.sqlite")
        try FileManager.default.copyItem(
            atPath: Self.fixtures.appendingPathComponent("store.sqlite").path,
            toPath: path
        )
        return path
    }

    static func schema(_ path: String) throws -> Int64 {
        let db = try SQLiteConnection(path: path)
        return try db.scalar("PRAGMA user_version") ?? -1
    }

    @Test func aSchema1StoreIsUpgradedInPlaceAndReadsTheSame() throws {
        let dir = TemporaryDirectory()
        let path = try copy(into: dir)
        #expect(try Self.schema(path) == 1)
        let store = try DocumentStore(path: path)
        #expect(try Self.schema(path) == 2)
        #expect(try store.integrityCheck() == "ok")

        // Every document, byte for byte what the earlier tracer exported.
        var lines: [String] = []
        try store.export(.all) { lines.append(DocumentStore.exportLine($0)) }
        let expected = try String(contentsOf: Self.fixtures.appendingPathComponent("export.jsonl"), encoding: .utf8)
        #expect(lines == expected.split(separator: "\n").map(String.init))
        #expect(lines.count == 123)

        // The change log keeps its sequence numbers: a listener or replica resuming from a
        // token taken before the upgrade misses nothing and sees nothing twice.
        #expect(try store.currentToken() == 125)
        let tail = try store.outbox(after: 120, limit: 100)
        // After token 120: misc/kinds and misc/gone imported, misc/gone deleted, the map
        // published, a token created.
        let paths = tail.entries.map(\.path.description)
        #expect(paths.count == 4 && Array(paths.prefix(3)) == ["misc/kinds", "misc/gone", "config/site"], "\(paths)")
        #expect(paths.last?.hasPrefix("tokens/") == true)
        #expect(tail.entries.map { $0.json == nil } == [false, true, false, false])
        #expect(tail.through == 125)

        // The declared indexes still serve their queries, and agree with a scan.
        #expect(try store.indexes().count == 3)
        let byDevice = Query(collectionGroup: "interactions").where(
            "deviceId",
            .equal,
            "f7826da6-4fa2-4e98-8024-bc5b71e0893e:1:3"
        )
        .order(by: "start")
        #expect(try store.explain(byDevice).index != nil)
        let viaIndex = try store.getDocuments(byDevice).map(\.path.description)
        let scanned = try store.getDocuments(Query(collectionGroup: "interactions")).filter {
            $0["deviceId"] == "f7826da6-4fa2-4e98-8024-bc5b71e0893e:1:3"
        }
        #expect(viaIndex.count == scanned.count && viaIndex.count > 10)
        #expect(Set(viaIndex) == Set(scanned.map(\.path.description)))

        // And it takes writes: a new parent, an old one, a deletion.
        try store.set(try DocumentPath("beacons/b-9/interactions/new"), ["deviceId": "x", "start": .serverTimestamp])
        try store.set(try DocumentPath("beacons/b-0/interactions/w000"), ["deviceId": "y"])
        try store.delete(try DocumentPath("misc/kinds"))
        #expect(try store.currentToken() == 128)
        #expect(try store.get("beacons/b-0/interactions/w000").data == ["deviceId": "y"])
        #expect(try store.get("misc/kinds").exists == false)
        #expect(try store.integrityCheck() == "ok")
    }

    /// Opening it again (or by a second process at once) does not upgrade twice.
    @Test func theUpgradeRunsOnce() throws {
        let dir = TemporaryDirectory()
        let path = try copy(into: dir)
        let first = try DocumentStore(path: path)
        let second = try DocumentStore(path: path)
        #expect(try first.currentToken() == second.currentToken())
        var count = 0
        try second.export(.all) { _ in count += 1 }
        #expect(count == 123)
    }

    /// A store from a newer tracer is refused with a clear message, and left as it was.
    @Test func aNewerSchemaIsRefused() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("newer.sqlite")
        do {
            let db = try SQLiteConnection(path: path)
            try db.execute("PRAGMA user_version = 99")
        }
        #expect {
            try DocumentStore(path: path)
        } throws: { error in
            (error as? StoreError)?.message.contains("newer tracer (schema 99, this one knows 2)") == true
        }
        #expect(try Self.schema(path) == 99)
    }
}

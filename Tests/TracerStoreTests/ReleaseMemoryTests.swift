import Foundation
import Testing
import TracerTesting

@testable import TracerStore

/// `releaseMemory` (a server after a very large batch) frees the connections' caches and
/// nothing else: every document reads back the same, listeners and writes go on, and the store
/// passes its integrity check (on PostgreSQL it does nothing).
@Suite struct ReleaseMemoryTests {
    @Test func theStoreIsTheSameAfterItsCachesAreReleased() async throws {
        let (store, dir) = try DocumentStore.temporary()
        _ = dir
        let collection = try CollectionPath("things")
        try await store.writing { db in
            var batch = WriteBatch()
            for i in 0..<2_000 {
                batch.set(
                    try collection.document("t\(i)"),
                    ["n": .integer(Int64(i)), "text": .string(String(repeating: "x", count: 200))]
                )
            }
            try db.commit(batch)
        }
        let before = try await store.reading { db in try db.getDocuments(Query(collection: collection)).map(\.data) }
        #expect(before.count == 2_000)
        await store.releaseMemory()
        let after = try await store.reading { db in try db.getDocuments(Query(collection: collection)).map(\.data) }
        #expect(after == before)
        try await store.writing { db in try db.set(try collection.document("t-new"), ["n": 1]) }
        await store.releaseMemory()
        let count = try await store.reading { db in try db.getDocuments(Query(collection: collection)).count }
        #expect(count == 2_001)
        #expect(try await store.reading { db in try db.integrityCheck() } == "ok")
    }
}

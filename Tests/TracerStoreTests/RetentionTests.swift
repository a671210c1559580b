import Testing
import TracerTesting

@_spi(Blocking) @testable import TracerStore

@Suite struct RetentionTests {
    @Test(arguments: [false, true])
    func purgeDeletesOnlyOldDocumentsInBoundedBatches(indexed: Bool) throws {
        let clock = ManualClock()
        let (store, dir) = try DocumentStore.temporary(clock: clock)
        _ = dir
        if indexed {
            try store.declareIndex(IndexDefinition(collectionID: "interactions", scope: .collectionGroup, "start"))
        }
        let now = clock.now()
        var batch = WriteBatch()
        for b in 0..<3 {
            for day in 0..<20 {
                for n in 0..<10 {
                    batch.set(
                        try DocumentPath("beacons/b\(b)/interactions/d\(day)-\(n)"),
                        [
                            "start": .timestamp(now.adding(seconds: -Double(day) * 86_400 - Double(n))),
                            "day": .integer(Int64(day)),
                        ]
                    )
                }
            }
        }
        // Old, but not an interaction: the purge leaves it.
        batch.set(try DocumentPath("beacons/b0"), ["start": .timestamp(now.adding(seconds: -100 * 86_400))])
        try store.commit(batch)

        let removed = Collector<Int>()
        let registration = try store.addListener(Query(collectionGroup: "interactions")) { s in
            removed.add(s.changes.filter { $0.kind == .removed }.count)
        }
        defer { registration.cancel() }
        _ = removed.next()

        var progress: [Int] = []
        let cutoff = now.adding(seconds: -14 * 86_400 + 0.5)
        let n = try store.purge(collectionGroup: "interactions", field: "start", olderThan: cutoff, batchSize: 40) {
            progress.append($0)
        }
        // Days 14…19 are older than 14 days (day 14's first document is exactly at the cut-off - 0.5 s).
        #expect(n == 3 * 6 * 10 - 1 + 1)
        #expect(progress.count >= 5 && progress.last == n)
        let left = try store.getDocuments(Query(collectionGroup: "interactions"))
        #expect(left.count == 600 - n)
        #expect(left.allSatisfy { $0["start"]!.timestampValue! >= cutoff })
        #expect(try store.get(try DocumentPath("beacons/b0")).exists)
        var seen = 0
        while seen < n, let k = removed.next() { seen += k }
        #expect(seen == n)
    }
}

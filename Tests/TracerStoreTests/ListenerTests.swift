import Foundation
import Synchronization
import Testing
import TracerTesting

@_spi(Blocking) @testable import TracerStore

@Suite struct ListenerTests {
    let store: DocumentStore
    let dir: TemporaryDirectory
    let interactions: CollectionPath

    init() throws {
        (store, dir) = try DocumentStore.temporary()
        interactions = try CollectionPath("beacons/b1/interactions")
    }

    func doc(_ id: String) throws -> DocumentPath { try interactions.document(id) }

    func summary(_ s: QuerySnapshot) -> [String] {
        s.changes.map { "\($0.kind.rawValue) \($0.document.id) \($0.oldIndex) \($0.newIndex)" }
    }

    @Test func queryListenerGetsInitialSnapshotThenChanges() throws {
        try store.set(try doc("a"), ["d": 1.0, "p": "near"])
        try store.set(try doc("b"), ["d": 5.0, "p": "far"])
        let got = Collector<QuerySnapshot>()
        let q = Query(collection: interactions).where("d", .lessThan, 4).order(by: "d")
        let registration = try store.addListener(q) { got.add($0) }
        defer { registration.cancel() }

        let first = try #require(got.next())
        #expect(first.documents.map(\.id) == ["a"])
        #expect(summary(first) == ["added a -1 0"])

        try store.set(try doc("c"), ["d": 0.5])
        #expect(summary(try #require(got.next())) == ["added c -1 0"])

        try store.update(try doc("a"), ["d": 0.1])  // moves ahead of c
        #expect(summary(try #require(got.next())) == ["modified a 1 0"])

        try store.update(try doc("b"), ["p": "still far"])  // outside the query: no snapshot
        try store.delete(try doc("c"))
        let last = try #require(got.next())
        #expect(summary(last) == ["removed c 1 -1"])
        #expect(last.documents.map(\.id) == ["a"])
        #expect(got.next(timeout: 0.2) == nil)
    }

    @Test func documentListener() throws {
        let got = Collector<DocumentSnapshot>()
        let p = try doc("x")
        let registration = store.addListener(document: p) { got.add($0) }
        #expect(got.next()?.exists == false)
        try store.set(p, ["n": 1])
        #expect(got.next()?.data == ["n": 1])
        try store.set(p, ["n": 1])  // the same data: nothing to report
        try store.set(p, ["n": 2])
        #expect(got.next()?.data == ["n": 2])
        try store.delete(p)
        #expect(got.next()?.exists == false)
        registration.cancel()
        try store.set(p, ["n": 3])
        #expect(got.next(timeout: 0.2) == nil)
    }

    @Test func releasingTheRegistrationStopsTheListener() throws {
        let got = Collector<QuerySnapshot>()
        do {
            let registration = try store.addListener(Query(collection: interactions)) { got.add($0) }
            _ = got.next()
            _ = registration
        }
        try store.set(try doc("late"), ["n": 1])
        #expect(got.next(timeout: 0.3) == nil)
        #expect(store.observer.listenerCount == 0)
    }

    @Test func asyncSequenceEndsTheListenerWhenTheLoopEnds() async throws {
        try await store.writing { db in try db.set(try doc("a"), ["n": 1]) }
        let store = self.store
        let target = try doc("b")
        var seen: [[String]] = []
        for try await snapshot in store.snapshots(Query(collection: interactions)) {
            seen.append(snapshot.documents.map(\.id))
            if seen.count == 1 { try await store.writing { db in try db.set(target, ["n": 2]) } }
            if seen.count == 2 { break }
        }
        #expect(seen == [["a"], ["a", "b"]])
        // The listener goes when the loop's iterator does: polled with a deadline.
        for _ in 0..<1000 where store.observer.listenerCount != 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(store.observer.listenerCount == 0)
    }

    /// A loop over snapshots ended (its task cancelled) while snapshots are being delivered to
    /// it, at many moments: it always ends. (Its stream's end used to wait, under the task's
    /// lock, for the delivery in flight, which needed that lock: both hung for good.)
    @Test func aSnapshotLoopCancelledWhileSnapshotsArriveEnds() async throws {
        // A thread of its own: a loop of blocking writes on the cooperative pool would starve
        // every other test of one of its few threads.
        let stop = Mutex(false)
        let writer = Thread { [store, interactions] in
            var n = 0
            while !stop.withLock({ $0 }) {
                try? store.write { db in try db.set(interactions.document("w\(n % 50)"), ["n": .integer(Int64(n))]) }
                n += 1
            }
        }
        writer.start()
        defer { stop.withLock { $0 = true } }
        for round in 0..<60 {
            let ended = Mutex(false)
            let loop = Task { [store, interactions] in
                for try await _ in store.snapshots(Query(collection: interactions)) {}
            }
            let watcher = Task {
                _ = await loop.result
                ended.withLock { $0 = true }
            }
            _ = watcher
            // Not a wait for a result: the moment of the cancel, moved across deliveries.
            try await Task.sleep(for: .microseconds(200 + round * 150))
            loop.cancel()
            let deadline = Date(timeIntervalSinceNow: 30)
            while !ended.withLock({ $0 }) && Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
            #expect(ended.withLock { $0 }, "round \(round): the loop never ended")
            if !ended.withLock({ $0 }) { break }
        }
    }

    @Test func limitQueriesPullInTheNextDocument() throws {
        for (i, d) in [1.0, 2.0, 3.0, 4.0].enumerated() { try store.set(try doc("d\(i)"), ["d": .double(d)]) }
        let got = Collector<QuerySnapshot>()
        let registration = try store.addListener(Query(collection: interactions).order(by: "d").limit(2)) {
            got.add($0)
        }
        defer { registration.cancel() }
        #expect(got.next()?.documents.map(\.id) == ["d0", "d1"])
        try store.delete(try doc("d0"))
        let next = try #require(got.next())
        #expect(next.documents.map(\.id) == ["d1", "d2"])
        #expect(summary(next) == ["removed d0 0 -1", "added d2 -1 1"])
    }

    /// Applying each snapshot's changes, in order, to the previous documents gives the new ones.
    @Test func changeIndexesReplayOntoThePreviousResults() throws {
        let got = Collector<QuerySnapshot>()
        let q = Query(collection: interactions).where("d", .greaterThan, 10).order(by: "d", descending: true)
        let registration = try store.addListener(q) { got.add($0) }
        defer { registration.cancel() }
        var current = try #require(got.next()).documents
        var g = SplitMix64(seed: 9)
        for round in 0..<60 {
            var batch = WriteBatch()
            for _ in 0..<Int.random(in: 1...4, using: &g) {
                let p = try doc("k\(Int.random(in: 0..<12, using: &g))")
                if Int.random(in: 0..<4, using: &g) == 0 {
                    batch.delete(p)
                } else {
                    batch.set(p, ["d": .integer(Int64.random(in: 0..<30, using: &g))])
                }
            }
            try store.commit(batch)
            let expected = try store.getDocuments(q)
            if expected.map(\.path) == current.map(\.path) && expected.map(\.data) == current.map(\.data) { continue }
            let snapshot = try #require(got.next(), "round \(round)")
            var replay = current
            for change in snapshot.changes {
                switch change.kind {
                case .removed:
                    #expect(replay[change.oldIndex].path == change.document.path)
                    replay.remove(at: change.oldIndex)
                case .added:
                    replay.insert(change.document, at: change.newIndex)
                case .modified:
                    #expect(replay[change.oldIndex].path == change.document.path)
                    replay.remove(at: change.oldIndex)
                    replay.insert(change.document, at: change.newIndex)
                }
            }
            #expect(replay.map(\.path) == snapshot.documents.map(\.path))
            #expect(snapshot.documents.map(\.path) == expected.map(\.path))
            current = snapshot.documents
        }
    }

    @Test func aListenerResumedFromATokenMissesNothing() throws {
        try store.set(try doc("keep"), ["n": 1])
        try store.set(try doc("change"), ["n": 1])
        try store.set(try doc("drop"), ["n": 1])
        let got = Collector<QuerySnapshot>()
        var registration = try store.addListener(Query(collection: interactions)) { got.add($0) }
        let token = try #require(got.next()).token
        registration.cancel()

        // While nobody listens:
        try store.update(try doc("change"), ["n": 2])
        try store.delete(try doc("drop"))
        try store.set(try doc("new"), ["n": 1])
        try store.set(try DocumentPath("beacons/b2/interactions/elsewhere"), ["n": 1])

        registration = try store.addListener(Query(collection: interactions), from: .after(token: token)) {
            got.add($0)
        }
        defer { registration.cancel() }
        let resumed = try #require(got.next())
        #expect(
            resumed.changes.map { "\($0.kind.rawValue) \($0.document.id)" }.sorted() == [
                "added new", "modified change", "removed drop",
            ]
        )
        #expect(resumed.documents.map(\.id) == ["change", "keep", "new"])
        #expect(resumed.token > token)
    }

    @Test func aTokenOlderThanTheChangeLogFails() throws {
        let clock = ManualClock()
        let (store, dir) = try DocumentStore.temporary(clock: clock)
        _ = dir
        let c = try CollectionPath("c")
        try store.set(try c.document("a"), ["n": 1])
        let old = try store.currentToken()
        try store.set(try c.document("b"), ["n": 1])
        clock.advance(seconds: 86_400)
        try store.set(try c.document("c"), ["n": 1])
        #expect(try store.pruneChanges(olderThan: clock.now().adding(seconds: -3600)) == 2)
        let failed = Collector<StoreError>()
        let registration = try store.addListener(
            Query(collection: c),
            from: .after(token: old - 1),
            onError: { failed.add($0) },
            onSnapshot: { _ in }
        )
        defer { registration.cancel() }
        #expect(failed.next()?.code == .tokenExpired)
    }

    @Test func aWriteFromAnotherProcessReachesTheListener() async throws {
        let got = Collector<QuerySnapshot>()
        let registration = try store.addListener(Query(collection: interactions)) { got.add($0) }
        defer { registration.cancel() }
        #expect(got.next()?.documents.isEmpty == true)
        let result = try await TracerProcess.running([
            "db", "set", "beacons/b1/interactions/remote", #"{"from": "another process"}"#, "--store", store.path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let snapshot = try #require(got.next())
        #expect(snapshot.documents.map(\.id) == ["remote"])
        #expect(snapshot.documents.first?.data == ["from": "another process"])
    }

    @Test func manyListenersEachGetTheirOwnDocument() throws {
        let got = Collector<String>()
        var registrations: [ListenerRegistration] = []
        for i in 0..<1000 {
            let p = try doc("n\(i)")
            registrations.append(store.addListener(document: p) { if $0.exists { got.add($0.id) } })
        }
        var batch = WriteBatch()
        for i in stride(from: 0, to: 1000, by: 10) { batch.set(try doc("n\(i)"), ["i": .integer(Int64(i))]) }
        try store.commit(batch)
        var ids = Set<String>()
        while ids.count < 100, let id = got.next() { ids.insert(id) }
        #expect(ids.count == 100)
        #expect(got.next(timeout: 0.2) == nil)
        registrations.removeAll()
        #expect(store.observer.listenerCount == 0)
    }
}

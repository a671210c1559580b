import Foundation
import Testing
import TracerAPI
import TracerReplication
@_spi(Blocking) import TracerStore

/// The replication wire format and the kiosk's clock measure, without a network.
@Suite struct SyncWireTests {
    @Test func aBatchRoundTripsWithStoredJSONAsItIs() throws {
        let data: DocumentData = [
            "deviceId": "d1", "distance": 1.5, "n": 3, "start": .timestamp(Timestamp(seconds: 1_795_341_600.25)),
        ]
        let stored = Array(JSON.string(.map(data)).utf8)
        let body = SyncBatch.body(
            kiosk: "kiosk-lab",
            through: 42,
            sentAt: 1_795_341_700.5,
            clock: ClockSample(offset: 0.25, delay: 0.01),
            backlog: 7,
            backlogOldest: 1_795_341_650,
            documents: SyncBatch.documents([
                .init(path: try DocumentPath("beacons/kiosk-lab/interactions/a"), json: stored),
                .init(path: try DocumentPath("beacons/kiosk-lab/interactions/b"), json: nil),
            ])
        )
        let batch = try SyncBatch(json: body)
        #expect(batch.kiosk == "kiosk-lab" && batch.through == 42 && batch.backlog == 7)
        #expect(batch.clock == ClockSample(offset: 0.25, delay: 0.01))
        #expect(batch.documents.map(\.data) == [data, nil])
        #expect(
            batch.documents.map(\.path.description) == [
                "beacons/kiosk-lab/interactions/a", "beacons/kiosk-lab/interactions/b",
            ]
        )
    }

    @Test(arguments: [
        (
            #"{"kiosk": "k", "through": 1, "sentAt": 1, "documents": [{"path": "a/b", "data": {"n": {"__increment__": 1}}}]}"#,
            "only accepted in writes"
        ),
        (#"{"kiosk": "k", "through": -1, "sentAt": 1, "documents": []}"#, "through"),
        (#"{"kiosk": "k", "through": 1, "sentAt": 1, "documents": [{"path": "a", "data": {}}]}"#, "documents[0]"),
        (#"{"kiosk": "k", "through": 1, "sentAt": 1, "documents": [{"path": "a/b"}]}"#, "documents[0]"),
        ("not json", "not a sync batch"),
    ])
    func badBatchesAreRefusedNamingWhere(_ body: String, _ words: String) {
        #expect {
            _ = try SyncBatch(json: Array(body.utf8))
        } throws: { error in
            (error as? SyncError)?.code == .badRequest && "\(error)".contains(words)
        }
    }

    /// A kiosk 3 s ahead, exchanges with uneven delays and one that waited 4 s behind other
    /// batches: the filter's measure is within half the shortest round trip of the truth.
    @Test func theClockFilterKeepsTheShortestRoundTrip() {
        let skew = 3.0
        var filter = ClockFilter()
        for (up, processing, down) in [
            (0.004, 0.02, 0.003), (4.0, 0.05, 0.002), (0.010, 0.5, 0.030), (0.002, 0.01, 0.002),
        ] {
            let t0 = 1_000.0 + skew
            let t1 = 1_000.0 + up
            let t2 = t1 + processing
            let t3 = t2 + down + skew
            filter.add(ClockSample(sent: t0, serverReceived: t1, serverAnswered: t2, received: t3))
        }
        let best = filter.best!
        #expect(abs(best.delay - 0.004) < 1e-9)
        #expect(abs(best.offset - skew) <= best.delay / 2 + 1e-9)
    }
}

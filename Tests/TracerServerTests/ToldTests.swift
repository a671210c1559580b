import Foundation
import Testing
import TracerExposure
import TracerModel
@_spi(Blocking) import TracerStore
import TracerTesting

@testable import TracerServer

/// Who has been told, as the health team reads it per flagged device (issue 45, finding 10): a
/// push counts only when its service took it after the report's newest exposure of the device;
/// a page's view only when it read the status after it.
@Suite struct ToldTests {
    @Test func aPushOrAViewCountsOnlyAfterTheExposure() async throws {
        let (store, dir) = try DocumentStore.temporary()
        _ = dir
        let flagged = 1_800_000_000.0
        try await store.writing { db in
            for device in ["pushed", "pushed-before", "seen", "nobody"] {
                try db.set(
                    try Collections.exposures(of: device).document("r1-kiosk-lab"),
                    [
                        "reportId": "r1", "beaconKey": "kiosk-lab",
                        "flaggedAt": .timestamp(Timestamp(seconds: flagged)),
                    ]
                )
            }
            // Two browsers of one device: the later push is the one said.
            for (device, endpoint, at) in [
                ("pushed", "https://push.example/a", flagged + 5), ("pushed", "https://push.example/b", flagged + 9),
                ("pushed-before", "https://push.example/c", flagged - 60),
            ] {
                try db.set(
                    try Collections.pushSubscriptions(of: device).document(PushSubscription.id(endpoint: endpoint)),
                    [
                        "endpoint": .string(endpoint),
                        PushSubscription.Field.deliveredAt: .timestamp(Timestamp(seconds: at)),
                    ]
                )
            }
            try db.set(try Collections.device("seen"), ["seenAt": .timestamp(Timestamp(seconds: flagged + 30))])
        }
        let told = try await store.reading { db in
            try ExposureViews.told(try db.getDocuments(Query(collectionGroup: Exposure.collectionID)), in: db)
        }
        let byDevice = Dictionary(uniqueKeysWithValues: told.map { ($0.deviceId, $0) })
        #expect(byDevice.count == 4)
        #expect(byDevice["pushed"]?.pushedAt == Timestamp(seconds: flagged + 9).iso8601Milliseconds)
        #expect(byDevice["pushed"]?.seenAt == nil)
        #expect(byDevice["pushed-before"]?.pushedAt == nil, "a push before the exposure told nothing of it")
        #expect(byDevice["seen"]?.seenAt == Timestamp(seconds: flagged + 30).iso8601Milliseconds)
        #expect(byDevice["seen"]?.pushedAt == nil)
        #expect(byDevice["nobody"]?.pushedAt == nil && byDevice["nobody"]?.seenAt == nil)
    }
}

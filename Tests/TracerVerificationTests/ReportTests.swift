import Foundation
import Testing
import TracerModel
@_spi(Blocking) import TracerStore
import TracerTesting

@testable import TracerReports
@testable import TracerVerification

@Suite struct ReportTests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
    ])
    func sha256KnownAnswers(_ input: String, _ hex: String) {
        #expect(Digest.sha256Hex(input) == hex)
    }

    @Test func sha256OfAMillionAs() {
        #expect(
            Digest.sha256Hex([UInt8](repeating: 0x61, count: 1_000_000))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        )
    }

    static func accepted() -> Verification {
        Verifier.verify(
            .text("COVID-19 antigen test\nSample collected: 2026-11-21\nResult: Positive"),
            now: Date(timeIntervalSince1970: 1_795_348_800),
            timeZone: TimeZone(identifier: "UTC")!
        )
    }

    @Test func recordsOnceKeepsNoImageAndMarksTheDevice() throws {
        let (store, dir) = try DocumentStore.temporary()
        _ = dir
        let v = Self.accepted()
        let first = try store.write { db in
            try SelfReport.record(
                deviceID: "dev-1",
                imageSHA256: "ab12",
                verification: v,
                answers: ["symptoms": true],
                in: db
            )
        }
        #expect(first.created)
        let again = try store.write { db in
            try SelfReport.record(deviceID: "dev-1", imageSHA256: "ab12", verification: v, in: db)
        }
        #expect(!again.created && again.id == first.id)
        let other = try store.write { db in
            try SelfReport.record(deviceID: "dev-2", imageSHA256: "ab12", verification: v, in: db)
        }
        #expect(other.id != first.id)

        let report = try store.get("reports/\(first.id)")
        #expect(report["deviceId"] == "dev-1")
        #expect(report["status"] == "accepted")
        #expect(report["imageSHA256"] == "ab12")
        #expect(report["answers.symptoms"] == .bool(true))
        #expect(report["collectedAt"]?.timestampValue?.seconds == 1_795_219_200)
        guard case .array(let evidence)? = report["evidence"] else {
            Issue.record("no evidence")
            return
        }
        #expect(evidence.count == 5)
        #expect(try store.get("devices/dev-1")["status"] == "positive")
        let reports = try store.getDocuments(Query(collection: CollectionPath("reports")))
        #expect(reports.count == 2)
    }

    @Test func theDeviceAtImmediateRangeOfAKiosk() throws {
        let (store, dir) = try DocumentStore.temporary()
        _ = dir
        let now = Date(timeIntervalSince1970: 1_795_348_800)
        func interaction(_ device: String, _ proximity: String, endedAgo: Double) throws {
            let end = now.timeIntervalSince1970 - endedAgo
            _ = try store.add(
                CollectionPath("beacons/kiosk-lab/interactions"),
                [
                    "deviceId": .string(device), "proximity": .string(proximity),
                    "start": .timestamp(Timestamp(seconds: end - 25)), "end": .timestamp(Timestamp(seconds: end)),
                ]
            )
        }
        try interaction("near-one", "near", endedAgo: 5)
        try interaction("old-one", "immediate", endedAgo: 120)
        #expect(try store.read { db in try SelfReport.immediateDevices(at: "kiosk-lab", now: now, in: db) } == [])
        try interaction("the-one", "immediate", endedAgo: 10)
        #expect(
            try store.read { db in try SelfReport.immediateDevices(at: "kiosk-lab", now: now, in: db) } == ["the-one"]
        )
        try interaction("another", "immediate", endedAgo: 3)
        #expect(
            try store.read { db in try SelfReport.immediateDevices(at: "kiosk-lab", now: now, in: db) } == [
                "another", "the-one",
            ]
        )
    }
}

import Foundation
import Logging
import Testing
import TracerModel
import TracerTesting

@testable import TracerDaemon
@testable import TracerRanging
@testable import TracerSite
@_spi(Blocking) @testable import TracerStore

@Suite struct DaemonReplayTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let mapPath = root.appendingPathComponent("BeaconMap/example-campus.yaml").path
    static let badgeUUID = "f7826da6-4fa2-4e98-8024-bc5b71e0893e"
    static let t0 = 1_795_341_600.0

    /// Three badges at 0.3 m, 2 m and 8 m from the lab kiosk for two minutes; one leaves early.
    static func fixture() -> ReplayFixture {
        var f = ReplayFixture()
        f.badges = [
            .init(
                uuid: badgeUUID,
                major: 1,
                minor: 42,
                address: "C3:11:9A:22:07:5E",
                distance: 0.3,
                from: t0,
                to: t0 + 120
            ),
            .init(
                uuid: badgeUUID,
                major: 1,
                minor: 7,
                address: "D4:22:8B:33:18:6F",
                distance: 2,
                from: t0,
                to: t0 + 120
            ),
            .init(
                uuid: badgeUUID,
                major: 3,
                minor: 105,
                address: "E5:33:7C:44:29:70",
                distance: 8,
                from: t0,
                to: t0 + 45
            ),
            // The lab door beacon, heard by the kiosk: a calibration reference, not a person.
            .init(
                uuid: "e2c56db5-dffb-48d2-b060-d0f5a71096e0",
                major: 2,
                minor: 7,
                address: "F6:44:6D:55:3A:81",
                distance: 6,
                from: t0,
                to: t0 + 120
            ),
        ]
        return f
    }

    func run(mode: DaemonMode, replay: String, store: DocumentStore) async throws -> Daemon.Report {
        let site = try Site.load(file: Self.mapPath)
        let daemon = Daemon(
            site: site,
            mode: mode,
            store: store,
            source: try ReplaySource(path: replay),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        return try await daemon.run()
    }

    @Test func gatewayModeWritesOneDocumentPerDevicePerWindow() async throws {
        let (store, dir) = try DocumentStore.temporary()
        let replay = dir.file("lab.jsonl")
        try Self.fixture().write(to: replay)
        let report = try await run(mode: .gateway(anchor: "kiosk-lab"), replay: replay, store: store)

        #expect(report.counts.references == 240)
        #expect(report.counts.attributed == 240 + 240 + 90)
        let docs = try await store.reading { db in
            try db.getDocuments(Query(collection: try CollectionPath("beacons/kiosk-lab/interactions")))
        }
        #expect(docs.count == report.written)
        func windows(_ minor: Int) -> [DocumentSnapshot] {
            docs.filter { $0["deviceId"] == .string("\(Self.badgeUUID):\(minor == 105 ? 3 : 1):\(minor)") }
                .sorted { $0["start"]!.timestampValue! < $1["start"]!.timestampValue! }
        }
        // Two minutes are four 30-second windows; the badge that left after 45 s has two.
        #expect(windows(42).count == 4 && windows(7).count == 4 && windows(105).count == 2)
        #expect(windows(42).allSatisfy { $0["proximity"] == "immediate" && $0["proximityCode"] == 1 })
        #expect(windows(7).allSatisfy { $0["proximity"] == "near" })
        #expect(windows(105).allSatisfy { $0["proximity"] == "far" })
        let near = try #require(windows(7).last)
        let d = try #require(near["distance"]?.doubleValue)
        #expect(abs(d - 2) < 0.6, "distance \(d) m for a badge at 2 m")
        #expect(near["samples"] == 60 && near["testResult"] == false && near["measuredPower"] == -59)
        #expect(near["beacon"] == ["uuid": .string(Self.badgeUUID), "major": 1, "minor": 7])
        #expect(near["start"] == .timestamp(Timestamp(seconds: Self.t0 + 90)))
        #expect(near["ts"]?.timestampValue != nil)
        // The kiosk's own document, from the map.
        #expect(
            try await store.reading { db in try db.get(try DocumentPath("beacons/kiosk-lab")) }.data?["room"] == "lab"
        )
    }

    @Test func scannerModeRangesTheMapsFixedBeacons() async throws {
        let (store, dir) = try DocumentStore.temporary()
        let replay = dir.file("me.jsonl")
        // The example site is calibrated (receiverOffset +3 dB) for badges worn on a body, which
        // reads 3 dB low: so does this capture.
        var fixture = Self.fixture()
        fixture.receiverBias = -3
        try fixture.write(to: replay)
        let me = "\(Self.badgeUUID):9:9"
        let report = try await run(mode: .scanner(device: me), replay: replay, store: store)
        #expect(report.counts.attributed == 240)  // only the door beacon is an anchor here
        let docs = try await store.reading { db in try db.getDocuments(Query(collectionGroup: "interactions")) }
        #expect(docs.count == 4)
        #expect(
            docs.allSatisfy {
                $0.path.parent.description == "beacons/b-lab-door/interactions" && $0["deviceId"] == .string(me)
            }
        )
        #expect(docs.allSatisfy { $0["proximity"] == "far" })
    }

    @Test func noBluetoothAddressReachesTheStore() async throws {
        let (store, dir) = try DocumentStore.temporary()
        let replay = dir.file("lab.jsonl")
        try Self.fixture().write(to: replay)
        _ = try await run(mode: .gateway(anchor: "kiosk-lab"), replay: replay, store: store)
        let export = try await TracerProcess.running(["db", "export", "/", "--store", store.path])
        #expect(export.stdout.contains("interactions"))
        for address in ["C3:11:9A:22:07:5E", "D4:22:8B:33:18:6F", "11:22:33:44:55:66"] {
            #expect(!export.stdout.contains(address))
        }
        // Nor anywhere in the database files, WAL included.
        for suffix in ["", "-wal"] {
            let bytes = FileManager.default.contents(atPath: store.path + suffix) ?? Data()
            #expect(bytes.range(of: Data("C3:11:9A".utf8)) == nil)
        }
    }

    @Test func csvLogsHaveOneRowPerReadingAndPerPair() async throws {
        let (store, dir) = try DocumentStore.temporary()
        let replay = dir.file("lab.jsonl")
        try Self.fixture().write(to: replay)
        let logs = dir.file("logs")
        let daemon = Daemon(
            site: try Site.load(file: Self.mapPath),
            mode: .gateway(anchor: "kiosk-lab"),
            store: store,
            source: try ReplaySource(path: replay),
            csvLog: try CSVLog(directory: logs),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        let report = try await daemon.run()
        let contacts = try String(contentsOfFile: dir.file("logs/contacts.csv"), encoding: .utf8)
            .split(separator: "\n")
        let detection = try String(contentsOfFile: dir.file("logs/detection.csv"), encoding: .utf8)
            .split(separator: "\n")
        #expect(contacts.first == "time,device,anchor,rssi,smoothedRSSI,distance")
        #expect(contacts.count - 1 == report.counts.attributed)
        #expect(detection.count - 1 == 3)
        #expect(detection.contains { $0.hasPrefix("\(Self.badgeUUID):3:105,kiosk-lab,") && $0.hasSuffix(",90") })
        #expect(!contacts.contains { $0.contains("C3:11:9A") })
    }

    @Test func badConfigurationIsOneClearError() throws {
        let site = try Site.load(file: Self.mapPath)
        #expect(throws: DaemonError.self) { try Ranger(site: site, mode: .gateway(anchor: "kiosk-nowhere")) }
        #expect(throws: DaemonError.self) { try Ranger(site: site, mode: .gateway(anchor: "b-lab-door")) }
        #expect(throws: DaemonError.self) { try Ranger(site: site, mode: .scanner(device: "")) }
    }
}

extension DaemonReplayTests {
    /// The lab kiosk reads 6 dB low and hears the lab's three fixed beacons at their plan
    /// distances (7.5, 7.5 and 2.5 m): it fits +6 dB as it runs, ranges badges with it, keeps it
    /// in `beacons/kiosk-lab`, and starts from it the next time, before its new fit is ready.
    @Test func aKioskCalibratesItselfFromTheFixedBeaconsAsItRuns() async throws {
        let (store, dir) = try DocumentStore.temporary()
        var f = ReplayFixture()
        f.receiverBias = -6
        f.clutter = false
        let badge = ReplayFixture.Badge(
            uuid: Self.badgeUUID,
            major: 1,
            minor: 7,
            address: "D4:22:8B:33:18:6F",
            distance: 2,
            from: Self.t0,
            to: Self.t0 + 600
        )
        let beacons = ReplayFixture.Badge.exampleLabBeacons(from: Self.t0, to: Self.t0 + 600)
        f.badges = [badge] + beacons
        try f.write(to: dir.file("first.jsonl"))
        _ = try await run(mode: .gateway(anchor: "kiosk-lab"), replay: dir.file("first.jsonl"), store: store)

        let stored = try #require(
            Beacon.Calibration(try await store.reading { db in try db.get(try DocumentPath("beacons/kiosk-lab")) })
        )
        #expect(abs(stored.receiverOffset - 6) < 0.5 && stored.references == 3, "\(stored)")
        // Made under the map's offset for the kiosk (none: 0), which a new one would set aside.
        #expect(stored.mapOffset == 0)
        // The site's +3 dB is for worn badges; this fixture's badge has no body, so at 2 m with
        // +6 + 3 dB it reads 2 × 10^(−3/20) = 1.42 m; without the fit it would read 2.83 m.
        func lastDistance() async throws -> Double {
            let docs = try await store.reading { db in
                try db.getDocuments(
                    Query(collection: try CollectionPath("beacons/kiosk-lab/interactions"))
                        .order(by: "start", descending: true).limit(1)
                )
            }
            return try #require(docs.first?["distance"]?.doubleValue)
        }
        let first = try await lastDistance()
        #expect(abs(first - 1.42) < 0.3, "\(first)")

        // Restarted on a minute of badge alone (no beacon: no new fit), it ranges with the stored one.
        f.badges = [badge]
        f.badges[0].from = Self.t0 + 1200
        f.badges[0].to = Self.t0 + 1260
        try f.write(to: dir.file("second.jsonl"))
        _ = try await run(mode: .gateway(anchor: "kiosk-lab"), replay: dir.file("second.jsonl"), store: store)
        let second = try await lastDistance()
        #expect(abs(second - 1.42) < 0.3, "\(second)")
    }
}

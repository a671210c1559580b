import Foundation
import Testing
import TracerColocation
import TracerSite
@_spi(Blocking) import TracerStore
import TracerTesting

@testable import TracerExposure

/// Hand-computed scenarios: every figure below is worked out from the windows as written.
@Suite struct ExposureEngineTests {
    /// 2026-11-20 10:00 UTC.
    static let t0 = 1_795_168_800.0

    final class Site {
        let store: DocumentStore
        let dir: TemporaryDirectory
        var n = 0

        init() throws {
            (store, dir) = try DocumentStore.temporary()
        }

        /// An interaction of `device` at `anchor` from t0+`from` to t0+`to` at `distance` m.
        func seen(_ device: String, at anchor: String, _ from: Double, _ to: Double, _ distance: Double) throws {
            n += 1
            try store.set(
                DocumentPath("beacons/\(anchor)/interactions/i\(n)"),
                [
                    "deviceId": .string(device), "anchor": .string(anchor),
                    "start": .timestamp(Timestamp(seconds: t0 + from)), "end": .timestamp(Timestamp(seconds: t0 + to)),
                    "distance": .double(distance), "testResult": false,
                ]
            )
        }

        func report(_ id: String, by device: String, collected: Double = 3600) throws {
            try store.set(
                DocumentPath("reports/\(id)"),
                [
                    "deviceId": .string(device), "status": "accepted",
                    "collectedAt": .timestamp(Timestamp(seconds: t0 + collected)),
                ]
            )
        }

        func exposures(_ device: String) throws -> [DocumentSnapshot] {
            try store.getDocuments(Query(collection: CollectionPath("devices/\(device)/exposures")).order(by: "from"))
        }

        func device(_ id: String) throws -> DocumentSnapshot { try store.get(DocumentPath("devices/\(id)")) }
    }

    /// The 5-minute and the 6-metre boundaries, exactly; the reporter; another anchor.
    @Test func boundariesAreInclusiveAndOnlyTheSameAnchorCounts() throws {
        let s = try Site()
        try s.seen("R", at: "A", 0, 30, 1)
        try s.seen("gap300", at: "A", 330, 360, 1)  // starts 300 s after R's window ends
        try s.seen("gap301", at: "A", 331, 361, 1)
        try s.seen("sum6", at: "A", 0, 30, 5)  // 1 + 5 = 6.00 m
        try s.seen("sum6.01", at: "A", 0, 30, 5.01)
        try s.seen("before300", at: "A", -330, -300, 2)  // ends 300 s before R's starts
        try s.seen("otherAnchor", at: "B", 0, 30, 0.5)
        try s.report("r1", by: "R")
        let r = try s.store.write { db in try ExposureEngine().flag(reportID: "r1", in: db) }
        #expect(r.exposedDevices == ["before300", "gap300", "sum6"])
        #expect(r.reporterWindows == 1)
        let e = try #require(try s.exposures("sum6").first)
        #expect(e["beaconKey"] == "A" && e["reportId"] == "r1")
        #expect(e["separation.min"] == .double(4) && e["separation.max"] == .double(6))
        #expect(e["overlapSeconds"] == .integer(30))
        #expect(e["from"]?.timestampValue?.seconds == Self.t0 && e["to"]?.timestampValue?.seconds == Self.t0 + 30)
        #expect(try s.exposures("gap300").first?["overlapSeconds"] == .integer(0))
        #expect(try s.exposures("R").isEmpty)
        let d = try s.device("sum6")
        #expect(d["status"] == "exposed" && d["risk"] == "medium" && d["exposureCount"] == .integer(1))
        #expect(d["colocatedMinutes"] == .double(0.5))
        #expect(try s.device("R")["status"] == "positive")
        #expect(try !s.device("gap301").exists && !s.device("otherAnchor").exists)
        // The reporter's interactions are marked as a test result (the seed app's testResult).
        let marked = try s.store.getDocuments(
            Query(collection: CollectionPath("beacons/A/interactions")).where("deviceId", .equal, "R")
        )
        #expect(marked.map { $0["testResult"] } == [.bool(true)])
    }

    /// Windows no daemon wrote (times at Int64's edge, an end before the start, a NaN or
    /// negative distance, planted by a kiosk or left in an old store) are skipped and counted, and
    /// the rest is flagged: stored data can never stop the flagger (it crashed on `end + 300 s`).
    @Test func windowsFlaggingCannotUseAreSkippedAndTheRestFlagged() throws {
        let s = try Site()
        try s.seen("R", at: "A", 0, 30, 1)
        try s.seen("C", at: "A", 0, 30, 1)
        let edge = Timestamp(microseconds: 9_223_372_036_854_000_000)
        func plant(_ id: String, _ device: String, start: Timestamp, end: Timestamp, distance: Value) throws {
            try s.store.set(
                DocumentPath("beacons/A/interactions/\(id)"),
                ["deviceId": .string(device), "start": .timestamp(start), "end": .timestamp(end), "distance": distance]
            )
        }
        let t = Timestamp(seconds: Self.t0 + 10)
        try plant("p1", "R", start: edge, end: edge, distance: 1)
        try plant("p2", "X", start: t, end: edge, distance: 1)
        try plant("p3", "Y", start: t, end: Timestamp(seconds: Self.t0), distance: 1)
        try plant("p4", "Z", start: t, end: t, distance: .double(.nan))
        try plant("p5", "W", start: t, end: t, distance: -3)
        try s.report("r1", by: "R")
        let r = try s.store.write { db in try ExposureEngine().flag(reportID: "r1", in: db) }
        #expect(r.exposedDevices == ["C"])
        #expect(r.skipped == 5)
        #expect(r.reporterWindows == 1)
    }

    @Test func theLooserRuleFlagsWhatThePossibleSeparationAllows() throws {
        let s = try Site()
        try s.seen("R", at: "A", 0, 30, 1)
        try s.seen("far", at: "A", 0, 30, 6.5)  // separation in [5.5, 7.5]
        try s.report("r1", by: "R")
        var policy = ExposurePolicy()
        #expect(
            try s.store.write { db in try ExposureEngine(policy: policy).flag(reportID: "r1", in: db) }.exposures == 0
        )
        policy.separation = .possible
        let r = try s.store.write { db in try ExposureEngine(policy: policy).flag(reportID: "r1", in: db) }
        #expect(r.exposedDevices == ["far"])
        #expect(try s.exposures("far").first?["rule"] == "possible")
    }

    /// A 4 m square room with its kiosk in the middle of one wall (2, 0): no two points in it are
    /// more than 5.66 m apart, and nothing in it is more than 4.47 m from the kiosk.
    static func smallRoom() -> RoomGeometry {
        RoomGeometry(
            kiosk: TracerSite.Point(2, 0),
            room: TracerSite.Room(key: "r", name: "r", outline: [.init(0, 0), .init(4, 0), .init(4, 4), .init(0, 4)])
        )
    }

    @Test func theGeometricRuleFlagsByTheRoomAndNotBehindItsWalls() throws {
        let s = try Site()
        try s.seen("R", at: "A", 0, 30, 3.5)
        try s.seen("sameRoom", at: "A", 0, 30, 3.5)  // sum: 7 m, too far; but the room is 4 m across
        try s.seen("nextDoor", at: "A", 0, 30, 6.5)  // possible: |6.5 − 3.5| = 3 m; but not in this room
        try s.report("r1", by: "R")
        var policy = ExposurePolicy()
        #expect(
            try s.store.write { db in try ExposureEngine(policy: policy).flag(reportID: "r1", in: db) }.exposures == 0
        )
        policy.separation = .possible
        #expect(
            try s.store.write { db in try ExposureEngine(policy: policy).flag(reportID: "r1", in: db) }.exposedDevices
                == [
                    "nextDoor", "sameRoom",
                ]
        )
        policy.separation = .geometric
        policy.geometry = ["A": Self.smallRoom()]
        let r = try s.store.write { db in try ExposureEngine(policy: policy).flag(reportID: "r1", in: db) }
        #expect(r.exposedDevices == ["sameRoom"])
        #expect(try s.exposures("sameRoom").first?["rule"] == "geometric")
        // An anchor the map does not place falls back to sum.
        policy.geometry = [:]
        #expect(
            try s.store.write { db in try ExposureEngine(policy: policy).flag(reportID: "r1", in: db) }.exposures == 0
        )
    }

    /// Two 4 m rooms side by side, A (x 0–4) and B (x 4–8), kiosks mid-wall: a window at A while
    /// B heard the same device closer is the device in B, heard through the wall.
    @Test func theGeometricRuleLeavesOutWindowsAnotherKioskHeardCloser() throws {
        let s = try Site()
        try s.seen("R", at: "A", 0, 30, 2)
        try s.seen("N", at: "A", 0, 30, 2)  // in A with R: flagged
        try s.seen("W", at: "A", 0, 30, 3)  // heard by A, but B heard it at 1 m: behind the wall
        try s.seen("W", at: "B", 0, 30, 1)
        try s.seen("late", at: "A", 200, 230, 2)  // heard closer by B only later: still in A now
        try s.seen("late", at: "B", 400, 430, 0.5)
        try s.report("r1", by: "R")
        var policy = ExposurePolicy()
        policy.separation = .geometric
        let square = { (x: Double) in
            TracerSite.Room(
                key: "r\(Int(x))",
                name: "r",
                outline: [.init(x, 0), .init(x + 4, 0), .init(x + 4, 4), .init(x, 4)]
            )
        }
        policy.geometry = [
            "A": RoomGeometry(kiosk: TracerSite.Point(2, 0), room: square(0)),
            "B": RoomGeometry(kiosk: TracerSite.Point(6, 0), room: square(4)),
        ]
        #expect(
            try s.store.write { db in try ExposureEngine(policy: policy).flag(reportID: "r1", in: db) }.exposedDevices
                == ["N", "late"]
        )
        policy.attribution = false
        #expect(
            try s.store.write { db in try ExposureEngine(policy: policy).flag(reportID: "r1", in: db) }.exposedDevices
                == [
                    "N", "W", "late",
                ]
        )
        // The reporter heard closer by B at the time was in B: nobody at A is near them.
        try s.seen("R", at: "B", 0, 30, 0.5)
        policy.attribution = true
        #expect(
            try s.store.write { db in try ExposureEngine(policy: policy).flag(reportID: "r1", in: db) }.exposedDevices
                == ["W"]
        )
    }

    /// Consecutive windows are one episode; a device at two anchors has one per anchor.
    @Test func episodesPerDeviceAndAnchor() throws {
        let s = try Site()
        for k in 0..<4 { try s.seen("R", at: "A", Double(k) * 30, Double(k + 1) * 30, 1) }
        try s.seen("R", at: "B", 3600, 3630, 1)
        for k in 0..<3 { try s.seen("X", at: "A", Double(k) * 30 + 15, Double(k + 1) * 30 + 15, 2) }
        try s.seen("X", at: "B", 3610, 3640, 2)
        try s.seen("X", at: "A", 7200, 7230, 1)  // an hour after R left A: not exposed
        try s.report("r1", by: "R", collected: 7200)
        let r = try s.store.write { db in try ExposureEngine().flag(reportID: "r1", in: db) }
        #expect(r.exposedDevices == ["X"] && r.exposures == 2)
        let e = try s.exposures("X")
        #expect(e.map { $0["beaconKey"] } == ["A", "B"])
        // At A: X from 15 to 105, R from 0 to 120: 90 s together; the episode spans 0–120.
        #expect(e[0]["overlapSeconds"] == .integer(90))
        #expect(
            e[0]["from"]?.timestampValue?.seconds == Self.t0 && e[0]["to"]?.timestampValue?.seconds == Self.t0 + 120
        )
        #expect(e[1]["overlapSeconds"] == .integer(20))
        #expect(try s.device("X")["exposureCount"] == .integer(2))
        #expect(try s.device("X")["colocatedMinutes"] == .double(1.8))
    }

    @Test func rerunningChangesNothingAndNewDataIsAdded() throws {
        let s = try Site()
        try s.seen("R", at: "A", 0, 30, 1)
        try s.seen("X", at: "A", 0, 30, 1)
        try s.report("r1", by: "R")
        let engine = ExposureEngine()
        #expect(try s.store.write { db in try engine.flag(reportID: "r1", in: db) }.changed == 1)
        let before = try s.store.currentToken()
        let again = try s.store.write { db in try engine.flag(reportID: "r1", in: db) }
        #expect(again.changed == 0 && again.exposures == 1)
        #expect(try s.store.currentToken() == before, "a re-run wrote something")
        try s.seen("Y", at: "A", 10, 40, 2)
        #expect(try s.store.write { db in try engine.flag(reportID: "r1", in: db) }.exposedDevices == ["X", "Y"])
        #expect(try s.exposures("X").count == 1)
    }

    @Test func riskRisesWithDistinctReportsAndRevocationUndoesOne() throws {
        let s = try Site()
        for k in 0..<120 { try s.seen("X", at: "A", Double(k) * 30, Double(k + 1) * 30, 1) }  // an hour
        for (i, r) in ["R1", "R2", "R3"].enumerated() {
            try s.seen(r, at: "A", Double(i) * 600, Double(i) * 600 + 30, 1)
            try s.report("r\(i + 1)", by: r)
        }
        let engine = ExposureEngine()
        try s.store.write { db in try engine.flag(reportID: "r1", in: db) }
        #expect(try s.device("X")["risk"] == "medium")
        try s.store.write { db in try engine.flag(reportID: "r2", in: db) }
        #expect(try s.device("X")["risk"] == "medium" && s.device("X")["exposureCount"] == .integer(2))
        try s.store.write { db in try engine.flag(reportID: "r3", in: db) }
        #expect(try s.device("X")["risk"] == "high")

        #expect(try s.store.write { db in try engine.revoke(reportID: "r3", in: db) } == 1)
        #expect(try s.device("X")["risk"] == "medium" && s.device("X")["exposureCount"] == .integer(2))
        #expect(try s.store.get(DocumentPath("reports/r3"))["status"] == "revoked")
        #expect(try s.device("R3")["status"] == "clear")
        try s.store.write { db in try engine.revoke(reportID: "r1", in: db) }
        try s.store.write { db in try engine.revoke(reportID: "r2", in: db) }
        let x = try s.device("X")
        #expect(x["status"] == "clear" && x["risk"] == "low" && x["exposureCount"] == .integer(0))
        #expect(throws: ExposureError.self) { try s.store.write { db in try engine.flag(reportID: "r1", in: db) } }
        // R1's interactions are no longer marked.
        let r1 = try s.store.getDocuments(
            Query(collection: CollectionPath("beacons/A/interactions")).where("deviceId", .equal, "R1")
        )
        #expect(r1.map { $0["testResult"] } == [.bool(false)])
    }

    /// A reporter who is also exposed by someone else stays positive; a report with no
    /// interactions flags nobody but marks its reporter.
    @Test func aReportWithNoInteractions() throws {
        let s = try Site()
        try s.seen("X", at: "A", 0, 30, 1)
        try s.report("r1", by: "nobody-saw-me")
        let r = try s.store.write { db in try ExposureEngine().flag(reportID: "r1", in: db) }
        #expect(r.exposures == 0 && r.reporterWindows == 0)
        #expect(try s.device("nobody-saw-me")["status"] == "positive")
        #expect(try !s.device("X").exists)
    }

    /// The lookback: windows more than 14 days before the collection date do not count.
    @Test func theLookbackStartsFourteenDaysBeforeCollection() throws {
        let s = try Site()
        try s.seen("R", at: "A", 0, 30, 1)
        try s.seen("X", at: "A", 0, 30, 1)
        try s.report("late", by: "R", collected: 14 * 86_400 + 1)
        #expect(try s.store.write { db in try ExposureEngine().flag(reportID: "late", in: db) }.exposures == 0)
        try s.report("inTime", by: "R", collected: 14 * 86_400)
        #expect(try s.store.write { db in try ExposureEngine().flag(reportID: "inTime", in: db) }.exposures == 1)
    }

    /// What a kiosk (or an old store) planted cannot stop a report from flagging: windows whose
    /// device id could never be a document's id, or is not even a string, sit beside the
    /// reporter; the flagger skips and counts them and flags the real neighbour.
    @Test func plantedDeviceIdsAreSkippedAndTheRestFlagged() throws {
        let s = try Site()
        try s.seen("R", at: "A", 0, 30, 1)
        try s.seen("neighbour", at: "A", 0, 30, 1)
        for bad in ["", ".", "..", "a/b", "x\u{1}y", String(repeating: "z", count: 129)] {
            try s.seen(bad, at: "A", 0, 30, 1)
        }
        s.n += 1
        try s.store.set(
            DocumentPath("beacons/A/interactions/i\(s.n)"),
            [
                "deviceId": .map(["x": .integer(1)]), "anchor": "A",
                "start": .timestamp(Timestamp(seconds: Self.t0)), "end": .timestamp(Timestamp(seconds: Self.t0 + 30)),
                "distance": .double(1), "testResult": false,
            ]
        )
        try s.report("r1", by: "R")
        let r = try s.store.write { db in try ExposureEngine().flag(reportID: "r1", in: db) }
        #expect(r.exposedDevices == ["neighbour"])
        #expect(r.skipped == 7, "\(r)")
        #expect(try s.device("neighbour")["status"] == "exposed")
        // A report far from them flags too (before, every flagging near them failed).
        try s.seen("R2", at: "B", 0, 30, 1)
        try s.seen("other", at: "B", 10, 40, 2)
        try s.report("r2", by: "R2")
        #expect(
            try s.store.write { db in try ExposureEngine().flag(reportID: "r2", in: db) }.exposedDevices == ["other"]
        )
    }
}

import Foundation
import Testing
import TracerSite
@_spi(Blocking) import TracerStore

@testable import TracerColocation
@testable import TracerExposure

/// Flagging places people with the offsets kiosks range with: a kiosk's stored calibration
/// (`beacons/{key}.calibration`, replicated to the site server) moves where it stops hearing.
@Suite struct KioskCalibrationTests {
    static func campus() throws -> Site {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return try Site.load(file: root.appendingPathComponent("BeaconMap/example-campus.yaml").path)
    }

    static func calibration(_ offset: Double, madeUnder mapOffset: Double?) -> DocumentData {
        var c: [String: Value] = ["receiverOffset": .double(offset), "windows": 40, "references": 2]
        if let mapOffset { c["mapOffset"] = .double(mapOffset) }
        return ["calibration": .map(c)]
    }

    @Test func positionsWeighASilenceWithTheOffsetTheKioskRangesWith() throws {
        let s = try ExposureEngineTests.Site()
        var policy = ExposurePolicy(site: try Self.campus())
        policy.separation = .geometric
        policy.positions = true
        let engine = ExposureEngine(policy: policy)
        let map = try #require(policy.plan)
        #expect(try s.store.read { try engine.plan(in: $0) } == map)

        // Fitted at +9 (the kiosk's own, on top of the site's +3) under the map as it is; one made
        // under an offset the map no longer gives the kiosk (set aside, as the kiosk sets it
        // aside); one from before calibrations kept the map's offset (it stands); a fixed beacon's
        // (not a kiosk's: phones range it); a kiosk the map does not name; one no map could give.
        try s.store.set(DocumentPath("beacons/kiosk-office"), Self.calibration(9, madeUnder: 0))
        try s.store.set(DocumentPath("beacons/kiosk-lab"), Self.calibration(-2, madeUnder: 4))
        try s.store.set(DocumentPath("beacons/kiosk-cafe"), Self.calibration(1, madeUnder: nil))
        try s.store.set(DocumentPath("beacons/b-lab-door"), Self.calibration(9, madeUnder: 0))
        try s.store.set(DocumentPath("beacons/kiosk-elsewhere"), Self.calibration(9, madeUnder: 0))
        try s.store.set(DocumentPath("beacons/kiosk-seminar"), Self.calibration(60, madeUnder: 0))
        #expect(
            try s.store.read { try ExposureEngine.kioskOffsets(for: map, in: $0) } == [
                "kiosk-office": 9, "kiosk-cafe": 1,
            ]
        )
        let plan = try #require(try s.store.read { try engine.plan(in: $0) })
        #expect(try #require(plan.receiver("kiosk-office")).floor == map.receiver("kiosk-office")!.floor - 9)
        #expect(try #require(plan.receiver("kiosk-cafe")).floor == map.receiver("kiosk-cafe")!.floor - 1)
        #expect(plan.receiver("kiosk-lab") == map.receiver("kiosk-lab"))
        #expect(plan.receiver("b-lab-door") == map.receiver("b-lab-door"))

        // Flagging uses that plan, and keeps its rule (and the rooms' grids) while it stands.
        try s.report("r1", by: "R")
        _ = try s.store.write { try engine.flag(reportID: "r1", in: $0) }
        #expect(engine.calibrated.kept?.policy.plan == plan)
        let first = try s.store.write { try engine.colocation(in: $0) }
        #expect(first.policy.plan == plan)
        #expect(try s.store.write { try engine.colocation(in: $0) }.positioning?.grids === first.positioning?.grids)
        try s.store.set(DocumentPath("beacons/kiosk-office"), Self.calibration(7, madeUnder: 0))
        let moved = try s.store.write { try engine.colocation(in: $0) }
        #expect(moved.policy.plan?.receiver("kiosk-office")?.floor == map.receiver("kiosk-office")!.floor - 7)

        // Another radius on the same engine, the calibrations as they were: flagged under it.
        var engine3 = engine
        engine3.policy.radius = 3
        #expect(try s.store.write { try engine3.colocation(in: $0) }.policy.radius == 3)

        // Under a rule that does not place people, nothing is read.
        policy.positions = false
        #expect(try s.store.read { try ExposureEngine(policy: policy).plan(in: $0) } == nil)
    }
}

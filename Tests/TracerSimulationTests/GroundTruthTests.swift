import Foundation
import Testing

@testable import TracerSimulation
@testable import TracerSite

/// True pairs and the evaluation's counts, on scenarios worked out by hand.
@Suite struct GroundTruthTests {
    static func seg(
        _ d: String,
        _ room: String?,
        _ from: Double,
        _ to: Double,
        _ x: Double,
        _ y: Double
    ) -> TruthSegment {
        TruthSegment(deviceID: d, room: room, from: from, to: to, position: Point(x, y))
    }

    @Test func pairsAreWithinTheRadiusAndTheWindowInTheSameRoom() {
        let segments = [
            Self.seg("A", "lab", 0, 100, 0, 0),
            Self.seg("B", "lab", 400, 500, 6, 0),  // starts 300 s after A leaves, 6 m away: a pair
            Self.seg("C", "lab", 0, 100, 6.01, 0),  // 6.01 m: not
            Self.seg("D", "lab", 401, 500, 1, 0),  // 301 s after A: not; but with B (5 m): a pair
            Self.seg("E", "cafe", 0, 100, 0, 0),  // the same point in another room: not
            Self.seg("F", "lab", 50, 60, 0.5, 0), Self.seg("F", "lab", 60, 70, 0.5, 0.5),  // one episode with A
            Self.seg("G", "attic", 0, 100, 0, 0), Self.seg("H", "attic", 0, 100, 0, 0),  // no kiosk there
        ]
        let pairs = GroundTruth.pairs(segments, rooms: ["lab", "cafe"], radius: 6, window: 300)
        let found = Set(pairs.map { "\($0.a)-\($0.b)" })
        // B and C: 300 s apart, 1 cm; C and F: 5.51 m; D and F: 331 s apart.
        #expect(found == ["A-B", "A-F", "B-C", "B-D", "C-F"])
        #expect(pairs.filter { $0.a == "A" && $0.b == "F" }.count == 1)
        let af = pairs.first { $0.a == "A" && $0.b == "F" }!
        #expect(af.from == 0 && af.to == 100 && af.closest == 0.5)
    }

    static let site: Site = {
        var s = Site(
            name: "t",
            deviceUUIDs: [],
            rooms: [Room(key: "lab", name: "Lab", outline: [Point(0, 0), Point(10, 0), Point(10, 10), Point(0, 10)])],
            anchors: [],
            ranging: .init(),
            file: "t.yaml"
        )
        s.anchors = [Anchor(key: "k", kind: .kiosk, room: "lab", position: Point(0, 0))]
        return s
    }()

    /// A truth on `site`'s lab and its kiosk, from 0 to `end`, with these segments and no pairs.
    static func truth(_ segments: [String: [TruthSegment]], end: Double = 300) -> GroundTruth {
        GroundTruth(
            map: "t.yaml",
            seed: 1,
            start: 0,
            end: end,
            noise: 4,
            loss: 0.2,
            radius: 6,
            window: 300,
            kiosks: [.init(anchor: "k", room: "lab", replay: "replays/k.jsonl", adverts: 0)],
            roles: [:],
            segments: segments,
            pairs: []
        )
    }

    @Test func evaluationCountsExposuresDetectionContinuityAndDistanceError() {
        let truth = Self.truth(
            [
                "R": [Self.seg("R", "lab", 0, 300, 3, 0)],
                "N": [Self.seg("N", "lab", 0, 300, 3, 4)],  // 4 m from R: truly near; 5 m from the kiosk
                "M": [Self.seg("M", "lab", 0, 300, 9, 9)],  // 10.8 m from R
                "O": [Self.seg("O", "lab", 0, 120, 3, 5)],  // 5 m from R: truly near, missed
            ],
            end: 1000
        )
        var t = truth
        t.pairs = GroundTruth.pairs(
            t.segments.values.flatMap { $0 },
            rooms: ["lab"],
            radius: 6,
            window: 300
        )
        #expect(Set(t.pairs.filter { $0.involves("R") }.map { $0.other(than: "R") }) == ["N", "O"])
        let exposures = [
            FlaggedExposure(reporter: "R", device: "N", anchor: "k", from: 0, to: 300),  // right
            FlaggedExposure(reporter: "R", device: "M", anchor: "k", from: 0, to: 300),  // wrong
        ]
        // R seen in every window with distance 3.5 (true √9.25 = 3.04); N in the first 5 of 10
        // windows; M and O never.
        var observed: [ObservedWindow] = []
        for w in 0..<10 {
            observed.append(
                ObservedWindow(device: "R", anchor: "k", start: Double(w) * 30, end: Double(w) * 30 + 29, distance: 3.5)
            )
        }
        for w in 0..<5 {
            observed.append(
                ObservedWindow(device: "N", anchor: "k", start: Double(w) * 30, end: Double(w) * 30 + 29, distance: nil)
            )
        }
        let e = Evaluation(truth: t, site: Self.site, reporters: ["R"], exposures: exposures, observed: observed)
        #expect(e.overall.truePositives == 1 && e.overall.falsePositives == 1 && e.overall.falseNegatives == 1)
        #expect(e.overall.precision == 0.5 && e.overall.recall == 0.5)
        #expect(e.byRoom["lab"] == e.overall)
        // Stays of a minute or more: R, N, M, O (O's is 120 s); seen: R and N.
        #expect(e.stays == 4 && e.staysDetected == 2)
        // Windows: 10 + 10 + 10 + 4; with a distance: R's 10 only (N's windows carry none).
        #expect(e.windows == 34 && e.windowsCovered == 10)
        let three = e.distanceErrors.first { $0.nominal == 3 }!
        #expect(three.count == 10)
        #expect(abs(three.medianSigned - (3.5 - 9.25.squareRoot())) < 1e-9)
        #expect(e.distanceErrors.first { $0.nominal == 1 }!.count == 0)
        // No chance on these: nothing to judge the chances by.
        #expect(e.reliability.isEmpty)

        // Chances, sorted in tenths: of the three given 0.8–0.9, N's two are near (one an hour
        // later, beyond the window of the truth, is not), M's is not.
        let given = [
            FlaggedExposure(reporter: "R", device: "N", anchor: "k", from: 0, to: 300, chance: 0.82),
            FlaggedExposure(reporter: "R", device: "N", anchor: "k", from: 200, to: 250, chance: 0.88),
            FlaggedExposure(reporter: "R", device: "N", anchor: "k", from: 3600, to: 3700, chance: 0.85),
            FlaggedExposure(reporter: "R", device: "M", anchor: "k", from: 0, to: 300, chance: 0.25),
            FlaggedExposure(reporter: "R", device: "O", anchor: "k", from: 0, to: 300, chance: 1),
        ]
        let bins = Evaluation.reliability(given, truth: t, roomOf: { _ in "lab" })
        #expect(bins.map(\.low) == [0.2, 0.8, 0.9])
        #expect(bins.map(\.count) == [1, 3, 1] && bins.map(\.near) == [0, 2, 1])
        #expect(abs(bins[1].stated - 0.85) < 1e-12 && abs(bins[1].observed - 2.0 / 3) < 1e-12)
    }

    /// A phone in scanner mode has its windows at the room's fixed beacon, not its kiosk: its
    /// stay counts as detected and its windows as covered by the beacon's.
    @Test func aPhonesStayIsDetectedByItsRoomsBeacon() {
        var site = Self.site
        site.anchors.append(Anchor(key: "b", kind: .beacon, room: "lab", position: Point(10, 10)))
        let truth = Self.truth(["P": [Self.seg("P", "lab", 0, 300, 3, 0)]])
        // Windows 0–7 of 10 at the beacon, with a distance.
        let observed = (0..<8).map {
            ObservedWindow(device: "P", anchor: "b", start: Double($0) * 30, end: Double($0) * 30 + 29, distance: 4)
        }
        let e = Evaluation(truth: truth, site: site, reporters: ["P"], exposures: [], observed: observed)
        #expect(e.stays == 1 && e.staysDetected == 1)
        #expect(e.windows == 10 && e.windowsCovered == 8)
    }

    /// positions.svg for the reporter with positions: each slot's estimate joined to where the
    /// badge was. The lab is 10 × 10 m drawn at 56 px a metre (560 / 10), 130 px from the left of
    /// an 820 px picture and 70 px from the top, north up: (3, 0) is at (298, 630), (3, 1) at
    /// (298, 574).
    @Test func thePositionsPictureJoinsEachEstimateToTheTruth() throws {
        let truth = Self.truth(["R": [Self.seg("R", "lab", 0, 300, 3, 0)], "S": [Self.seg("S", "lab", 0, 300, 5, 5)]])
        let placed = [(3.0, 1.0), (4, 0), (3, 3)].enumerated().map { s, p in
            Evaluation.PositionEstimate(
                device: "R",
                room: "lab",
                from: Double(s) * 30,
                to: Double(s + 1) * 30,
                point: Point(p.0, p.1)
            )
        }
        let e = Evaluation(truth: truth, site: Self.site, reporters: ["S", "R"], exposures: [], observed: [])
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tracer-drawing-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let drawn = try Drawing.write(
            evaluation: e,
            truth: truth,
            site: Self.site,
            exposures: [],
            positions: placed,
            to: dir
        )
        let path = try #require(drawn.first { $0.hasSuffix("/positions.svg") })
        let svg = try String(contentsOfFile: path, encoding: .utf8)
        // Errors 1, 1 and 3 m: the median 1.0; S has no positions, so the picture is R's.
        #expect(svg.contains("Where R was placed, and where it was"))
        #expect(svg.contains("3 slots in which two kiosks of a room heard it; median error 1.0 m"))
        #expect(svg.contains("<line x1=\"298.0\" y1=\"630.0\" x2=\"298.0\" y2=\"574.0\""))
        #expect(svg.components(separatedBy: "<line ").count - 1 == 3)
        #expect(svg.contains("<title>k</title>"))
        // No positions, no picture.
        let none = try Drawing.write(evaluation: e, truth: truth, site: Self.site, exposures: [], to: dir + "/none")
        #expect(!none.contains { $0.hasSuffix("positions.svg") })
    }
}

import Foundation
import Testing

@testable import TracerRanging
@testable import TracerSite

@Suite struct CalibrationTests {
    @Test func recoversTheExponentAndOffsetOfExactReadings() throws {
        // n = 2.7 and a receiver that reads 4 dB low.
        let readings = [0.5, 1, 2, 3, 5, 8].map { d in
            (distance: d, rssi: -59 - 4 - 27 * log10(d), measuredPower: -59.0)
        }
        let fit = try #require(PathLossFit.fit(readings))
        #expect(abs(fit.exponent - 2.7) < 1e-9 && abs(fit.receiverOffset - 4) < 1e-9 && fit.residual < 1e-9)
        #expect(PathLossFit.fit([(1, -60, -59), (1, -61, -59)]) == nil, "one distance cannot give a slope")
    }

    @Test func errorsAreGroupedByTrueDistance() throws {
        var e = DistanceErrors()
        e.pairs = [(1, 1.2), (1, 0.7), (1, 1.1), (3, 4.5)]
        let one = try #require(e.at(1))
        #expect(one.count == 3 && abs(one.medianError - 0.2) < 1e-9 && one.medianEstimate == 1.1)
        #expect(e.at(6) == nil)
    }
}

@Suite struct SiteFileTests {
    static let base = """
        # The test site.
        site: T
        deviceUUIDs: [f7826da6-4fa2-4e98-8024-bc5b71e0893e]
        rooms:
          - {key: lab, outline: [[0, 0], [10, 0], [10, 10], [0, 10]]}
        anchors:
          - {key: kiosk-lab, kind: kiosk, room: lab, position: [5, 5]}

        """

    func withFile(_ text: String, _ body: (String) throws -> Void) throws {
        let path = NSTemporaryDirectory() + "site-\(UUID().uuidString).yaml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        try body(path)
    }

    @Test func addsASettingsBlock() throws {
        try withFile(Self.base) { path in
            try SiteFile.updateSettings(
                file: path,
                [("pathLossExponent", "2.40"), ("receiverOffset", "3.0")],
                comment: "tracer calibrate"
            )
            let site = try Site.load(file: path)
            #expect(site.ranging.model == .logDistance(exponent: 2.4) && site.ranging.receiverOffset == 3)
            #expect(try String(contentsOfFile: path, encoding: .utf8).hasPrefix("# The test site."))
        }
    }

    @Test func updatesABlockInPlaceKeepingTheRest() throws {
        try withFile(Self.base + "settings:\n  filter: arma   # chosen by hand\n  pathLossExponent: 3.0\n") { path in
            for _ in 0..<2 {
                try SiteFile.updateSettings(
                    file: path,
                    [("pathLossExponent", "2.10"), ("receiverOffset", "-1.5")],
                    comment: "tracer calibrate, run"
                )
            }
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(text.contains("filter: arma   # chosen by hand"))
            #expect(text.components(separatedBy: "tracer calibrate").count == 2, "one note, replaced: \(text)")
            let site = try Site.load(file: path)
            #expect(site.ranging.filter.kind == .arma && site.ranging.model == .logDistance(exponent: 2.1))
            #expect(site.ranging.receiverOffset == -1.5)
        }
    }

    @Test func refusesInlineSettingsAndLeavesTheFileAlone() throws {
        let text = Self.base + "settings: {filter: arma}\n"
        try withFile(text) { (path: String) throws in
            #expect(throws: SiteError.self) {
                try SiteFile.updateSettings(file: path, [("pathLossExponent", "2.1")], comment: "x")
            }
            #expect(try String(contentsOfFile: path, encoding: .utf8) == text)
        }
    }

    @Test func neverWritesAMapThatDoesNotLoad() throws {
        try withFile(Self.base) { (path: String) throws in
            #expect(throws: SiteError.self) {
                try SiteFile.updateSettings(file: path, [("pathLossExponent", "0.4")], comment: "x")
            }
            #expect(try String(contentsOfFile: path, encoding: .utf8) == Self.base)
            #expect(!FileManager.default.fileExists(atPath: path + ".tmp"))
        }
    }
}

extension SiteFileTests {
    @Test func writesAKiosksOwnFitOnItsAnchorFlowOrBlock() throws {
        let block = Self.base + "  - key: kiosk-b\n    kind: kiosk\n    room: lab\n    position: [1, 1]\n"
        try withFile(block + "settings:\n  receiverOffset: 3\n") { path in
            for value in ["2.5", "-4.0"] {
                try SiteFile.updateAnchor(
                    file: path,
                    key: "kiosk-lab",
                    [("receiverOffset", value)],
                    comment: "tracer calibrate"
                )
            }
            try SiteFile.updateAnchor(
                file: path,
                key: "kiosk-lab",
                [("pathLossExponent", "2.30")],
                comment: "tracer calibrate"
            )
            try SiteFile.updateAnchor(
                file: path,
                key: "kiosk-b",
                [("receiverOffset", "1.5")],
                comment: "tracer calibrate"
            )
            let site = try Site.load(file: path)
            #expect(site.anchor("kiosk-lab")?.receiverOffset == -4 && site.anchor("kiosk-lab")?.pathLossExponent == 2.3)
            #expect(site.anchor("kiosk-b")?.receiverOffset == 1.5)
            // Each kiosk's ranging: the site's offset plus its own, its own exponent.
            #expect(site.ranging(at: "kiosk-lab").receiverOffset == -1)
            #expect(site.ranging(at: "kiosk-lab").model == .logDistance(exponent: 2.3))
            #expect(site.ranging(at: "kiosk-b").receiverOffset == 4.5)
            #expect(site.ranging(at: "kiosk-b").model == .logDistance(exponent: 2))
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(text.components(separatedBy: "tracer calibrate").count == 3, "one note per anchor: \(text)")
        }
    }

    @Test func anAnchorsOffsetIsForKiosks() throws {
        let text = Self.base.replacingOccurrences(
            of: "position: [5, 5]}",
            with: "position: [5, 5], receiverOffset: 50}"
        )
        #expect(throws: SiteError.self) { try Site.parse(text, file: "t.yaml") }
    }
}

@Suite struct OffsetFitTests {
    /// At a fixed n = 2, the offset is the median of the readings' offsets: 4 dB here, with one
    /// reading shadowed 15 dB that a mean would follow by 3 dB.
    @Test func theOffsetAtAFixedExponentIsTheMedian() throws {
        var readings = [1.0, 2, 3, 4].map { d in (distance: d, rssi: -59 - 4 - 20 * log10(d), measuredPower: -59.0) }
        readings.append((distance: 2, rssi: -59 - 4 - 20 * log10(2) - 15, measuredPower: -59))
        let fit = try #require(PathLossFit.fit(readings, exponent: 2))
        #expect(abs(fit.receiverOffset - 4) < 1e-9 && fit.exponent == 2 && fit.samples == 5)
        // A body-shadowed receiver's readings hardly fall with distance: no building's n.
        let flat = [1.0, 2, 3, 5].map { d in (distance: d, rssi: -80 - 5 * log10(d), measuredPower: -59.0) }
        #expect(try #require(PathLossFit.fit(flat)).isPlausible == false)
        #expect(try #require(PathLossFit.fit(readings)).isPlausible)
    }

    /// A kiosk reading 6 dB low hears two beacons at 2.5 and 7.5 m, one advert a second, with
    /// ±3 dB of noise; the fit is used after six 30 s windows and lands within 0.5 dB of +6.
    @Test func aRunningFitConvergesAndIgnoresAPersonInFrontOfABeacon() throws {
        var c = RunningCalibration(
            references: ["near": .init(distance: 2.5), "far": .init(distance: 7.5)],
            exponent: 2
        )
        var rng = SystemRandomNumberGenerator()
        var firstUsable: Double?
        for second in 0..<3600 {
            let t = 1_795_341_600.0 + Double(second)
            // For ten minutes in the middle someone stands in front of the far beacon: 12 dB.
            let blocked = (1200..<1800).contains(second) ? 12.0 : 0
            let noise = { Double.random(in: -3...3, using: &rng) }
            c.add(reference: "near", rssi: -59 - 20 * log10(2.5) - 6 + noise(), measuredPower: -59, at: t)
            c.add(reference: "far", rssi: -62 - 20 * log10(7.5) - 6 - blocked + noise(), measuredPower: -62, at: t)
            c.add(reference: "not-a-reference", rssi: -30, measuredPower: -59, at: t)
            if firstUsable == nil, c.offset != nil { firstUsable = Double(second) }
            if second == 1790 { #expect(abs(try #require(c.offset) - 6) < 1, "mid-block: \(c.offset ?? .nan)") }
        }
        #expect(try #require(firstUsable) <= 120, "the fit is used after three windows of each beacon")
        #expect(abs(try #require(c.offset) - 6) < 0.5, "\(c.offset ?? .nan)")
        #expect(c.windowsSeen == 2 * 120 - 2)
    }
}

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

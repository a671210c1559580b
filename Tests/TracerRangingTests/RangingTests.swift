import Foundation
import Testing
import TracerTesting

@testable import TracerRanging

@Suite struct DistanceAndProximityTests {
    @Test func logDistance() throws {
        let m = DistanceModel.logDistance(exponent: 2)
        #expect(abs(try #require(m.distance(rssi: -59, measuredPower: -59)) - 1) < 1e-9)
        #expect(abs(try #require(m.distance(rssi: -65, measuredPower: -59)) - pow(10, 0.3)) < 1e-9)
        #expect(abs(try #require(m.distance(rssi: -69, measuredPower: -59, receiverOffset: -10)) - 10) < 1e-9)
        #expect(m.distance(rssi: 0, measuredPower: -59) == nil)
        #expect(m.distance(rssi: -60, measuredPower: 0) == nil)
    }

    @Test func altBeaconCurve() throws {
        let m = DistanceModel.altBeaconCurve
        #expect(abs(try #require(m.distance(rssi: -59, measuredPower: -59)) - (0.89976 + 0.111)) < 1e-9)
        #expect(abs(try #require(m.distance(rssi: -50, measuredPower: -59)) - pow(50.0 / 59, 10)) < 1e-9)
    }

    @Test func proximityClasses() {
        let t = ProximityThresholds()
        #expect(t.classify(0.3) == .immediate)
        #expect(t.classify(0.5) == .near)
        #expect(t.classify(3.0) == .near)
        #expect(t.classify(3.01) == .far)
        #expect(t.classify(nil) == .unknown)
        #expect([Proximity.far, .unknown, .immediate, .near].sorted() == [.immediate, .near, .far, .unknown])
        #expect(Proximity.allCases.map(\.code) == [1, 2, 3, 0])
    }
}

@Suite struct RSSIFilterTests {
    /// A steady −70 dBm with Gaussian noise of σ 4 dB at 1 Hz: every filter settles near −70 with
    /// much less spread than the raw readings.
    @Test(arguments: RSSIFilterKind.allCases)
    func smoothsNoise(_ kind: RSSIFilterKind) {
        var settings = RSSIFilterSettings()
        settings.kind = kind
        var f = RSSIFilter(settings)
        var g = SplitMix64(seed: 5)
        var outputs: [Double] = []
        for t in 0..<300 {
            let u1 = max(Double(g.next() % 1_000_000) / 1_000_000, 1e-9)
            let u2 = Double(g.next() % 1_000_000) / 1_000_000
            let noise = 4 * sqrt(-2 * log(u1)) * cos(2 * .pi * u2)
            outputs.append(f.add(-70 + noise, at: Double(t)))
        }
        let settled = outputs.suffix(200)
        let mean = settled.reduce(0, +) / Double(settled.count)
        let sd = sqrt(settled.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(settled.count))
        #expect(abs(mean + 70) < 1.5, "\(kind): mean \(mean)")
        #expect(sd < 2, "\(kind): spread \(sd) dB")
    }

    @Test func aSingleOutlierIsClamped() {
        var settings = RSSIFilterSettings()
        settings.kind = .arma
        settings.coefficient = 1  // follows each reading: shows the clamp alone
        var f = RSSIFilter(settings)
        f.add(-60, at: 0)
        #expect(f.add(-100, at: 1) == -75)
    }

    @Test func trimmedMeanDropsTheExtremesOfItsWindow() {
        var settings = RSSIFilterSettings()
        settings.kind = .trimmedMean
        settings.outlierClamp = 0
        var f = RSSIFilter(settings)
        for (t, r) in [-60.0, -60, -60, -60, -60, -60, -60, -60, -60, -90].enumerated() { f.add(r, at: Double(t)) }
        #expect(f.value == -60)
        f.add(-80, at: 40)  // everything older than 20 s is gone
        #expect(f.value == -80)
    }
}

@Suite struct InteractionWindowTests {
    static let badge = IBeacon(
        uuid: UUIDBytes("f7826da6-4fa2-4e98-8024-bc5b71e0893e")!,
        major: 1,
        minor: 42,
        measuredPower: -59
    )

    /// A sighting of badge `minor` (its device id ends in `:minor`).
    func sighting(_ t: Double, _ rssi: Double, device: Int = 1, anchor: String = "kiosk-lab") -> Sighting {
        var badge = Self.badge
        badge.minor = UInt16(device)
        return Sighting(time: t, anchorKey: anchor, beacon: badge, rssi: rssi, measuredPower: -59)
    }

    @Test func summarisesThirtySecondWindows() {
        var w = InteractionWindows(settings: RangingSettings())
        var out: [InteractionSummary] = []
        for t in stride(from: 1_795_341_600.0, to: 1_795_341_665, by: 1) { w.add(sighting(t, -59), into: &out) }
        w.closeAll(into: &out)
        #expect(out.count == 3)
        #expect(out.map(\.samples) == [30, 30, 5])
        #expect(out[0].start == 1_795_341_600 && out[0].end == 1_795_341_629)
        #expect(out.allSatisfy { $0.proximity == .near && abs(($0.distance ?? 0) - 1) < 1e-6 })
    }

    @Test func aDeviceUnseenForTenSecondsClosesEarly() {
        var w = InteractionWindows(settings: RangingSettings())
        var out: [InteractionSummary] = []
        w.add(sighting(1_795_341_600, -50), into: &out)
        w.add(sighting(1_795_341_602, -50), into: &out)
        w.add(sighting(1_795_341_615, -80, device: 2), into: &out)  // time moves on; badge 1 is lost
        #expect(out.map(\.deviceID) == ["f7826da6-4fa2-4e98-8024-bc5b71e0893e:1:1"])
        #expect(out[0].end == 1_795_341_602 && out[0].proximity == .immediate)
        #expect(w.openCount == 1)
    }

    @Test func closestClassAndDistancesOverTheWindow() throws {
        var settings = RangingSettings()
        settings.filter.kind = .arma
        settings.filter.coefficient = 1
        settings.filter.outlierClamp = 0
        var w = InteractionWindows(settings: settings)
        var out: [InteractionSummary] = []
        for (i, rssi) in [-79.0, -65, -50].enumerated() { w.add(sighting(1_795_341_600 + Double(i), rssi), into: &out) }
        w.closeAll(into: &out)
        let s = try #require(out.first)
        #expect(s.proximity == .immediate)
        #expect(abs(try #require(s.minDistance) - pow(10, -0.45)) < 1e-9)
        #expect(s.samples == 3 && abs(s.rssi + 64.666_666) < 1e-3)
    }

    @Test func tenThousandDevicesAreForgottenOnceGone() {
        var w = InteractionWindows(settings: RangingSettings())
        var out: [InteractionSummary] = []
        for d in 0..<10_000 { w.add(sighting(1_795_341_600 + Double(d) / 1000, -70, device: d), into: &out) }
        #expect(w.openCount == 10_000)
        w.expire(now: 1_795_341_700, into: &out)
        #expect(w.openCount == 0 && out.count == 10_000)
    }
}

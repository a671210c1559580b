import Foundation
import Testing

@testable import TracerSite

/// The site's self-calibration (`SiteCalibration`) on hearings made from a known truth.
@Suite struct SiteCalibrationTests {
    /// Two rooms side by side, three advertising kiosks in each, and one fixed beacon.
    static let map = """
        site: Two rooms
        deviceUUIDs: [f7826da6-4fa2-4e98-8024-bc5b71e0893e]
        rooms:
          - {key: a, name: A, outline: [[0, 0], [12, 0], [12, 8], [0, 8]]}
          - {key: b, name: B, outline: [[12, 0], [24, 0], [24, 8], [12, 8]]}
        anchors:
          - {key: k1, kind: kiosk, room: a, position: [0.3, 1], uuid: 0c5e7a1b-9d3f-4b6e-8a2c-5f1d3e7b9a40, major: 1, minor: 1}
          - {key: k2, kind: kiosk, room: a, position: [11.7, 2], uuid: 0c5e7a1b-9d3f-4b6e-8a2c-5f1d3e7b9a40, major: 1, minor: 2}
          - {key: k3, kind: kiosk, room: a, position: [5, 7.7], uuid: 0c5e7a1b-9d3f-4b6e-8a2c-5f1d3e7b9a40, major: 1, minor: 3}
          - {key: k4, kind: kiosk, room: b, position: [12.3, 6], uuid: 0c5e7a1b-9d3f-4b6e-8a2c-5f1d3e7b9a40, major: 1, minor: 4}
          - {key: k5, kind: kiosk, room: b, position: [23.7, 1], uuid: 0c5e7a1b-9d3f-4b6e-8a2c-5f1d3e7b9a40, major: 1, minor: 5}
          - {key: k6, kind: kiosk, room: b, position: [18, 0.3], uuid: 0c5e7a1b-9d3f-4b6e-8a2c-5f1d3e7b9a40, major: 1, minor: 6}
          - {key: b1, kind: beacon, room: a, position: [6, 4], uuid: 0c5e7a1b-9d3f-4b6e-8a2c-5f1d3e7b9a40, major: 2, minor: 1}
        """

    /// Receive errors (dB added to what each hears), transmit errors, the exponent and a wall.
    struct Truth {
        var receive: [String: Double] = ["k1": -4, "k2": 2.5, "k3": 0, "k4": 5, "k5": -1.5, "k6": 3]
        var chip: [String: Double] = ["k1": 0.5, "k2": -0.5, "k3": 0.8, "k4": 0, "k5": -0.3, "k6": 0.2]
        var exponent = 2.2
        var wall = 6.0
    }

    /// An hour of hearings: every anchor heard by every kiosk, 5-minute slots, with `noise`
    /// (σ of each slot's mean) and a shift from `remountAt` on for `remounted`.
    static func hearings(
        _ site: Site,
        _ truth: Truth,
        from: Double = 0,
        hours: Double = 1,
        noise: Double = 0,
        remounted: String? = nil,
        remountAt: Double = .infinity,
        shift: Double = -6
    ) -> [KioskHearing] {
        var rng = SystemRandomNumberGenerator()
        func gaussian() -> Double {
            let u = Double.random(in: 1e-12..<1, using: &rng)
            return (-2 * log(u)).squareRoot() * cos(2 * .pi * Double.random(in: 0..<1, using: &rng))
        }
        var out: [KioskHearing] = []
        let rooms = site.rooms
        for rx in site.anchors where rx.kind == .kiosk {
            for tx in site.anchors where tx.key != rx.key {
                let ri = rooms.firstIndex { $0.key == rx.room }!
                let ti = rooms.firstIndex { $0.key == tx.room }!
                let walls = Double(Room.walls(from: tx.position, in: ti, to: rx.position, in: ri, rooms: rooms))
                var slot = from
                while slot < from + hours * 3600 {
                    var mean =
                        -59 - 10 * truth.exponent * log10(tx.position.distance(to: rx.position)) - walls * truth.wall
                        + truth.receive[rx.key]! + noise * gaussian()
                    if tx.kind == .kiosk { mean += truth.receive[tx.key]! + truth.chip[tx.key]! }
                    if slot >= remountAt, remounted == rx.key || remounted == tx.key { mean += shift }
                    out.append(
                        KioskHearing(
                            receiver: rx.key,
                            emitter: tx.key,
                            rssi: mean,
                            count: 100,
                            spread: 4,
                            weakest: -120,
                            measuredPower: -59,
                            start: slot,
                            end: slot + 300
                        )
                    )
                    slot += 300
                }
            }
        }
        return out
    }

    @Test func recoversEveryKiosksReceiveOffsetTheExponentAndTheWall() throws {
        let site = try Site.parse(Self.map, file: "map.yaml")
        let truth = Truth()
        let fit = try #require(SiteCalibration.fit(Self.hearings(site, truth), site: site, from: 0, to: 3600))
        #expect(fit.links == 6 * 6)
        // No fading: only the chips' differences (±0.8 dB, which the fit cannot see in a
        // kiosk's own links beyond its prior) stand between the fit and the truth.
        for k in fit.kiosks {
            #expect(abs(k.receiverOffset - -truth.receive[k.key]!) < 0.6, "\(k.key): \(k.receiverOffset)")
            #expect(k.heard == 6 && k.heardBy == 5)
        }
        #expect(abs(fit.exponent - truth.exponent) < 0.05)
        #expect(abs(fit.wallLoss - truth.wall) < 0.3)
    }

    /// Held at the exponent the kiosks range with, the fit gives offsets for ranging at it: at
    /// the truth's exponent the same as the free fit; at a lower one (a model that expects links
    /// louder than they are), every kiosk's offset higher, by its share of what the exponent's
    /// error costs over its links (10 · 0.2 · log10 of links 4–24 m long, shared by both ends).
    @Test func anExponentHeldGivesTheOffsetsToRangeWithAtIt() throws {
        let site = try Site.parse(Self.map, file: "map.yaml")
        let truth = Truth()
        let hearings = Self.hearings(site, truth)
        let free = try #require(SiteCalibration.fit(hearings, site: site, from: 0, to: 3600))
        let atTruth = try #require(SiteCalibration.fit(hearings, site: site, from: 0, to: 3600, exponent: 2.2))
        let low = try #require(SiteCalibration.fit(hearings, site: site, from: 0, to: 3600, exponent: 2.0))
        #expect(abs(atTruth.exponent - 2.2) < 0.005 && abs(low.exponent - 2.0) < 0.005)
        for k in free.kiosks {
            let held = try #require(atTruth.kiosk(k.key))
            let lower = try #require(low.kiosk(k.key))
            #expect(abs(held.receiverOffset - k.receiverOffset) < 0.3, "\(k.key)")
            let rise = lower.receiverOffset - k.receiverOffset
            #expect(rise > 0.3 && rise < 3.5, "\(k.key): \(rise)")
        }
    }

    @Test func theTruthLiesWithinTwoStandardErrorsOnNoisyLinks() throws {
        let site = try Site.parse(Self.map, file: "map.yaml")
        let truth = Truth()
        var inside = 0
        var total = 0
        for _ in 0..<20 {
            let fit = try #require(
                SiteCalibration.fit(Self.hearings(site, truth, noise: 2.5), site: site, from: 0, to: 3600)
            )
            for k in fit.kiosks {
                total += 1
                if abs(k.receiverOffset - -truth.receive[k.key]!) <= 2 * k.uncertainty { inside += 1 }
            }
        }
        // 95% of them in theory; the chips' differences and the floor on the spread move it a little.
        #expect(Double(inside) / Double(total) >= 0.85, "\(inside) of \(total)")
    }

    @Test func aKioskNobodyHearsGetsAnUncertaintyNotANumberToTrust() throws {
        let site = try Site.parse(Self.map, file: "map.yaml")
        let hearings = Self.hearings(site, Truth()).filter { $0.receiver != "k6" && $0.emitter != "k6" }
        let fit = try #require(SiteCalibration.fit(hearings, site: site, from: 0, to: 3600))
        let k6 = try #require(fit.kiosk("k6"))
        #expect(k6.heard == 0 && k6.heardBy == 0 && k6.uncertainty > 5)
        #expect(SiteCalibration.fit([], site: site, from: 0, to: 3600) == nil)
        #expect(SiteCalibration.fit(hearings, site: site, from: 7200, to: 10800) == nil, "nothing in that hour")
    }

    @Test func aReMountedKioskIsNamedAndNoOtherIs() throws {
        let site = try Site.parse(Self.map, file: "map.yaml")
        let hearings = Self.hearings(site, Truth(), hours: 4, noise: 1, remounted: "k4", remountAt: 3 * 3600)
        let changes = SiteCalibration.changes(
            hearings,
            site: site,
            before: 0...(3 * 3600),
            recent: (3 * 3600)...(3.5 * 3600)
        )
        #expect(changes.map(\.key) == ["k4"])
        #expect(abs(changes[0].shift - 6) < 1, "reads 6 dB lower: its offset rises by 6")
        let quiet = SiteCalibration.changes(
            hearings,
            site: site,
            before: 0...(2.5 * 3600),
            recent: (2.5 * 3600)...(3 * 3600)
        )
        #expect(quiet.isEmpty)
    }

    @Test func aLinkCutByTheAdaptersFloorIsCorrectedOrLeftOut() {
        // A normal of mean −90, σ 5, cut at −95: its part above has mean −88.56 and σ 3.97, so
        // it reads 1.44 dB high.
        #expect(abs((SiteCalibration.truncationBias(mean: -88.56, sd: 3.97, floor: -95) ?? 99) - 1.44) < 0.05)
        #expect(SiteCalibration.truncationBias(mean: -70, sd: 5, floor: -95) == 0, "far above the floor")
        #expect(SiteCalibration.truncationBias(mean: -94, sd: 0.8, floor: -95) == nil, "mostly below it")
    }

    @Test func hearingsAreSlotsOfFiveMinutesPerEmitter() {
        var h = KioskHearings(receiver: "k1")
        for t in stride(from: 0.0, to: 900, by: 2) {
            h.add(emitter: "k2", rssi: t < 300 ? -70 : -80, measuredPower: -59, at: t)
            if t.truncatingRemainder(dividingBy: 4) == 0 { h.add(emitter: "b1", rssi: -60, measuredPower: -59, at: t) }
            h.add(emitter: "k1", rssi: -40, measuredPower: -59, at: t)  // its own adverts: never a hearing
        }
        let closed = h.drain()
        #expect(closed.count == 4, "k2 and b1 closed twice each as later slots began")
        let first = closed.first { $0.emitter == "k2" && $0.start == 0 }
        #expect(first?.rssi == -70 && first?.count == 150 && first?.end == 300 && first?.spread == 0)
        h.expire(now: 899)
        #expect(h.drain().isEmpty, "the slot 600–900 is still open at 899")
        h.expire(now: 900)
        let last = h.drain()
        #expect(last.count == 2 && last.allSatisfy { $0.start == 600 })
        #expect(!closed.contains { $0.emitter == "k1" })
    }
}

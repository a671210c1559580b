import Foundation
import Testing
import TracerSite

@testable import TracerSimulation

/// The simulator on the example campus: deterministic, physically sane, and its truth right.
@Suite struct SimulationTests {
    static let site: Site = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return try! Site.load(file: root.appendingPathComponent("BeaconMap/example-campus.yaml").path)
    }()

    /// 2026-11-23 08:00 UTC.
    static let start = 1_795_420_800.0

    static func simulation(seed: UInt64 = 3, people: Int = 30, hours: Double = 4) throws -> Simulation {
        try Simulation(
            site: site,
            parameters: SimulationParameters(people: people, hours: hours, seed: seed, start: start)
        )
    }

    @Test func theSameSeedGivesTheSameDayAndAnotherSeedAnother() throws {
        let a = try Self.simulation()
        let b = try Self.simulation()
        let c = try Self.simulation(seed: 4)
        #expect(a.segments == b.segments)
        #expect(a.segments != c.segments)
        let kiosk = a.kiosks[0]
        let ha = a.heard(by: kiosk)
        let hb = b.heard(by: kiosk)
        #expect(ha.count == hb.count && ha.count > 1000)
        #expect(zip(ha, hb).allSatisfy { $0.time == $1.time && $0.rssi == $1.rssi && $0.emitter == $1.emitter })
    }

    @Test func everyoneIsInsideTheirRoomsWithinTheDayAndNeverInTwoPlaces() throws {
        let sim = try Self.simulation()
        var visited = Set<String>()
        for (p, list) in sim.segments.enumerated() {
            #expect(!list.isEmpty)
            for (i, s) in list.enumerated() {
                #expect(s.person == p)
                #expect(s.from >= Self.start - 1e-6 && s.to <= Self.start + 4 * 3600 + 1e-6)
                #expect(s.to > s.from, "person \(p) segment \(i) is empty")
                if i > 0 { #expect(s.from >= list[i - 1].to - 1e-6, "person \(p) is in two places at \(s.from)") }
                if let r = s.room {
                    #expect(sim.site.rooms[r].contains(s.position), "person \(p) outside \(sim.site.rooms[r].key)")
                    visited.insert(sim.site.rooms[r].use.rawValue)
                }
            }
        }
        // Classes, lunch, corridors, the entrance and desks all happen in a morning with noon in it.
        #expect(visited.isSuperset(of: ["teaching", "dining", "circulation", "entrance", "work"]))
    }

    @Test func nobodySitsInAnOccupiedSeat() throws {
        let sim = try Self.simulation(people: 60)
        var bySeat: [String: [Segment]] = [:]
        for list in sim.segments {
            for s in list {
                guard let r = s.room, [.teaching, .dining, .meeting].contains(sim.site.rooms[r].use) else { continue }
                bySeat["\(r) \(s.position.x) \(s.position.y)", default: []].append(s)
            }
        }
        var shared = 0
        for (_, list) in bySeat {
            let sorted = list.sorted { $0.from < $1.from }
            for i in sorted.indices.dropFirst() where sorted[i].from < sorted[i - 1].to - 1e-6 {
                shared += 1
            }
        }
        #expect(shared == 0)
    }

    @Test func wallsAreCountedAlongTheLine() throws {
        let sim = try Self.simulation(people: 1)
        let rooms = Dictionary(uniqueKeysWithValues: sim.site.rooms.enumerated().map { ($1.key, $0) })
        // Lab (south) to the corridor north of it: one wall. Lab to the café, across the
        // corridor: two. Building B to building A, across the courtyard: out and in again.
        #expect(
            Room.walls(
                from: Point(6, 8),
                in: rooms["lab"]!,
                to: Point(12, 11.5),
                in: rooms["corridor"]!,
                rooms: sim.site.rooms
            ) == 1
        )
        #expect(
            Room.walls(
                from: Point(6, 8),
                in: rooms["lab"]!,
                to: Point(7, 23.5),
                in: rooms["cafe"]!,
                rooms: sim.site.rooms
            ) == 2
        )
        #expect(
            Room.walls(
                from: Point(7, 20),
                in: rooms["cafe"]!,
                to: Point(5, 40.5),
                in: rooms["a-lobby"]!,
                rooms: sim.site.rooms
            ) == 2
        )
    }

    @Test func theRSSIFollowsThePathLossModelWithoutNoise() throws {
        var p = SimulationParameters(people: 1, hours: 1, seed: 1, start: Self.start)
        p.noise = 0
        p.loss = 0
        p.shadow = 0
        p.badgeSpread = 0
        let sim = try Simulation(site: Self.site, parameters: p)
        let kiosk = sim.site.anchor("kiosk-lab")!
        let lab = sim.site.rooms.firstIndex { $0.key == "lab" }!
        // 3 m across the floor and 0.5 m in height from the kiosk: −59 − 20·log10(√9.25).
        let at = Point(kiosk.position.x, kiosk.position.y - 3)
        let rssi = sim.radio.meanRSSI(power: -59, at: at, room: lab, facing: nil, kiosk: kiosk, kioskRoom: lab)
        #expect(abs(rssi - (-59 - 20 * log10(9.25.squareRoot()))) < 1e-9)
        // Back to the kiosk: the whole shadow; side-on, half.
        var q = p
        q.shadow = 6
        let shadowed = try Simulation(site: Self.site, parameters: q).radio
        let away = shadowed.meanRSSI(power: -59, at: at, room: lab, facing: -.pi / 2, kiosk: kiosk, kioskRoom: lab)
        let side = shadowed.meanRSSI(power: -59, at: at, room: lab, facing: 0, kiosk: kiosk, kioskRoom: lab)
        #expect(abs(away - (rssi - 6)) < 1e-9 && abs(side - (rssi - 3)) < 1e-9)
        // A kiosk whose receiver reads 6 dB low hears everything 6 dB lower; the others do not.
        var r = p
        r.receiverErrors = ["kiosk-lab": -6]
        let off = try Simulation(site: Self.site, parameters: r).radio
        #expect(
            abs(off.meanRSSI(power: -59, at: at, room: lab, facing: nil, kiosk: kiosk, kioskRoom: lab) - (rssi - 6))
                < 1e-9
        )
        let seminar = sim.site.anchor("kiosk-seminar")!
        #expect(
            off.meanRSSI(power: -59, at: at, room: lab, facing: nil, kiosk: seminar, kioskRoom: lab)
                == sim.radio.meanRSSI(power: -59, at: at, room: lab, facing: nil, kiosk: seminar, kioskRoom: lab)
        )
    }

    /// A phone in scanner mode hears the fixed beacons as a kiosk hears a badge, the roles
    /// swapped: without noise, loss, shadow or spread, each advert is the path-loss model's value
    /// from the beacon to where the person is, at most one a second per beacon, and nothing else.
    @Test func aPhoneHearsTheFixedBeaconsByThePathLossModel() throws {
        var p = SimulationParameters(people: 1, hours: 1, seed: 1, start: Self.start)
        p.noise = 0
        p.loss = 0
        p.shadow = 0
        p.badgeSpread = 0
        p.phones = true
        let sim = try Simulation(site: Self.site, parameters: p)
        let heard = sim.heard(byPhoneOf: sim.people[0])
        #expect(heard.count > 100)
        var perBeacon: [Int32: [Double]] = [:]
        for h in heard {
            let beacon = sim.site.anchors[Int(-1 - h.emitter)]
            #expect(h.emitter < 0 && beacon.kind == .beacon)
            let segment = try #require(sim.segments[0].first { $0.from <= h.time && h.time < $0.to && $0.room != nil })
            let room = segment.room!
            let beaconRoom = sim.roomIndex(beacon.room)
            #expect(sim.site.rooms[room].building == sim.site.rooms[beaconRoom].building)
            let mean = sim.radio.meanRSSI(
                power: Double(beacon.measuredPower ?? -59),
                at: segment.position,
                room: room,
                facing: nil,
                kiosk: beacon,
                kioskRoom: beaconRoom
            )
            #expect(Double(h.rssi) == mean.rounded(), "\(beacon.key) at \(h.time)")
            perBeacon[h.emitter, default: []].append(h.time)
        }
        for times in perBeacon.values {
            #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 >= 0.98 })
        }
    }

    @Test func badRequestsAreRefusedWithTheOptionNamed() {
        func refused(_ change: (inout SimulationParameters) -> Void) -> String {
            var p = SimulationParameters(people: 5, hours: 1, seed: 1, start: Self.start)
            change(&p)
            do {
                _ = try Simulation(site: Self.site, parameters: p)
                return "accepted"
            } catch {
                return "\(error)"
            }
        }
        #expect(refused { $0.people = 0 } == "--people must be from 1 to 100000, not 0")
        #expect(refused { $0.hours = -1 } == "--hours must be more than 0 and at most 336, not -1.0")
        #expect(refused { $0.loss = 1 } == "--loss must be at least 0 and below 1, not 1.0")
    }
}

import Foundation
import Testing
import TracerSite

@testable import TracerColocation

/// The position likelihood on hand-built rooms: every reading is worked out from the model's own
/// formula, 10·n·log10(range) + 10 dB per wall, range counting the half metre of height.
@Suite struct PositioningTests {
    /// Room `a` (x 0–12, y 0–6) with kiosks on its west and east walls; room `b` beside it
    /// (x 12–24) with one kiosk on its far wall.
    static let plan = Plan(
        rooms: [
            .init(key: "a", name: "a", outline: [Point(0, 0), Point(12, 0), Point(12, 6), Point(0, 6)]),
            .init(key: "b", name: "b", outline: [Point(12, 0), Point(24, 0), Point(24, 6), Point(12, 6)]),
        ],
        receivers: [
            .init(key: "west", room: "a", position: Point(0, 3)),
            .init(key: "east", room: "a", position: Point(12, 1)),
            .init(key: "far", room: "b", position: Point(24, 3)),
        ],
        wallLoss: 10
    )

    /// The distance a kiosk at `kiosk` ranges for a badge at `p`, `walls` walls away, reading
    /// `db` dB weaker than the model (the badge's own offset, a receiver's error).
    static func ranged(_ p: Point, from kiosk: Point, walls: Int = 0, db: Double = 0) -> Double {
        let d = p.distance(to: kiosk)
        let range = (d * d + 0.25).squareRoot()
        return range * pow(10, (Double(walls) * 10 + db) / 20)
    }

    static func w(_ anchor: String, _ slot: Int, _ distance: Double) -> Window {
        Window(device: "x", anchor: anchor, start: Double(slot) * 30, end: Double(slot) * 30 + 29, distance: distance)
    }

    /// Slots 0–3 of a badge standing still at `p`.
    static func still(at p: Point, _ heard: [(String, Int, Double)]) -> [Window] {
        (0..<4).flatMap { s in
            heard.map { key, walls, db in
                w(key, s, ranged(p, from: plan.receiver(key)!.position, walls: walls, db: db))
            }
        }
    }

    @Test func aBadgeMidwayBetweenTwoKiosksIsPlacedThereEvenWhenItIsLoud() throws {
        let positioning = Positioning(plan: Self.plan)
        let truth = Point(6, 2)
        for db in [0.0, -6] {  // −6: both kiosks read 6 dB loud, so both distances come out half
            let windows = Self.still(at: truth, [("west", 0, db), ("east", 0, db), ("far", 1, db)])
            let fix = try #require(positioning.track(windows, device: "x", room: "a")[1])
            #expect(fix.receivers == 2)
            // The posterior mean, over the cells within the model's spread (2.5 dB of each
            // kiosk's own error is ±1.5 m at 6 m): not the point, but within a metre of it.
            #expect(fix.mean.distance(to: truth) < 1, "\(db) dB: \(fix.mean)")
        }
    }

    /// A phone in scanner mode hears three fixed beacons of room `a`: it is placed as a badge
    /// heard by three kiosks would be.
    @Test func aPhoneHearingThreeFixedBeaconsIsPlaced() throws {
        var plan = Self.plan
        plan.receivers += [
            .init(key: "b-west", kind: .beacon, room: "a", position: Point(0, 5)),
            .init(key: "b-east", kind: .beacon, room: "a", position: Point(12, 5)),
            .init(key: "b-south", kind: .beacon, room: "a", position: Point(6, 0)),
        ]
        let truth = Point(4, 2)
        let windows = (0..<4).flatMap { s in
            ["b-west", "b-east", "b-south"].map { key in
                Self.w(key, s, Self.ranged(truth, from: plan.receiver(key)!.position, db: 3))
            }
        }
        let fix = try #require(Positioning(plan: plan).track(windows, device: "x", room: "a")[2])
        #expect(fix.receivers == 3)
        // The posterior mean, not the point: 2.5 dB of each beacon's own error is ±2 m at the
        // east beacon's 8.5 m, and the mean leans towards the room's middle (1.01 m off when
        // written). Within the issue's 1.2 m.
        #expect(fix.mean.distance(to: truth) < 1.2, "\(fix.mean)")
    }

    @Test func oneKioskAloneGivesAnArcNotAPoint() throws {
        let positioning = Positioning(plan: Self.plan)
        let fix = try #require(
            positioning.track(Self.still(at: Point(6, 3), [("west", 0, 0)]), device: "x", room: "a")[0]
        )
        #expect(fix.receivers == 1)
        // Every cell kept lies near the 6 m circle round the kiosk, on both sides of its axis.
        #expect(fix.points.allSatisfy { abs($0.distance(to: Point(0, 3)) - 6) < 3 })
        #expect(fix.points.contains { $0.y < 2 } && fix.points.contains { $0.y > 4 })
    }

    /// Asked for fixes where two of the room's kiosks heard, a track has those only, each the
    /// same as in the whole track: it is smoothed over every slot a kiosk of the room heard
    /// (here slots 4 and 5, heard by `west` alone), whatever is asked.
    @Test func fixesAreWorkedOutOnlyWhereEnoughKiosksHeard() throws {
        let positioning = Positioning(plan: Self.plan)
        let truth = Point(6, 2)
        let windows =
            Self.still(at: truth, [("west", 0, 0), ("east", 0, 0)])
            + [4, 5].map { Self.w("west", $0, Self.ranged(truth, from: Point(0, 3))) }
        let all = positioning.track(windows, device: "x", room: "a")
        let placed = positioning.track(windows, device: "x", room: "a", least: 2)
        #expect(all.keys.sorted() == [0, 1, 2, 3, 4, 5] && all[4]?.receivers == 1)
        #expect(placed.keys.sorted() == [0, 1, 2, 3])
        for s in 0..<4 { #expect(placed[s] == all[s], "slot \(s)") }
        // Without slots 4 and 5 the track is another one: what was asked did not change it.
        let alone = positioning.track(Array(windows.prefix(8)), device: "x", room: "a")
        #expect(alone[3] != all[3])
    }

    /// A fix keeps the likeliest cells in order of their chance, the first by cell number on a
    /// tie, up to 97% of the chance or 64 cells.
    @Test func aFixKeepsTheLikeliestCellsInOrder() throws {
        let grid = try #require(RoomGrid(room: Self.plan.rooms[0], plan: Self.plan))
        let n = grid.cells.count
        // Even chances: the first 64 cells, 1/64 each.
        let even = grid.fix([Double](repeating: 1 / Double(n), count: n), receivers: 2)
        #expect(even.points == Array(grid.cells.prefix(64)) && even.weights.allSatisfy { abs($0 - 1 / 64) < 1e-12 })
        // Cells 7, 3, 9 and 250 hold 0.5, 0.3, 0.3 and 0.18 of 1.3 (the rest 0.02): kept in that
        // order (9 after 3, its tie), 0.846 of the chance after three and 0.985 after four.
        var p = [Double](repeating: 0.02 / Double(n - 4), count: n)
        p[7] = 0.5
        p[3] = 0.3
        p[9] = 0.3
        p[250] = 0.18
        let total = p.reduce(0, +)
        let fix = grid.fix(p.map { $0 / total }, receivers: 2)
        #expect(fix.points == [grid.cells[7], grid.cells[3], grid.cells[9], grid.cells[250]])
        #expect(abs(fix.weights.reduce(0, +) - 1) < 1e-12 && fix.weights[0] > fix.weights[1])
    }

    /// A badge in room b, 3 m from its kiosk, also heard by room a's two kiosks through the wall:
    /// their readings are 10 dB weaker than the distance, and the model knows it.
    @Test func aBadgeHeardThroughAWallIsPlacedInItsRoom() throws {
        let positioning = Positioning(plan: Self.plan)
        let truth = Point(21, 3)
        let windows = Self.still(at: truth, [("far", 0, 0), ("west", 1, 0), ("east", 1, 0)])
        let fix = try #require(positioning.track(windows, device: "x", room: "b")[0])
        #expect(fix.receivers == 1)
        #expect(fix.mean.distance(to: truth) < 1.5, "\(fix.mean)")
        // Taken as if there were no wall, room a's kiosks would put it 3.2 times as far.
        #expect(fix.mean.x > 19)
    }

    /// Not being heard is evidence: room b's badge heard by `far` only, while `west` heard it
    /// earlier, is placed further from `west` than without that. With a floor of 40 dB, `west`
    /// (one wall away: 10 dB) would hear a badge at x = 12 (31.6 dB) almost surely and one at
    /// x = 24 (37.6 dB) three times in four.
    @Test func notBeingHeardPushesTheBadgeAway() throws {
        let plan = Plan(
            rooms: Self.plan.rooms,
            receivers: Self.plan.receivers.map {
                var r = $0
                r.floor = 40
                return r
            }
        )
        let positioning = Positioning(plan: plan)
        let mid = Point(18, 3)
        let heardNow = [Self.w("far", 10, Self.ranged(mid, from: Point(24, 3)))]
        let earlier = [Self.w("west", 8, 20)]
        let without = try #require(positioning.track(heardNow, device: "x", room: "b")[10])
        let with = try #require(positioning.track(heardNow + earlier, device: "x", room: "b")[10])
        #expect(with.mean.x > without.mean.x + 1, "\(with.mean) against \(without.mean)")
    }

    /// Where a kiosk stops hearing, in its windows' y: a window's y is the measured power less
    /// its RSSI with the receiver's offset added, and the adapter drops adverts below −95 dBm
    /// before any offset, so a receiver that reads low (a larger offset) stops hearing sooner.
    @Test func aKioskThatReadsLowStopsHearingSooner() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        var site = try Site.load(file: root.appendingPathComponent("BeaconMap/example-campus.yaml").path)
        let kiosk = try #require(site.anchors.firstIndex { $0.key == "kiosk-office" })
        let before = try #require(Plan(site: site).receiver("kiosk-office")).floor
        site.anchors[kiosk].receiverOffset = 6
        let after = try #require(Plan(site: site).receiver("kiosk-office")).floor
        #expect(after == before - 6)
        // The site's +3 dB and the kiosk's +6: an advert at −95 dBm from a badge whose measured
        // power is −59 dBm has y = −59 − (−95 + 3 + 6) = 27 dB, and a window's loudest advert is
        // `hearingMargin` (6 dB) above its mean.
        #expect(abs(after - 33) < 1e-9, "\(after)")
    }

    /// A kiosk that ranges with a calibration of its own (fitted from fixed beacons, or followed
    /// from the site server's fit) stops hearing where that offset says, not the map's.
    @Test func aKioskRangingWithItsOwnCalibrationStopsHearingWhereItsOffsetSays() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let site = try Site.load(file: root.appendingPathComponent("BeaconMap/example-campus.yaml").path)
        let map = Plan(site: site)
        let office = try #require(map.receiver("kiosk-office"))
        #expect(office.offset == 0 && office.mapOffset == 0)  // none of its own (the site's +3 dB)
        let plan = map.calibrated(["kiosk-office": 6, "b-lab-door": 6, "kiosk-lab": 0])
        let calibrated = try #require(plan.receiver("kiosk-office"))
        #expect(calibrated.floor == office.floor - 6 && calibrated.offset == 6)
        // The site's +3 dB and the kiosk's own +6: as the map giving it +6 would.
        var site6 = site
        site6.anchors[try #require(site.anchors.firstIndex { $0.key == "kiosk-office" })].receiverOffset = 6
        #expect(calibrated.floor == Plan(site: site6).receiver("kiosk-office")?.floor)
        // A fixed beacon is heard by phones, not a kiosk ranging; an offset equal to the map's
        // changes nothing.
        #expect(plan.receiver("b-lab-door") == map.receiver("b-lab-door"))
        #expect(plan.receiver("kiosk-lab") == map.receiver("kiosk-lab"))
        #expect(plan.receivers.filter { $0.key != "kiosk-office" } == map.receivers.filter { $0.key != "kiosk-office" })
    }

    /// A receiver 6 dB off (before its running calibration converges): the other kiosks pull
    /// the position back towards the truth, but not all the way (the model cannot tell which
    /// kiosk is wrong; it takes part of the error as the badge's own).
    @Test func aReceiverReadingOffMovesThePositionLessThanItsOwnDistance() throws {
        let positioning = Positioning(plan: Self.plan)
        let truth = Point(4, 4)
        let windows = Self.still(at: truth, [("west", 0, 6), ("east", 0, 0), ("far", 1, 0)])
        let fix = try #require(positioning.track(windows, device: "x", room: "a")[0])
        // West alone, 6 dB off, ranges 4.1 m as 8.2 m: 4.2 m wrong.
        let alone = Self.ranged(truth, from: Point(0, 3), db: 6) - truth.distance(to: Point(0, 3))
        #expect(fix.mean.distance(to: truth) < alone * 0.75, "\(fix.mean), west alone \(alone) m off")
        let calibrated = Self.still(at: truth, [("west", 0, 0), ("east", 0, 0), ("far", 1, 0)])
        let right = try #require(positioning.track(calibrated, device: "x", room: "a")[0])
        #expect(right.mean.distance(to: truth) < fix.mean.distance(to: truth))
    }

    /// A badge that walks from room a into room b mid-slot: a's kiosks' windows end where b's
    /// starts, and the rooms follow it within the slot, not a slot late.
    @Test func theRoomFollowsABadgeThroughADoorWithinItsSlot() throws {
        let positioning = Positioning(plan: Self.plan)
        let inA = Point(10, 3)
        let inB = Point(20, 3)
        var windows = Self.still(at: inA, [("west", 0, 0), ("east", 0, 0), ("far", 1, 0)])  // slots 0–3
        windows += Self.still(at: inB, [("west", 1, 0), ("east", 1, 0), ("far", 0, 0)]).map {
            var w = $0
            w.start += 150  // slots 5–8
            w.end += 150
            return w
        }
        // Slot 4 (120–150 s): in a until 132, in b after.
        func cut(_ key: String, _ p: Point, walls: Int, _ from: Double, _ to: Double) -> Window {
            Window(
                device: "x",
                anchor: key,
                start: from,
                end: to,
                distance: Self.ranged(p, from: Self.plan.receiver(key)!.position, walls: walls)
            )
        }
        windows += [
            cut("west", inA, walls: 0, 120, 131), cut("east", inA, walls: 0, 120, 132),
            cut("far", inB, walls: 0, 133, 149), cut("east", inB, walls: 1, 133, 149),
        ]
        let track = positioning.rooms(windows, device: "x")
        let chances = try [("a", 60.0), ("a", 126), ("b", 141), ("b", 200)].map { room, t in
            try #require(track.chance(of: room, at: t))
        }
        // In a at 126 s with 0.87 (each window's evidence weighs a tenth: one slot's worth of
        // kiosks going quiet is not yet certain), in b from 133 s.
        #expect(chances[0] > 0.99 && chances[1] > 0.8 && chances[2] > 0.99 && chances[3] > 0.99, "\(chances)")
        #expect(track.chance(of: "a", at: 1000) == nil, "no step after the last window")
    }

    /// Heard by the kiosks of a room with no room next to it: in that room throughout, however
    /// badly its readings fit.
    @Test func aRunHeardByTheKiosksOfARoomWithNoNeighbourIsInThatRoom() throws {
        // Room b moved 10 m east: nothing shares a wall with a.
        var plan = Self.plan
        plan.rooms[1].outline = plan.rooms[1].outline.map { Point($0.x + 10, $0.y) }
        #expect(plan.adjacent == [[], []])
        let positioning = Positioning(plan: plan)
        // Heard by a's two kiosks in slots 0–3, from slot 2 at 60 m, which no point of a
        // explains: no other room's kiosk heard it, so it was in a throughout.
        let windows = Self.still(at: Point(6, 3), [("west", 0, 0), ("east", 0, 0)]).map { w in
            var far = w
            if w.start >= 60 { far.distance = 60 }
            return far
        }
        let track = positioning.rooms(windows, device: "x")
        #expect(track.rooms == ["a"])
        for s in 0..<4 { #expect(track.chance(of: "a", at: Double(s) * 30 + 15) == 1, "slot \(s)") }
        #expect(track.chance(of: "b", at: 15) == 0)
        #expect(track.chance(of: "a", at: 200) == nil)
    }

    /// Room a, a corridor along its north wall that no kiosk covers, and room c beyond it (all
    /// 12 m long), kiosks in a and c only.
    static let corridor = Plan(
        rooms: [
            .init(key: "a", name: "a", outline: [Point(0, 0), Point(12, 0), Point(12, 6), Point(0, 6)]),
            .init(
                key: "corridor",
                name: "corridor",
                outline: [Point(0, 6), Point(12, 6), Point(12, 8), Point(0, 8)],
                use: .circulation
            ),
            .init(key: "c", name: "c", outline: [Point(0, 8), Point(12, 8), Point(12, 14), Point(0, 14)]),
        ],
        receivers: [
            .init(key: "west", room: "a", position: Point(0, 3)),
            .init(key: "east", room: "a", position: Point(12, 1)),
            .init(key: "north", room: "c", position: Point(6, 14)),
        ],
        wallLoss: 10
    )

    /// The map's rooms next door: a shared wall (or one within 0.3 m), not a corner, on the same
    /// floor of the same building.
    @Test func roomsNextDoorShareAWallOnTheSameFloor() {
        #expect(Self.corridor.adjacent == [[1], [0, 2], [1]])
        #expect(Self.plan.adjacent == [[1], [0]])
        func square(_ key: String, _ x: Double, _ y: Double, floor: Int? = nil) -> TracerSite.Room {
            .init(
                key: key,
                name: key,
                floor: floor,
                outline: [Point(x, y), Point(x + 4, y), Point(x + 4, y + 4), Point(x, y + 4)]
            )
        }
        // o and gap 0.2 m apart; corner touching o at one point; far 0.6 m below o; upstairs
        // over o, a floor up.
        let plan = Plan(
            rooms: [
                square("o", 0, 0), square("gap", 4.2, 0), square("corner", -4, 4), square("far", 0, -4.6),
                square("upstairs", 0, 0, floor: 1),
            ],
            receivers: []
        )
        #expect(plan.adjacent == [[1], [0], [], [], []])
    }

    /// A badge standing in the corridor, heard through a wall by both rooms' kiosks: the corridor
    /// is a place too, not the loudest room.
    @Test func aBadgeInACorridorNoKioskCoversIsPlacedThere() throws {
        let plan = Self.corridor
        let positioning = Positioning(plan: plan)
        func at(_ p: Point, walls: [String: Int], slots: Range<Int>) -> [Window] {
            slots.flatMap { s in
                plan.receivers.map { r in
                    Self.w(r.key, s, Self.ranged(p, from: r.position, walls: walls[r.key] ?? 0))
                }
            }
        }
        let windows =
            at(Point(6, 4), walls: ["north": 2], slots: 0..<6)
            + at(Point(6, 7), walls: ["west": 1, "east": 1, "north": 1], slots: 6..<9)
            + at(Point(6, 11), walls: ["west": 2, "east": 2], slots: 9..<15)
        let track = positioning.rooms(windows, device: "x")
        #expect(track.rooms == ["a", "c", "corridor"])
        #expect(try #require(track.chance(of: "a", at: 45)) > 0.9)
        #expect(try #require(track.chance(of: "corridor", at: 7 * 30 + 15)) > 0.5)
        #expect(try #require(track.chance(of: "c", at: 12 * 30 + 15)) > 0.9)
    }

    /// A badge sitting in room a at the west end of a 100 m corridor, heard by a's kiosks and,
    /// faintly, by a kiosk 93 m away at the east end: further than room a's grid keeps models
    /// for. The room chain gives every room a model for every kiosk that heard the run. Before,
    /// room a (and room z, which has none for a's kiosks) had no model for that kiosk, so only
    /// the corridor, long enough to reach both ends, could explain the step, and the badge was
    /// placed there (on random site 13, 18,700 of a reporter's seconds in one room).
    @Test func aFaintKioskFarDownTheCorridorDoesNotPutABadgeInIt() throws {
        let plan = Plan(
            rooms: [
                .init(key: "a", name: "a", outline: [Point(0, 0), Point(12, 0), Point(12, 6), Point(0, 6)]),
                .init(
                    key: "corridor",
                    name: "corridor",
                    outline: [Point(0, 6), Point(100, 6), Point(100, 8), Point(0, 8)],
                    use: .circulation
                ),
                .init(key: "z", name: "z", outline: [Point(88, 0), Point(100, 0), Point(100, 6), Point(88, 6)]),
            ],
            receivers: [
                .init(key: "west", room: "a", position: Point(0, 3)),
                .init(key: "east", room: "a", position: Point(12, 1)),
                .init(key: "far", room: "z", position: Point(99, 3)),
            ],
            wallLoss: 10
        )
        let positioning = Positioning(plan: plan)
        let sitting = Point(6, 3)
        let windows = (0..<10).flatMap { s in
            [
                Self.w("west", s, Self.ranged(sitting, from: Point(0, 3))),
                Self.w("east", s, Self.ranged(sitting, from: Point(12, 1))),
                Self.w("far", s, Self.ranged(sitting, from: Point(99, 3), walls: 2, db: -10)),
            ]
        }
        let track = positioning.rooms(windows, device: "x")
        #expect(track.rooms == ["a", "corridor", "z"])
        let chances = try (0..<10).map { s in try #require(track.chance(of: "a", at: Double(s) * 30 + 15)) }
        // Each step's evidence weighs a tenth, so the first slot is 0.74 sure, the third 0.95.
        #expect(chances.allSatisfy { $0 > 0.7 } && chances[2...].allSatisfy { $0 > 0.95 }, "\(chances)")
    }

    /// Between the chain's rooms a badge mostly stays, leaves a corridor at once, and goes into
    /// the rooms next door: from a to c only through the corridor, but for `farMove`.
    @Test func badgesMoveThroughRoomsNextDoor() {
        let moves = RoomMoves(rooms: [0, 1, 2], plan: Self.corridor)
        for row in moves.step { #expect(abs(row.reduce(0, +) - 1) < 1e-12) }
        #expect(moves.step[0][0] == 1 - Positioning.roomChange)
        #expect(moves.step[1][1] == 1 - Positioning.passing)
        #expect(abs(moves.step[0][2] - Positioning.roomChange * Positioning.farMove) < 1e-15)
        #expect(abs(moves.step[0][1] - Positioning.roomChange * (1 - Positioning.farMove)) < 1e-15)
        // Two slots on, more of a's chance has reached c through the corridor than in one.
        let one = moves.forward([1, 0, 0], slots: 1)
        let two = moves.forward([1, 0, 0], slots: 2)
        #expect(two[2] > one[2] && abs(two.reduce(0, +) - 1) < 1e-12)
        // The backward message is the transpose's: Σᵢ p[i]·(T·b)[i] = Σⱼ (p·T)[j]·b[j].
        let p = [0.2, 0.3, 0.5]
        let b = [0.9, 0.1, 0.4]
        let left = zip(p, moves.backward(b, slots: 3)).map { $0 * $1 }.reduce(0, +)
        let right = zip(moves.forward(p, slots: 3), b).map { $0 * $1 }.reduce(0, +)
        #expect(abs(left - right) < 1e-12)
    }

    @Test func oneLoudWindowNextDoorDoesNotMoveTheRoom() throws {
        let positioning = Positioning(plan: Self.plan)
        let inA = Point(9, 3)
        var windows = (0..<10).flatMap { s in
            Self.still(at: inA, [("west", 0, 0), ("east", 0, 0), ("far", 1, 0)]).filter { $0.start < 30 }.map {
                var w = $0
                w.start += Double(s) * 30
                w.end += Double(s) * 30
                return w
            }
        }
        // Slot 5: far reads 15 m, as if there were no wall, instead of 47 m.
        windows = windows.map { w in
            guard w.anchor == "far", positioning.slot(of: w.start) == 5 else { return w }
            var loud = w
            loud.distance /= pow(10, 10.0 / 20)
            return loud
        }
        let track = positioning.rooms(windows, device: "x")
        for s in 0..<10 {
            #expect(try #require(track.chance(of: "a", at: Double(s) * 30 + 15)) > 0.5, "slot \(s)")
        }
    }

    @Test func thePairProbabilityCountsTheChancesWithinTheRadius() {
        // a: two points, 0.5 each; b: one point. Within 6 m of b: only a's first.
        let a = Fix(
            points: [Point(0, 0), Point(10, 0)],
            weights: [0.5, 0.5],
            mean: Point(5, 0),
            receivers: 2
        )
        let b = Fix(points: [Point(3, 0)], weights: [1], mean: Point(3, 0), receivers: 2)
        #expect(Positioning.probability(a, b, radius: 6) == 0.5)
        #expect(Positioning.probability(a, b, radius: 7) == 1)
        #expect(Positioning.probability(a, b, radius: 2.9) == 0)
    }

    /// A 20 × 14 m hall with two kiosks on its south wall, at (2, 0) and (18, 0): the whole hall
    /// lies on one side of the line between them, so two distances give one point. The reporter
    /// sits at (10, 6); one neighbour 1.4 m away at (11, 7); another at (2, 10), 8.9 m away but
    /// at the same 10 m from the west kiosk. From that kiosk alone the arc rule cannot tell them
    /// apart (two points of the 10 m arc inside the hall, 0° to 101.5° round the kiosk, are
    /// within 6 m, 34.9° apart, with a chance of 1 − (101.5 − 34.9)² / 101.5² = 0.57); the east
    /// kiosk's 10 m against 18.9 m can.
    /// The same with the hall's two anchors fixed beacons heard by phones in scanner mode
    /// (docs/design.md): a phone's window is at the beacon with the distance from it, so the
    /// likelihood and the verdicts are the same.
    @Test(arguments: [Anchor.Kind.kiosk, .beacon])
    func pairsAreJudgedByPositionsWhereTwoReceiversHeardBoth(kind: Anchor.Kind) {
        let hall = TracerSite.Room(
            key: "hall",
            name: "hall",
            outline: [Point(0, 0), Point(20, 0), Point(20, 14), Point(0, 14)]
        )
        let west = Point(2, 0)
        let east = Point(18, 0)
        var policy = ExposurePolicy()
        policy.separation = .geometric
        policy.geometry = [
            "west": RoomGeometry(kiosk: west, room: hall), "east": RoomGeometry(kiosk: east, room: hall),
        ]
        policy.plan = Plan(
            rooms: [hall],
            receivers: [
                .init(key: "west", kind: kind, room: "hall", position: west),
                .init(key: "east", kind: kind, room: "hall", position: east),
            ]
        )
        var windows: [Window] = []
        for (device, p) in [("R", Point(10, 6)), ("near", Point(11, 7)), ("far", Point(2, 10))] {
            for s in 0..<4 {
                for (key, k) in [("west", west), ("east", east)] {
                    windows.append(
                        Window(
                            device: device,
                            anchor: key,
                            start: Double(s) * 30,
                            end: Double(s) * 30 + 29,
                            distance: Self.ranged(p, from: k)
                        )
                    )
                }
            }
        }
        let arc = RoomGeometry(kiosk: west, room: hall).probability(10, 10, radius: 6)
        #expect(arc > 0.5 && arc < 0.65, "the arc rule's chance, 0.57 by hand: \(arc)")
        let judged = Colocation(policy: policy).episodes(reporter: "R", windows: windows)
        #expect(Set(judged.map(\.device)) == ["near"])
        #expect(judged.count == 1, "both kiosks heard the pair: one episode for the hall")
        // One decision over the window, with its chance; the separation it shows is within the
        // radius it flagged for.
        #expect((judged.first?.chance ?? 0) >= policy.chance)
        #expect((judged.first?.low ?? 99) <= policy.radius)
        // Positions can decide only in the reporter's slots that both receivers heard: there the
        // reads keep undecided pairs. Without the east one's slot 2, slot 2 is the arc rule's.
        let mine = windows.filter { $0.device == "R" }
        #expect(Colocation(policy: policy).reads(reporter: mine).map(\.placed) == [[0, 1, 2, 3], [0, 1, 2, 3]])
        let fewer = mine.filter { !($0.anchor == "east" && $0.start == 60) }
        #expect(Colocation(policy: policy).reads(reporter: fewer).map(\.placed) == [[0, 1, 3], [0, 1, 3]])
        policy.positions = false
        let byDistance = Colocation(policy: policy).episodes(reporter: "R", windows: windows)
        #expect(Set(byDistance.map(\.device)) == ["near", "far"])
    }

    /// `Positioning.compare` works from the second fix's bounding box; over thousands of pairs
    /// of fixes — apart, overlapping, straddling the radius, on a grid of cells and off it — its
    /// chance and least separation are the plain double loop's, bit for bit, and each of its
    /// three ways (all near, none, point by point) is met.
    @Test func fixesComparedByTheirBoxesAreComparedPointByPoint() {
        func everyPoint(_ a: Fix, _ b: Fix, radius: Double) -> (chance: Double, closest: Double) {
            var p = 0.0
            var least = Double.infinity
            for i in a.points.indices {
                var near = 0.0
                for j in b.points.indices {
                    let (u, v) = (a.points[i], b.points[j])
                    let d2 = (u.x - v.x) * (u.x - v.x) + (u.y - v.y) * (u.y - v.y)
                    least = min(least, d2)
                    if d2 <= radius * radius { near += b.weights[j] }
                }
                p += a.weights[i] * near
            }
            return (min(1, p), least.squareRoot())
        }
        var state: UInt64 = 11
        func uniform() -> Double {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(state >> 11) / Double(UInt64(1) << 53)
        }
        func fix(around c: Point, spread: Double, onGrid: Bool) -> Fix {
            let n = 1 + Int(uniform() * 64)
            var points: [Point] = []
            var weights: [Double] = []
            for _ in 0..<n {
                var (x, y) = (c.x + (uniform() - 0.5) * spread, c.y + (uniform() - 0.5) * spread)
                if onGrid { (x, y) = ((x * 2).rounded() / 2 + 0.25, (y * 2).rounded() / 2 + 0.25) }
                points.append(Point(x, y))
                weights.append(uniform())
            }
            let total = weights.reduce(0, +)
            return Fix(points: points, weights: weights.map { $0 / total }, mean: c, receivers: 2)
        }
        var ways = (all: 0, none: 0, some: 0)
        for k in 0..<4_000 {
            let a = fix(around: Point(10, 10), spread: 0.5 + uniform() * 6, onGrid: k % 2 == 0)
            let apart = uniform() * 14
            let b = fix(around: Point(10 + apart, 10 + uniform() * 2), spread: 0.5 + uniform() * 6, onGrid: k % 3 == 0)
            let radius = k % 5 == 0 ? 2 : 6.0
            let fast = Positioning.compare(a, b, radius: radius)
            let slow = everyPoint(a, b, radius: radius)
            #expect(
                fast.chance.bitPattern == slow.chance.bitPattern,
                "pair \(k): \(fast.chance) against \(slow.chance)"
            )
            #expect(
                fast.closest.bitPattern == slow.closest.bitPattern,
                "pair \(k): \(fast.closest) against \(slow.closest)"
            )
            if slow.chance >= 1 - 1e-12 {
                ways.all += 1
            } else if slow.chance == 0 {
                ways.none += 1
            } else {
                ways.some += 1
            }
        }
        #expect(ways.all > 100 && ways.none > 100 && ways.some > 100, "\(ways)")
    }
}

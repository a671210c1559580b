import Foundation
import TracerSite

/// A site nobody tuned tracer for, drawn at random, with a radio as published measurements find
/// it: what efficacy is measured on (`tracer simulate --random-site`, `Tools/bench/efficacy
/// --sites`), so that no setting is chosen on one campus or one seed.
///
/// The building is one corridor 2–3 m wide with rooms 4–30 m wide along both sides, sharing
/// walls with their neighbours and with the corridor; each room has 1–3 kiosks on its walls (more
/// in larger rooms), and the corridor usually none. 60–120 people spend 2–3 hours moving between
/// classes, meetings, desks and a café, and within their stays. The radio (values from Strzoda et
/// al. 2022, the exposure-notification calibration table, ESPresense's optimiser and
/// body-shadowing studies): each kiosk's receiver off by up to ±5 dB and missing 10–40% of
/// adverts; each badge's transmitter off by up to ±6 dB, advertising every 1–3 s; noise σ 4–6 dB,
/// half of it drifting over about 10 s; walls of 3–8 dB; the wearer's body 3–10 dB with their
/// back to a kiosk; a path-loss exponent of 1.8–2.4 the map does not state.
public struct RandomSite: Sendable {
    public let seed: UInt64
    /// The map as a site would write it: rooms and kiosks, nothing about the radio.
    public let yaml: String
    public let site: Site
    /// The people, hours and the radio's truth (what the map does not know).
    public let parameters: SimulationParameters

    /// Where a room's kiosks go on its walls.
    public enum Placement: String, Sendable, CaseIterable {
        /// Each on a wall of its own, drawn at random: a wall shared with the next room or the
        /// corridor as often as the outside one (what the targets are measured on).
        case drawn
        /// Every one on the room's outside wall (the one across from the corridor), spread evenly
        /// along it: away from the corridor, and from the next rooms but at the ends.
        case outside
        /// In the middle of the room (on its ceiling), spread evenly along its longer side's
        /// middle line: as far from every other room and the corridor as the room allows.
        case centre
        /// As drawn, but a kiosk drawn on a wall its room shares with the next room moves to
        /// where `centre` would put it; those on the corridor's wall or an outside wall stay.
        ///
        /// With any of them, everything else is drawn as with `drawn`, so the sites differ only
        /// in where their kiosks are (EFFICACY.md, "Where a kiosk is mounted").
        case offSharedWalls = "off-shared-walls"
    }

    /// Draws site `seed`; its map is parsed as if read from `file`.
    public init(seed: UInt64, start: Double, file: String = "map.yaml", placement: Placement = .drawn) throws {
        var rng = SeededGenerator(seed: seed, stream: "random-site")
        self.seed = seed
        let corridorWidth = (rng.uniform(2, 3) * 10).rounded() / 10
        // Rooms along the two sides: widths 4–30 m (most of them modest), depths 5–12 m.
        struct Drawn {
            var key: String
            var name: String
            var use: Room.Use
            var outline: [Point]
        }
        var rooms: [Drawn] = []
        let count = 4 + rng.index(6)  // 4–9 rooms
        let south = (count + 1) / 2
        var x = [0.0, 0.0]
        let depth = [rng.uniform(5, 12).rounded(), rng.uniform(5, 12).rounded()]
        var uses: [Room.Use] = []
        for i in 0..<count {
            // Widths: a few large rooms among small ones.
            let width = rng.chance(0.3) ? rng.uniform(14, 30).rounded() : rng.uniform(4, 12).rounded()
            let side = i < south ? 0 : 1
            let x0 = x[side]
            x[side] += width
            let outline =
                side == 0
                ? [Point(x0, -depth[0]), Point(x0 + width, -depth[0]), Point(x0 + width, 0), Point(x0, 0)]
                : [
                    Point(x0, corridorWidth), Point(x0 + width, corridorWidth),
                    Point(x0 + width, corridorWidth + depth[1]), Point(x0, corridorWidth + depth[1]),
                ]
            let area = width * depth[side]
            let choices: [Room.Use] =
                area >= 120
                ? [.teaching, .teaching, .dining, .work]
                : area >= 50 ? [.teaching, .meeting, .work, .work] : [.meeting, .work]
            let use = rng.pick(choices)
            uses.append(use)
            rooms.append(Drawn(key: "room-\(i + 1)", name: "Room \(i + 1)", use: use, outline: outline))
        }
        // Somewhere to study, to have lunch and to be taught.
        for (need, index) in [(Room.Use.work, 0), (.dining, count - 1), (.teaching, count / 2)]
        where !uses.contains(need) {
            rooms[index].use = need
            uses[index] = need
        }
        let length = max(x[0], x[1])
        rooms.append(
            Drawn(
                key: "corridor",
                name: "Corridor",
                use: .circulation,
                outline: [Point(0, 0), Point(length, 0), Point(length, corridorWidth), Point(0, corridorWidth)]
            )
        )

        // Kiosks on the walls, 0.3 m in, each on a wall no other kiosk of the room is on.
        struct Kiosk {
            var key: String
            var room: String
            var position: Point
        }
        var kiosks: [Kiosk] = []
        for (i, r) in rooms.enumerated() {
            let lo = Point(r.outline.map(\.x).min()!, r.outline.map(\.y).min()!)
            let hi = Point(r.outline.map(\.x).max()!, r.outline.map(\.y).max()!)
            let area = (hi.x - lo.x) * (hi.y - lo.y)
            var n: Int
            if r.use == .circulation {
                n = rng.chance(0.3) ? 1 : 0
            } else {
                n = area >= 150 ? 2 + rng.index(2) : area >= 60 ? 1 + rng.index(2) : 1
            }
            var walls = [0, 1, 2, 3]
            // Whether a wall (1: east, 3: west) is one the room shares with the next room on its
            // side of the corridor.
            func sharesWall(_ wall: Int) -> Bool {
                guard wall == 1 || wall == 3 else { return false }
                let x = wall == 1 ? hi.x : lo.x
                return rooms.contains { other in
                    other.key != r.key && other.use != .circulation
                        && other.outline.map(\.y).min()! == lo.y
                        && other.outline.contains { $0.x == x }
                }
            }
            for k in 0..<n {
                let wall = walls.remove(at: rng.index(walls.count))
                let inset = 0.3
                let p: Point
                switch wall {
                case 0: p = Point(rng.uniform(lo.x + inset, hi.x - inset), lo.y + inset)
                case 1: p = Point(hi.x - inset, rng.uniform(lo.y + inset, hi.y - inset))
                case 2: p = Point(rng.uniform(lo.x + inset, hi.x - inset), hi.y - inset)
                default: p = Point(lo.x + inset, rng.uniform(lo.y + inset, hi.y - inset))
                }
                let key = r.use == .circulation ? "kiosk-corridor" : "kiosk-\(i + 1)" + (k == 0 ? "" : "-\(k + 1)")
                var at = p
                if placement == .outside, r.use != .circulation {
                    // The wall across from the corridor: the least y on the south side, the most
                    // on the north (the corridor runs from y = 0 to its width).
                    let along = lo.x + (hi.x - lo.x) * Double(k + 1) / Double(n + 1)
                    at = Point(along, lo.y < 0 ? lo.y + inset : hi.y - inset)
                } else if placement == .centre || (placement == .offSharedWalls && sharesWall(wall)),
                    r.use != .circulation
                {
                    let share = Double(k + 1) / Double(n + 1)
                    at =
                        hi.x - lo.x >= hi.y - lo.y
                        ? Point(lo.x + (hi.x - lo.x) * share, (lo.y + hi.y) / 2)
                        : Point((lo.x + hi.x) / 2, lo.y + (hi.y - lo.y) * share)
                }
                kiosks.append(Kiosk(key: key, room: r.key, position: Point(Self.round(at.x), Self.round(at.y))))
            }
        }

        var yaml = """
            # A random site (tracer simulate --random-site \(seed)): rooms along a corridor, kiosks on
            # their walls. Nothing here says how the radio behaves: that is the simulation's truth.
            site: Random Site \(seed)
            deviceUUIDs:
              - f7826da6-4fa2-4e98-8024-bc5b71e0893e
              - 2f234454-cf6d-4a0f-adf2-f4911ba9ffa6
            rooms:

            """
        for r in rooms {
            let outline = r.outline.map { "[\(Self.text($0.x)), \(Self.text($0.y))]" }.joined(separator: ", ")
            yaml +=
                "  - {key: \(r.key), name: \(r.name), building: A, floor: 0, outline: [\(outline)], use: \(r.use.rawValue)}\n"
        }
        yaml += "anchors:\n"
        // Every kiosk also advertises as a fixed beacon (`tracer advertise`), so they hear each other.
        for (i, k) in kiosks.enumerated() {
            yaml +=
                "  - {key: \(k.key), kind: kiosk, room: \(k.room), position: [\(Self.text(k.position.x)), \(Self.text(k.position.y))], uuid: \(Self.kioskUUID), major: 1, minor: \(i + 1)}\n"
        }
        // What the README advises for worn badges: the body costs about 3 dB on average.
        yaml += "settings:\n  receiverOffset: 3\n"
        self.yaml = yaml
        site = try Site.parse(yaml, file: file)

        var p = SimulationParameters(
            people: 60 + rng.index(61),
            hours: [2, 2.5, 3][rng.index(3)],
            seed: seed,
            start: start
        )
        p.noise = (rng.uniform(4, 6) * 10).rounded() / 10
        p.drift = 0.5
        p.driftSeconds = 10
        p.shadow = rng.uniform(3, 10).rounded()
        p.wallLoss = rng.uniform(3, 8).rounded()
        p.exponent = (rng.uniform(1.8, 2.4) * 100).rounded() / 100
        p.badgeOffsetBound = 6
        p.badgeIntervals = 1...3
        p.movement = true
        p.beaconInterval = 0
        for k in kiosks {
            p.receiverErrors[k.key] = (rng.uniform(-5, 5) * 10).rounded() / 10
            p.kioskLoss[k.key] = (rng.uniform(0.1, 0.4) * 100).rounded() / 100
        }
        // The kiosks' own adverts, drawn apart so that the rest of the site stays as it was: each
        // transmits off by its receive error (one antenna, one mounting) and ±1 dB of its chip's;
        // each pair of kiosks keeps its own fading, σ 1–3 dB.
        var radio = SeededGenerator(seed: seed, stream: "random-site:kiosk-radio")
        p.kioskInterval = 2
        p.linkFading = (radio.uniform(1, 3) * 10).rounded() / 10
        for k in kiosks {
            p.transmitErrors[k.key] = p.receiverErrors[k.key]! + (radio.uniform(-1, 1) * 10).rounded() / 10
        }
        // Every kiosk loses its own share; `loss` says their mean (what the truth reports), summed
        // in the kiosks' order: a dictionary's order differs from one to the next, and a mean on
        // a rounding edge (seed 12's 0.285) came out 0.28 from one draw and 0.29 from another.
        p.loss = (kiosks.map { p.kioskLoss[$0.key]! }.reduce(0, +) / Double(kiosks.count) * 100).rounded() / 100
        parameters = p
    }

    /// The proximity UUID the random sites' kiosks advertise under.
    public static let kioskUUID = "0c5e7a1b-9d3f-4b6e-8a2c-5f1d3e7b9a40"

    static func round(_ x: Double) -> Double { (x * 10).rounded() / 10 }

    static func text(_ x: Double) -> String {
        x == x.rounded() ? String(Int(x)) : String(x)
    }
}

import Foundation
import TracerSite

/// Plans everyone's day on a site: arrivals, classes and meetings, breaks, lunch, corridors and
/// departures, at seats inside the rooms. Deterministic for a seed.
///
/// The day is cut into hour-long periods. Teaching rooms hold a class in most periods (five past
/// to five to the hour); meeting rooms hold meetings of 30 or 45 minutes. Students go to classes
/// and spend free periods in work or dining rooms; staff keep a desk in a work room and go to
/// meetings and coffee; visitors come for a while to a clinic or a meeting. The noon period is
/// lunch. Moving between rooms of a building takes a walk through its corridor; between
/// buildings, a few minutes outdoors.
struct Planner {
    let site: Site
    let parameters: SimulationParameters
    private var rng: SeededGenerator
    private let byUse: [Room.Use: [Int]]
    private let areas: [Double]
    private var layouts: [SeatLayout]

    /// One thing a person does in one room, before seats are given.
    struct Activity {
        var room: Int
        var from: Double
        var to: Double
    }

    struct Session {
        var room: Int
        var from: Double
        var to: Double
    }

    init(site: Site, parameters: SimulationParameters) {
        self.site = site
        self.parameters = parameters
        rng = SeededGenerator(seed: parameters.seed, stream: "schedule")
        var byUse: [Room.Use: [Int]] = [:]
        for (i, r) in site.rooms.enumerated() { byUse[r.use, default: []].append(i) }
        self.byUse = byUse
        areas = site.rooms.map { Geometry.area($0.outline) }
        var seatRNG = SeededGenerator(seed: parameters.seed, stream: "seats")
        layouts = site.rooms.map { SeatLayout(room: $0, rng: &seatRNG) }
    }

    func rooms(_ uses: Room.Use...) -> [Int] {
        uses.flatMap { byUse[$0] ?? [] }
    }

    /// The people and their segments, each person's in time order.
    mutating func plan(people: [Person]) -> [[Segment]] {
        let t0 = parameters.start
        let t1 = parameters.end
        let periods = Int((parameters.hours).rounded(.up))
        var sessions: [[Session]] = []  // per period: classes and meetings
        for k in 0..<periods {
            let p0 = t0 + Double(k) * 3600
            var list: [Session] = []
            if !isLunch(p0) {
                for r in rooms(.teaching) where rng.chance(0.75) {
                    list.append(Session(room: r, from: p0 + 300, to: min(t1, p0 + 3300)))
                }
            }
            for r in rooms(.meeting) where rng.chance(0.6) {
                let from = p0 + rng.pick([0.0, 900, 1800])
                list.append(Session(room: r, from: from, to: min(t1, from + rng.pick([1800.0, 2700]))))
            }
            sessions.append(list.filter { $0.to - $0.from >= 600 })
        }

        var plans: [[Activity]] = []
        for person in people {
            plans.append(activities(for: person, sessions: sessions))
        }
        return seat(plans)
    }

    func isLunch(_ p0: Double) -> Bool {
        let hour = Int((p0.truncatingRemainder(dividingBy: 86_400)) / 3600)
        return hour == 12
    }

    /// A person's activities, in order, covering arrival to departure without gaps.
    mutating func activities(for person: Person, sessions: [[Session]]) -> [Activity] {
        let t0 = parameters.start
        let t1 = parameters.end
        let span = t1 - t0
        let work = rooms(.work)
        let dining = rooms(.dining)
        let teaching = rooms(.teaching)
        let care = rooms(.care)
        let fallback = work.isEmpty ? Array(site.rooms.indices) : work
        var arrival: Double
        var departure: Double
        var home: Int
        switch person.role {
        case .staff:
            arrival = t0 + rng.uniform(0, min(2700, span * 0.2))
            departure =
                rng.chance(0.15) ? t0 + span * rng.uniform(0.5, 0.9) : t1 - rng.uniform(0, min(1800, span * 0.1))
            home = fallback[rng.weighted(fallback.map { areas[$0] })]
        case .student:
            arrival = t0 + rng.uniform(0, min(3000, span * 0.25))
            departure =
                rng.chance(0.2) ? t0 + span * rng.uniform(0.5, 0.95) : t1 - rng.uniform(0, min(1200, span * 0.1))
            let free = fallback + dining
            home = free[rng.weighted(free.map { areas[$0] })]
        case .visitor:
            arrival = t0 + rng.uniform(0, max(60, span - 3600))
            departure = min(t1, arrival + rng.uniform(1200, 4500))
            home = care.isEmpty ? fallback[rng.index(fallback.count)] : care[rng.index(care.count)]
        }
        if departure <= arrival + 300 { departure = min(t1, arrival + 600) }

        var fixed: [Activity] = []
        let periods = sessions.count
        for k in 0..<periods {
            let p0 = t0 + Double(k) * 3600
            let p1 = p0 + 3600
            guard p1 > arrival, p0 < departure else { continue }
            if isLunch(p0), !dining.isEmpty, person.role != .visitor {
                let from = p0 + rng.uniform(0, 1200)
                let room = dining[rng.weighted(dining.map { areas[$0] })]
                fixed.append(Activity(room: room, from: from, to: from + rng.uniform(1800, 2700)))
                continue
            }
            switch person.role {
            case .student:
                let classes = sessions[k].filter { teaching.contains($0.room) }
                if !classes.isEmpty, rng.chance(0.8) {
                    let s = classes[rng.weighted(classes.map { areas[$0.room] })]
                    // Some come a little early, some a little late.
                    fixed.append(
                        Activity(room: s.room, from: s.from + rng.uniform(-180, 120), to: s.to + rng.uniform(0, 120))
                    )
                    if !dining.isEmpty, rng.chance(0.3) {
                        let from = s.to + 150
                        fixed.append(
                            Activity(
                                room: dining[rng.index(dining.count)],
                                from: from,
                                to: from + rng.uniform(300, 450)
                            )
                        )
                    }
                }
            case .staff:
                let meetings = sessions[k].filter { site.rooms[$0.room].use == .meeting }
                if !meetings.isEmpty, rng.chance(0.35) {
                    let s = meetings[rng.index(meetings.count)]
                    fixed.append(
                        Activity(room: s.room, from: s.from + rng.uniform(-120, 180), to: s.to + rng.uniform(-60, 120))
                    )
                } else if !dining.isEmpty, rng.chance(0.3) {
                    let from = p0 + rng.uniform(600, 2400)
                    let near = dining.filter { site.rooms[$0].building == site.rooms[home].building }
                    let room = near.isEmpty ? dining[rng.index(dining.count)] : near[rng.index(near.count)]
                    fixed.append(Activity(room: room, from: from, to: from + rng.uniform(600, 1200)))
                }
            case .visitor:
                let meetings = sessions[k].filter { site.rooms[$0.room].use == .meeting }
                if !meetings.isEmpty, rng.chance(0.3), let s = meetings.first(where: { $0.from >= arrival }) {
                    fixed.append(Activity(room: s.room, from: s.from, to: s.to))
                }
            }
        }
        // In time order, clipped to the visit, later activities giving way to earlier ones.
        fixed.sort { $0.from < $1.from }
        var acts: [Activity] = []
        var t = arrival
        for var a in fixed {
            a.from = max(a.from, t)
            a.to = min(a.to, departure)
            guard a.to - a.from >= 120 else { continue }
            if a.from - t >= 120 {
                acts.append(Activity(room: freeRoom(home: home, role: person.role), from: t, to: a.from))
            } else if let last = acts.indices.last {
                acts[last].to = a.from
            } else {
                a.from = t
            }
            acts.append(a)
            t = a.to
        }
        if departure - t >= 60 {
            acts.append(Activity(room: freeRoom(home: home, role: person.role), from: t, to: departure))
        } else if let last = acts.indices.last {
            acts[last].to = departure
        }
        // Back to back in one room: one activity.
        var merged: [Activity] = []
        for a in acts {
            if let last = merged.last, last.room == a.room, a.from - last.to < 1 {
                merged[merged.count - 1].to = a.to
            } else {
                merged.append(a)
            }
        }
        return merged
    }

    /// Where someone spends time with nothing planned.
    mutating func freeRoom(home: Int, role: Person.Role) -> Int {
        guard role == .student else { return home }
        let dining = rooms(.dining)
        if !dining.isEmpty, rng.chance(0.3) { return dining[rng.index(dining.count)] }
        return home
    }

    /// Segments with positions: seats given in time order across everyone, so that two people
    /// never share one; walks through corridors and outdoors between rooms.
    mutating func seat(_ plans: [[Activity]]) -> [[Segment]] {
        // Walks first: they shorten the activities they lead into.
        var walks: [[Segment]] = Array(repeating: [], count: plans.count)
        var trimmed = plans
        for (p, acts) in plans.enumerated() {
            guard let first = acts.first else { continue }
            // Arriving through the building's entrance (or its corridor).
            if let door = entrance(of: first.room), door != first.room {
                let walk = min(rng.uniform(20, 45), (first.to - first.from) / 3)
                walks[p].append(pass(p, door, first.from, first.from + walk))
                trimmed[p][0].from += walk
            }
            for i in acts.indices.dropFirst() {
                let a = acts[i - 1]
                let b = acts[i]
                guard a.room != b.room else { continue }
                var t = b.from
                let budget = (b.to - b.from) / 3
                if site.rooms[a.room].building != site.rooms[b.room].building {
                    let outside = min(rng.uniform(90, 180), budget)
                    walks[p].append(
                        Segment(person: p, room: nil, from: t, to: t + outside, position: Point(0, 0), facing: 0)
                    )
                    t += outside
                    if let door = entrance(of: b.room), door != b.room {
                        let walk = min(rng.uniform(15, 30), budget / 2)
                        walks[p].append(pass(p, door, t, t + walk))
                        t += walk
                    }
                } else if let hall = corridor(of: b.room), hall != a.room, hall != b.room {
                    let walk = min(rng.uniform(15, 40), budget)
                    walks[p].append(pass(p, hall, t, t + walk))
                    t += walk
                }
                trimmed[p][i].from = t
            }
            // Leaving the same way.
            if let last = acts.last, let door = entrance(of: last.room), door != last.room {
                let walk = min(rng.uniform(15, 30), (last.to - last.from) / 3)
                trimmed[p][acts.count - 1].to -= walk
                walks[p].append(pass(p, door, last.to - walk, last.to))
            }
        }

        var order: [(person: Int, index: Int)] = []
        for (p, acts) in trimmed.enumerated() { for i in acts.indices { order.append((p, i)) } }
        order.sort { (trimmed[$0.person][$0.index].from, $0.person) < (trimmed[$1.person][$1.index].from, $1.person) }
        var segments = walks
        for (p, i) in order {
            let a = trimmed[p][i]
            segments[p] += stay(p, a)
        }
        for p in segments.indices { segments[p].sort { $0.from < $1.from } }
        return segments
    }

    /// A short pass through a corridor or entrance, at a random point in it.
    mutating func pass(_ person: Int, _ room: Int, _ from: Double, _ to: Double) -> Segment {
        Segment(
            person: person,
            room: room,
            from: from,
            to: to,
            position: layouts[room].anywhere(&rng),
            facing: rng.uniform(0, 2 * .pi)
        )
    }

    /// A stay in a room: a seat for its length; in work rooms (in every room with
    /// `movement`), now and then a few minutes elsewhere in the room (a shelf, a bench, a
    /// colleague's desk, the board).
    mutating func stay(_ person: Int, _ a: Activity) -> [Segment] {
        let room = site.rooms[a.room]
        switch room.use {
        case .circulation, .entrance:
            return [pass(person, a.room, a.from, a.to)]
        default:
            break
        }
        let seat = layouts[a.room].take(from: a.from, to: a.to, rng: &rng)
        let facing = rng.uniform(0, 2 * .pi)
        guard room.use == .work || parameters.movement, a.to - a.from > 1200 else {
            return [Segment(person: person, room: a.room, from: a.from, to: a.to, position: seat, facing: facing)]
        }
        var out: [Segment] = []
        var t = a.from
        while t < a.to {
            let sit = min(a.to - t, rng.uniform(600, 1500))
            out.append(Segment(person: person, room: a.room, from: t, to: t + sit, position: seat, facing: facing))
            t += sit
            guard t < a.to, rng.chance(0.35) else { continue }
            let away = min(a.to - t, rng.uniform(120, 360))
            out.append(pass(person, a.room, t, t + away))
            t += away
        }
        return out
    }

    /// The room people cross to reach a room: its building's corridor.
    func corridor(of room: Int) -> Int? {
        let b = site.rooms[room].building
        return rooms(.circulation).first { site.rooms[$0].building == b }
            ?? rooms(.entrance).first { site.rooms[$0].building == b }
    }

    /// The room people enter a building by: its entrance, else its corridor.
    func entrance(of room: Int) -> Int? {
        let b = site.rooms[room].building
        return rooms(.entrance).first { site.rooms[$0].building == b } ?? corridor(of: room)
    }
}

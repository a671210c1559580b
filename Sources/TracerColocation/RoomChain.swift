import Foundation
import TracerSite

extension Positioning {
    /// The rooms a device was in over time: the chance of each room the evidence allows, step by
    /// step, a step being a stretch of a window slot in which the same kiosks heard it (a badge
    /// that walks from one room into the next mid-slot leaves one kiosk's window ending where
    /// another's starts). The places are the rooms of the kiosks that heard the device and the
    /// rooms next to them on the map (a corridor no kiosk covers is a place too: a badge there is
    /// heard through walls by the rooms' kiosks). Each is weighed by how well its cells explain
    /// the step's readings from every kiosk together (the likelihood averaged over the room,
    /// walls included), and a hidden Markov model over them (staying put from one step to the
    /// next but for `roomChange` per slot, and then mostly into a room next door) smooths them
    /// forward and backward: a badge is not in the next room for one window because that kiosk
    /// heard it loud once.
    ///
    /// Slots further apart than `longestGap` start the chain afresh, so each run of slots is a
    /// chain of its own, with the kiosks that heard it in that run (not in a fortnight's) as the
    /// silent ones.
    public func rooms(_ windows: [Window], device: String) -> RoomTrack {
        var bySlot: [Int: [(window: Window, y: Double)]] = [:]
        for w in windows where w.device == device {
            guard let r = plan.receiver(w.anchor) else { continue }
            bySlot[slot(of: w.start), default: []].append((w, r.loss(at: w.distance)))
        }
        var runs: [[Int]] = []
        for s in bySlot.keys.sorted() {
            if let last = runs.last?.last, s - last <= Positioning.longestGap {
                runs[runs.count - 1].append(s)
            } else {
                runs.append([s])
            }
        }
        let chains = runs.map { chain($0, bySlot) }
        let rooms = Set(chains.flatMap(\.rooms)).sorted()
        let column = Dictionary(uniqueKeysWithValues: rooms.enumerated().map { ($1, $0) })
        var steps: [RoomTrack.Step] = []
        for c in chains {
            for var step in c.steps {
                var chances = [Double](repeating: 0, count: rooms.count)
                for (k, p) in step.chances.enumerated() { chances[column[c.rooms[k]]!] = p }
                step.chances = chances
                steps.append(step)
            }
        }
        return RoomTrack(rooms: rooms, steps: steps)
    }

    /// One run's room chain (`rooms(_:device:)`).
    func chain(_ slots: [Int], _ bySlot: [Int: [(window: Window, y: Double)]]) -> RoomTrack {
        var alive = Set<String>()
        var heardIn = Set<String>()
        for s in slots {
            for (w, _) in bySlot[s]! {
                guard let r = plan.receiver(w.anchor) else { continue }
                alive.insert(r.key)
                heardIn.insert(r.room)
            }
        }
        // The rooms of the kiosks that heard it, and the rooms next door to those (each room
        // found in the plan once per run, not once per window).
        var candidates = Set<Int>()
        for r in heardIn.compactMap(plan.roomIndex) {
            candidates.insert(r)
            candidates.formUnion(plan.adjacent[r])
        }
        let rooms = candidates.map { plan.rooms[$0].key }.sorted().compactMap { key in
            grids.evidenceGrid(key, plan: plan).map { (key, $0) }
        }
        guard !rooms.isEmpty else { return RoomTrack(rooms: [], steps: []) }
        // The kiosks that heard the run are numbered in key order, each window's kiosk and each
        // room's rows for them found once, not by name at every step (BENCHMARKS.md, "With
        // positions", and "Flagging on random sites").
        let kiosks = alive.sorted()
        let number = Dictionary(uniqueKeysWithValues: kiosks.enumerated().map { ($1, $0) })
        var steps: [RoomTrack.Step] = []
        var readings: [[(kiosk: Int, y: Double)]] = []
        for s in slots {
            let numbered = bySlot[s]!.compactMap { w, y in number[w.anchor].map { (window: w, y: y, kiosk: $0) } }
            for (from, to, heard) in Self.steps(numbered, kiosks: kiosks.count, slot: s, length: slot) {
                steps.append(RoomTrack.Step(slot: s, from: from, to: to, chances: []))
                readings.append(heard)
            }
        }
        // Heard in one room's kiosks only, with no room next to it, the run was in that room at
        // every step, whatever the evidence: the chain below gives it a chance of 1 throughout,
        // and the evidence (every cell's likelihood at every step) need not be worked out.
        if rooms.count == 1 {
            for t in steps.indices { steps[t].chances = [1] }
            return RoomTrack(rooms: [rooms[0].0], steps: steps)
        }
        // Log evidence for each room at each step: log of the mean likelihood over the cells of its
        // evidence grid, weighed by `evidenceWeight`.
        let rows = rooms.map { _, grid in grid.rows(kiosks, beyondReach: plan) }
        var y = [Double](repeating: 0, count: kiosks.count)
        var heard = [Bool](repeating: false, count: kiosks.count)
        let most = rooms.map { $0.1.cells.count }.max() ?? 0
        var ll = [Double](repeating: 0, count: most)
        var sum = ll
        let evidence: [[Double]] = readings.map { step in
            for i in kiosks.indices { heard[i] = false }
            for (k, v) in step {
                y[k] = v
                heard[k] = true
            }
            return rooms.indices.map { r in
                let grid = rooms[r].1
                // A reading this room has no model for (a kiosk in another building): no cell
                // of it explains the step.
                guard grid.logLikelihood(y: y, heard: heard, rows: rows[r], strict: true, into: &ll, sum: &sum) else {
                    return -.infinity
                }
                let n = grid.cells.count
                var top = -Double.infinity
                for c in 0..<n where ll[c] > top { top = ll[c] }
                guard n > 0, top > -.infinity else { return -.infinity }
                // Cells 40 nats or more below the best are left out of the mean, and their exp
                // calls with them: each is under 5·10⁻¹⁸ of the best cell's 1, so all of a room's
                // (at most about 100) change the mean by under 2·10⁻¹⁵ of itself; every verdict
                // of the seed-7 and seed-11 days is the same.
                var total = 0.0
                for c in 0..<n where ll[c] - top > -40 { total += exp(ll[c] - top) }
                return Positioning.evidenceWeight * (top + log(total / Double(n)))
            }
        }
        let moves = RoomMoves(rooms: rooms.map { plan.roomIndex($0.0)! }, plan: plan)
        func scaled(_ e: [Double]) -> [Double] {
            let top = e.max() ?? 0
            return top == -.infinity ? [Double](repeating: 1, count: rooms.count) : e.map { exp($0 - top) }
        }
        var alpha = [[Double]](repeating: [], count: steps.count)
        for t in steps.indices {
            let prior =
                t == 0
                ? [Double](repeating: 1 / Double(rooms.count), count: rooms.count)
                : moves.forward(alpha[t - 1], slots: steps[t].slot - steps[t - 1].slot)
            alpha[t] = RoomGrid.normalised(zip(prior, scaled(evidence[t])).map { $0 * $1 })
        }
        var beta = [Double](repeating: 1, count: rooms.count)
        for t in steps.indices.reversed() {
            if t < steps.count - 1 {
                beta = RoomGrid.normalised(
                    moves.backward(
                        zip(scaled(evidence[t + 1]), beta).map { $0 * $1 },
                        slots: steps[t + 1].slot - steps[t].slot
                    )
                )
            }
            steps[t].chances = RoomGrid.normalised(zip(alpha[t], beta).map { $0 * $1 })
        }
        return RoomTrack(rooms: rooms.map(\.0), steps: steps)
    }

    /// A slot's steps: cut where a window starts or ends (cuts closer than 5 s are one), each
    /// step with the mean y of each kiosk (by its number, of `kiosks`) whose windows cover half
    /// of it or more (a window of a single advert counts in the step it falls in), in the order
    /// the kiosks' windows come.
    static func steps(
        _ windows: [(window: Window, y: Double, kiosk: Int)],
        kiosks: Int,
        slot: Int,
        length: Double
    ) -> [(from: Double, to: Double, heard: [(kiosk: Int, y: Double)])] {
        let start = Double(slot) * length
        let end = start + length
        var cuts = [start, end]
        for (w, _, _) in windows {
            cuts += [max(start, min(end, w.start)), max(start, min(end, w.end))]
        }
        cuts.sort()
        var kept = [cuts[0]]
        for c in cuts.dropFirst() where c - kept.last! >= 5 { kept.append(c) }
        if kept.count == 1 { kept.append(end) } else { kept[kept.count - 1] = end }
        // Each kiosk's sum and count by its number, and the kiosks in the order first met.
        var sums = [(sum: Double, count: Int)](repeating: (0, 0), count: kiosks)
        var met: [Int] = []
        func add(_ k: Int, _ y: Double) {
            if sums[k].count == 0 { met.append(k) }
            sums[k].sum += y
            sums[k].count += 1
        }
        func means() -> [(kiosk: Int, y: Double)] {
            defer {
                for k in met { sums[k] = (0, 0) }
                met.removeAll(keepingCapacity: true)
            }
            return met.map { ($0, sums[$0].sum / Double(sums[$0].count)) }
        }
        var out: [(from: Double, to: Double, heard: [(kiosk: Int, y: Double)])] = []
        for i in 0..<(kept.count - 1) {
            let (a, b) = (kept[i], kept[i + 1])
            for (w, y, k) in windows {
                let covered = min(b, w.end) - max(a, w.start)
                let point = w.end - w.start < 1 && w.start >= a && w.start < b
                guard point || covered >= (b - a) / 2 else { continue }
                add(k, y)
            }
            if !met.isEmpty { out.append((a, b, means())) }
        }
        // A slot whose windows each cover less than half of every step: all of them, one step.
        if out.isEmpty {
            for (_, y, k) in windows { add(k, y) }
            out.append((start, end, means()))
        }
        return out
    }
}

/// How a badge moves between a chain's rooms from one slot to the next: it stays put but for
/// `Positioning.roomChange` (in a corridor, `Positioning.passing`: people walk through one), and
/// what moves goes mostly into the rooms next door on the map (all but `Positioning.farMove` of
/// it), the rest anywhere (a map need not draw every door or corridor). A room with no
/// neighbour among the chain's sends all of it anywhere.
struct RoomMoves {
    /// `step[i][j]`: the chance per slot of going from the chain's room i to room j.
    let step: [[Double]]

    /// `rooms`: the chain's rooms by their index in the plan.
    init(rooms: [Int], plan: Plan) {
        let k = rooms.count
        var step = [[Double]](repeating: [Double](repeating: 0, count: k), count: k)
        for i in 0..<k {
            let change = plan.rooms[rooms[i]].use == .circulation ? Positioning.passing : Positioning.roomChange
            let next = Set(plan.adjacent[rooms[i]])
            let near = (0..<k).filter { $0 != i && next.contains(rooms[$0]) }
            let far = (0..<k).filter { $0 != i && !next.contains(rooms[$0]) }
            step[i][i] = 1 - change
            let toNear = near.isEmpty ? 0 : (far.isEmpty ? change : change * (1 - Positioning.farMove))
            for j in near { step[i][j] = toNear / Double(near.count) }
            for j in far { step[i][j] = (change - toNear) / Double(far.count) }
        }
        self.step = step
    }

    /// The chances a number of slots on (steps within one slot move as one slot does).
    func forward(_ p: [Double], slots: Int) -> [Double] {
        var p = p
        for _ in 0..<max(1, min(slots, Positioning.longestGap)) {
            var out = [Double](repeating: 0, count: p.count)
            for i in p.indices where p[i] > 0 {
                for j in p.indices { out[j] += p[i] * step[i][j] }
            }
            p = out
        }
        return p
    }

    /// The backward pass's message a number of slots back: b[i] = Σⱼ step[i][j]·b[j].
    func backward(_ b: [Double], slots: Int) -> [Double] {
        var b = b
        for _ in 0..<max(1, min(slots, Positioning.longestGap)) {
            b = b.indices.map { i in b.indices.reduce(0) { $0 + step[i][$1] * b[$1] } }
        }
        return b
    }
}

/// The rooms a device was in over time, from `Positioning.rooms`.
public struct RoomTrack: Sendable {
    public var rooms: [String]
    public var steps: [Step]

    /// A stretch of one slot, with the chance of each room (in `rooms`' order).
    public struct Step: Sendable {
        public var slot: Int
        public var from: Double
        public var to: Double
        public var chances: [Double]
    }

    /// The chance that the device was in a room at a time (nil: no step then).
    public func chance(of room: String, at t: Double) -> Double? {
        var lo = 0
        var hi = steps.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if steps[mid].to <= t { lo = mid + 1 } else { hi = mid }
        }
        guard lo < steps.count, steps[lo].from <= t else { return nil }
        return rooms.firstIndex(of: room).map { steps[lo].chances[$0] } ?? 0
    }

    /// The likeliest room of a step.
    public func likeliest(_ step: Step) -> String? {
        step.chances.indices.max { step.chances[$0] < step.chances[$1] }.map { rooms[$0] }
    }
}

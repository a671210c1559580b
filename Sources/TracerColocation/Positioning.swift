import Foundation
import Synchronization
import TracerRanging
import TracerSite

/// The site as positioning sees it: the rooms, and every anchor with what it takes to turn its
/// distances back into decibels. Kiosks hear badges; fixed beacons are heard by phones in scanner
/// mode (DESIGN.md), whose windows are at the beacon with the distance from it, so to the
/// likelihood a beacon is a receiver like a kiosk: a known point, a distance, a path loss.
public struct Plan: Sendable, Equatable {
    public struct Receiver: Sendable, Equatable {
        public var key: String
        /// A kiosk, or a fixed beacon heard by phones.
        public var kind: Anchor.Kind
        public var room: String
        public var position: Point
        /// The path-loss exponent its distances were ranged with.
        public var exponent: Double
        /// 10·n·log10(d) (dB) beyond which a badge's window goes unheard: the measured power at
        /// 1 m, plus the receiver's offset, less the adapter's floor, plus the margin by which a
        /// window's loudest advert beats its mean (`Positioning.hearingMargin`).
        public var floor: Double

        public init(
            key: String,
            kind: Anchor.Kind = .kiosk,
            room: String,
            position: Point,
            exponent: Double = 2,
            floor: Double = 45
        ) {
            self.key = key
            self.kind = kind
            self.room = room
            self.position = position
            self.exponent = exponent
            self.floor = floor
        }

        /// Path loss at a distance by this kiosk's model, 10·n·log10(d) dB: a window's distance
        /// turned back into decibels, or a cell's range into what the kiosk would read.
        func loss(at distance: Double) -> Double { 10 * exponent * log10(max(distance, 0.1)) }
    }

    public var rooms: [Room]
    public var receivers: [Receiver] { didSet { index = Self.index(receivers) } }
    /// Each receiver's place in `receivers` by key (the first of a key): `receiver(_:)` is asked
    /// once per window the engine reads.
    private var index: [String: Int]

    public init(rooms: [Room], receivers: [Receiver]) {
        self.rooms = rooms
        self.receivers = receivers
        index = Self.index(receivers)
    }

    static func index(_ receivers: [Receiver]) -> [String: Int] {
        Dictionary(receivers.enumerated().map { ($1.key, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The map's rooms and anchors: each kiosk with its own ranging (offset and exponent); each
    /// fixed beacon with the site's, which phones range it with, and its own measured power.
    public init(site: Site) {
        let receivers = site.anchors.map { a in
            let ranging = a.kind == .kiosk ? site.ranging(at: a.key) : site.ranging
            var n = 2.0
            if case .logDistance(let e) = ranging.model { n = e }
            let power = a.kind == .kiosk ? Positioning.typicalPower : Double(a.measuredPower ?? -59)
            return Receiver(
                key: a.key,
                kind: a.kind,
                room: a.room,
                position: a.position,
                exponent: n,
                floor: power + ranging.receiverOffset - Positioning.adapterFloor + Positioning.hearingMargin
            )
        }
        self.init(rooms: site.rooms, receivers: receivers)
    }

    func room(_ key: String) -> Room? { rooms.first { $0.key == key } }
    func roomIndex(_ key: String) -> Int? { rooms.firstIndex { $0.key == key } }
    func receiver(_ key: String) -> Receiver? { index[key].map { receivers[$0] } }
}

/// Where in a room a badge was in one window slot: a few cells of the room's grid with their
/// chances (summing to 1), and how many kiosks heard it then.
public struct Fix: Sendable, Equatable {
    public var points: [Point]
    public var weights: [Double]
    /// The posterior mean.
    public var mean: Point
    /// Kiosks of the room that heard the badge in this slot (others may have heard it through
    /// its walls).
    public var receivers: Int
}

/// Positions from several receivers: a grid likelihood over a room from every kiosk's distance
/// model, with motion between windows.
///
/// Each window's distance d̂ from kiosk i is turned back into y = 10·n·log10(d̂) (dB of path
/// loss, the receiver's offset already in it). At a point x of the room the model predicts
/// μᵢ(x) = 10·n·log10(range) + 10 dB per wall between x and the kiosk. What is left,
/// rᵢ = yᵢ − μᵢ(x), is the badge's own error c (its transmit power, how its wearer's body sits:
/// the same for every kiosk in that window, σ_b = 3 dB) plus each kiosk's own (σ_e = 2.5 dB: the
/// body turned towards one kiosk and away from another, and the window's noise). Integrating c
/// out in closed form, the covariance σ_e²·I + σ_b²·11ᵀ has the log-likelihood
///   −½/σ_e² · (Σrᵢ² − σ_b²·(Σrᵢ)² / (σ_e² + m·σ_b²)),
/// which for several kiosks weighs the differences between them (the badge's offset cancels)
/// and for one is an arc of width √(σ_e² + σ_b²). A kiosk that heard the badge around then but
/// not in this slot adds log Φ((μⱼ(x) − floorⱼ)/σ): not being heard puts the badge far from it.
/// Between slots a badge mostly sits still (a small blur) and sometimes moves anywhere in the
/// room (`jump`); a forward–backward pass over each run of slots smooths the track.
public struct Positioning: Sendable {
    public let plan: Plan
    /// Seconds per slot: the kiosks' window, to which interaction windows are aligned.
    public let slot: Double
    let grids = GridCache()

    static let receiverSigma = 2.5
    static let badgeSigma = 3.0
    /// Through one interior wall, dB: what the simulator assumes (EFFICACY.md).
    static let wallLoss = 10.0
    /// A badge at chest height, a kiosk at desk or wall height.
    static let height = 0.5
    /// iBeacon badges' usual measured power at 1 m (dBm), for the hearing floor.
    static let typicalPower = -59.0
    /// The weakest advert a BlueZ adapter reports, dBm.
    static let adapterFloor = -95.0
    /// A 30 s window holds tens of adverts at σ 4 dB: its loudest is about 6 dB above its mean.
    static let hearingMargin = 6.0
    static let notHeardSigma = 4.0
    /// The chance per slot that a badge moves somewhere else in the room.
    static let jump = 0.02
    /// Slots further apart than this start a new track.
    static let longestGap = 10
    /// A fix keeps the likeliest cells up to this share of the chance, at most `fixCells` of them.
    static let fixMass = 0.97
    static let fixCells = 64
    /// The chance per slot that a badge goes into another room.
    static let roomChange = 0.01

    public init(plan: Plan, slot: Double = 30) {
        self.plan = plan
        self.slot = slot
    }

    /// The window slot a time falls in.
    public func slot(of t: Double) -> Int { Int((t / slot).rounded(.down)) }

    /// One device's fixes in one room, by slot: for each slot in which `least` or more kiosks of
    /// that room heard it, where in the room it was, from every window of the device in
    /// `windows` (other devices' are ignored). The track is smoothed over every slot a kiosk of
    /// the room heard it, whatever `least`; only the fixes asked for are worked out (each sorts
    /// the room's cells).
    public func track(_ windows: [Window], device: String, room: String, least: Int = 1) -> [Int: Fix] {
        guard let grid = grids.grid(room, plan: plan) else { return [:] }
        var heard: [Int: [String: (sum: Double, count: Int)]] = [:]
        var alive = Set<String>()
        for w in windows where w.device == device {
            guard let r = plan.receiver(w.anchor), grid.predicted[r.key] != nil else { continue }
            let y = r.loss(at: w.distance)
            heard[slot(of: w.start), default: [:]][r.key, default: (0, 0)].sum += y
            heard[slot(of: w.start)]![r.key]!.count += 1
            alive.insert(r.key)
        }
        let inRoom = Set(plan.receivers.filter { $0.room == room }.map(\.key))
        let slots = heard.keys.filter { !inRoom.isDisjoint(with: heard[$0]!.keys) }.sorted()
        guard !slots.isEmpty else { return [:] }
        let likelihoods = slots.map { s in
            let ll = grid.logLikelihood(heard[s]!.mapValues { $0.sum / Double($0.count) }, alive: alive)
            let top = ll.max() ?? 0
            return ll.map { exp($0 - top) }
        }
        let posteriors = grid.smooth(slots: slots, likelihoods: likelihoods)
        var out: [Int: Fix] = [:]
        for (k, s) in slots.enumerated() {
            let receivers = heard[s]!.keys.filter(inRoom.contains).count
            if receivers >= least { out[s] = grid.fix(posteriors[k], receivers: receivers) }
        }
        return out
    }

    /// The rooms a device was in over time: the chance of each room the evidence allows, step by
    /// step, a step being a stretch of a window slot in which the same kiosks heard it (a badge
    /// that walks from one room into the next mid-slot leaves one kiosk's window ending where
    /// another's starts). Each room of a kiosk that heard the device is weighed by how well its
    /// cells explain the step's readings (the likelihood averaged over the room), and a hidden
    /// Markov model over those rooms (staying put from one step to the next but for
    /// `roomChange` per slot) smooths them forward and backward: a badge is not in the next room
    /// for one window because that kiosk heard it loud once.
    ///
    /// Slots further apart than `longestGap` start the chain afresh, so each run of slots is a
    /// chain of its own: over the rooms whose kiosks heard the device in that run, with the
    /// kiosks that heard it in that run (not in a fortnight's) as the silent ones.
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
        var candidates = Set<String>()
        for s in slots {
            for (w, _) in bySlot[s]! {
                guard let r = plan.receiver(w.anchor) else { continue }
                alive.insert(r.key)
                candidates.insert(r.room)
            }
        }
        let rooms = candidates.sorted().compactMap { key in grids.grid(key, plan: plan).map { (key, $0) } }
        guard !rooms.isEmpty else { return RoomTrack(rooms: [], steps: []) }
        var steps: [RoomTrack.Step] = []
        var readings: [[String: Double]] = []
        for s in slots {
            for (from, to, heard) in Self.steps(bySlot[s]!, slot: s, length: slot) {
                steps.append(RoomTrack.Step(slot: s, from: from, to: to, chances: []))
                readings.append(heard)
            }
        }
        // Heard in one room's kiosks only, the run was in that room at every step, whatever the
        // evidence: the chain below gives it a chance of 1 throughout, and the evidence (every
        // cell's likelihood at every step) need not be worked out. Tools/bench/exposure, whose
        // visits are each heard by one kiosk, flagged with positions in 603–631 ms a report
        // before this and 435–471 ms after (BENCHMARKS.md).
        if rooms.count == 1 {
            for t in steps.indices { steps[t].chances = [1] }
            return RoomTrack(rooms: [rooms[0].0], steps: steps)
        }
        // Log evidence for each room at each step: log of the mean likelihood over its cells.
        // The kiosks that heard the run are numbered in key order and each room's rows for them
        // found once, not by name at every step: looking them up, and the sets of who was heard
        // and who was not, took half a room chain's time on the simulated day (BENCHMARKS.md,
        // "With positions").
        let kiosks = alive.sorted()
        let number = Dictionary(uniqueKeysWithValues: kiosks.enumerated().map { ($1, $0) })
        let rows: [[(predicted: [Double], notHeard: [Double])?]] = rooms.map { _, grid in
            kiosks.map { k in grid.predicted[k].map { ($0, grid.notHeard[k]!) } }
        }
        let evidence: [[Double]] = readings.map { heard in
            var y = [Double?](repeating: nil, count: kiosks.count)
            for (k, v) in heard { y[number[k]!] = v }
            return rooms.indices.map { r in
                var observed: [(y: Double, predicted: [Double])] = []
                var unheard: [[Double]] = []
                for i in kiosks.indices {
                    if let v = y[i] {
                        // A reading this room has no model for (a kiosk in another building):
                        // no cell of it explains the step.
                        guard let row = rows[r][i] else { return -.infinity }
                        observed.append((v, row.predicted))
                    } else if let row = rows[r][i] {
                        unheard.append(row.notHeard)
                    }
                }
                let ll = rooms[r].1.logLikelihood(observed: observed, unheard: unheard)
                guard let top = ll.max(), top > -.infinity else { return -.infinity }
                // Cells 40 nats or more below the best are left out of the mean, and their exp
                // calls with them: each is under 5·10⁻¹⁸ of the best cell's 1, so all of a room's
                // (at most about 400) change the mean by under 2·10⁻¹⁵ of itself; every verdict
                // of the seed-7 and seed-11 days is the same.
                var total = 0.0
                for v in ll where v - top > -40 { total += exp(v - top) }
                return top + log(total / Double(ll.count))
            }
        }
        let k = rooms.count
        func move(_ p: [Double], from a: RoomTrack.Step, to b: RoomTrack.Step) -> [Double] {
            let gap = b.slot - a.slot
            guard gap <= Positioning.longestGap else { return [Double](repeating: 1 / Double(k), count: k) }
            let change = 1 - pow(1 - Positioning.roomChange, Double(max(1, gap)))
            let total = p.reduce(0, +)
            return p.map { (1 - change) * $0 + change * (total - $0) / Double(max(1, k - 1)) }
        }
        func scaled(_ e: [Double]) -> [Double] {
            let top = e.max() ?? 0
            return top == -.infinity ? [Double](repeating: 1, count: k) : e.map { exp($0 - top) }
        }
        var alpha = [[Double]](repeating: [], count: steps.count)
        for t in steps.indices {
            let prior =
                t == 0
                ? [Double](repeating: 1 / Double(k), count: k) : move(alpha[t - 1], from: steps[t - 1], to: steps[t])
            alpha[t] = RoomGrid.normalised(zip(prior, scaled(evidence[t])).map { $0 * $1 })
        }
        var beta = [Double](repeating: 1, count: k)
        for t in steps.indices.reversed() {
            if t < steps.count - 1 {
                beta = RoomGrid.normalised(
                    move(zip(scaled(evidence[t + 1]), beta).map { $0 * $1 }, from: steps[t], to: steps[t + 1])
                )
            }
            steps[t].chances = RoomGrid.normalised(zip(alpha[t], beta).map { $0 * $1 })
        }
        return RoomTrack(rooms: rooms.map(\.0), steps: steps)
    }

    /// A slot's steps: cut where a window starts or ends (cuts closer than 5 s are one), each
    /// step with the mean y of each kiosk whose windows cover half of it or more (a window of a
    /// single advert counts in the step it falls in).
    static func steps(
        _ windows: [(window: Window, y: Double)],
        slot: Int,
        length: Double
    ) -> [(from: Double, to: Double, heard: [String: Double])] {
        let start = Double(slot) * length
        let end = start + length
        var cuts = [start, end]
        for (w, _) in windows {
            cuts += [max(start, min(end, w.start)), max(start, min(end, w.end))]
        }
        cuts.sort()
        var kept = [cuts[0]]
        for c in cuts.dropFirst() where c - kept.last! >= 5 { kept.append(c) }
        if kept.count == 1 { kept.append(end) } else { kept[kept.count - 1] = end }
        var out: [(from: Double, to: Double, heard: [String: Double])] = []
        for i in 0..<(kept.count - 1) {
            let (a, b) = (kept[i], kept[i + 1])
            var sums: [String: (sum: Double, count: Int)] = [:]
            for (w, y) in windows {
                let covered = min(b, w.end) - max(a, w.start)
                let point = w.end - w.start < 1 && w.start >= a && w.start < b
                guard point || covered >= (b - a) / 2 else { continue }
                sums[w.anchor, default: (0, 0)].sum += y
                sums[w.anchor]!.count += 1
            }
            if !sums.isEmpty { out.append((a, b, sums.mapValues { $0.sum / Double($0.count) })) }
        }
        // A slot whose windows each cover less than half of every step: all of them, one step.
        if out.isEmpty {
            var sums: [String: (sum: Double, count: Int)] = [:]
            for (w, y) in windows {
                sums[w.anchor, default: (0, 0)].sum += y
                sums[w.anchor]!.count += 1
            }
            out.append((start, end, sums.mapValues { $0.sum / Double($0.count) }))
        }
        return out
    }

    /// The chance that two badges with these fixes were within `radius` of each other.
    public static func probability(_ a: Fix, _ b: Fix, radius: Double) -> Double {
        let r2 = radius * radius
        var p = 0.0
        for i in a.points.indices {
            let pa = a.points[i]
            var near = 0.0
            for j in b.points.indices {
                let q = b.points[j]
                if (pa.x - q.x) * (pa.x - q.x) + (pa.y - q.y) * (pa.y - q.y) <= r2 { near += b.weights[j] }
            }
            p += a.weights[i] * near
        }
        return min(1, p)
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

/// A room's grid: its cells, and what each kiosk within hearing range would read at each.
final class RoomGrid: Sendable {
    let cells: [Point]
    let step: Double
    let columns: Int
    let rows: Int
    /// Cell index by column + row × columns, −1 outside the room.
    let index: [Int]
    /// Cell c's neighbours in the room are `neighbours[neighbourStart[c]..<neighbourStart[c + 1]]`;
    /// `kept[c]`, what of its chance stays put (`move`).
    let neighbours: [Int]
    let neighbourStart: [Int]
    let kept: [Double]
    /// 10·n·log10(range) + wall loss, per cell, by kiosk key.
    let predicted: [String: [Double]]
    /// log Φ((predicted − floor)/σ) per cell, by kiosk key: what not being heard by that kiosk
    /// weighs at each cell. It depends on the grid alone, so it is worked out once here, not as
    /// an erfc per cell, silent kiosk and slot (BENCHMARKS.md, "With positions").
    let notHeard: [String: [Double]]

    /// A grid of at most about 400 cells (0.5 m in rooms up to 100 m², 0.9 m in a 20 × 16 m hall).
    init?(room: Room, plan: Plan) {
        let xs = room.outline.map(\.x)
        let ys = room.outline.map(\.y)
        guard let x0 = xs.min(), let x1 = xs.max(), let y0 = ys.min(), let y1 = ys.max(), x1 > x0, y1 > y0 else {
            return nil
        }
        let area = (x1 - x0) * (y1 - y0)
        step = max(0.5, (area / 400).squareRoot())
        columns = max(1, Int(((x1 - x0) / step).rounded(.up)))
        rows = max(1, Int(((y1 - y0) / step).rounded(.up)))
        var cells: [Point] = []
        var index = [Int](repeating: -1, count: columns * rows)
        for j in 0..<rows {
            for i in 0..<columns {
                let p = Point(x0 + (Double(i) + 0.5) * step, y0 + (Double(j) + 0.5) * step)
                if room.contains(p) {
                    index[i + j * columns] = cells.count
                    cells.append(p)
                }
            }
        }
        guard !cells.isEmpty else { return nil }
        self.cells = cells
        self.index = index
        (neighbours, neighbourStart, kept) = Self.neighbourhood(
            columns: columns,
            rows: rows,
            index: index,
            cells: cells.count
        )
        let centre = Point((x0 + x1) / 2, (y0 + y1) / 2)
        let reach = RoomGeometry.hearingRange + Point(x0, y0).distance(to: centre)
        var predicted: [String: [Double]] = [:]
        var notHeard: [String: [Double]] = [:]
        let here = plan.roomIndex(room.key)
        for r in plan.receivers where r.position.distance(to: centre) <= reach {
            guard let there = plan.roomIndex(r.room) else { continue }
            if let a = room.building, let b = plan.rooms[there].building, a != b { continue }
            predicted[r.key] = cells.map { p in
                let d = p.distance(to: r.position)
                let range = (d * d + Positioning.height * Positioning.height).squareRoot()
                let walls =
                    here.map {
                        here == there ? 0 : Room.walls(from: p, in: $0, to: r.position, in: there, rooms: plan.rooms)
                    } ?? 0
                return r.loss(at: range) + Double(walls) * Positioning.wallLoss
            }
            notHeard[r.key] = predicted[r.key]!.map { Self.logPhi(($0 - r.floor) / Positioning.notHeardSigma) }
        }
        self.predicted = predicted
        self.notHeard = notHeard
    }

    /// The log-likelihood of one slot's readings (y by kiosk) at every cell, the kiosks in
    /// `alive` that did not hear it silent. A reading from a kiosk this grid has no model for
    /// is left out (a room chain instead makes every cell impossible, so that rooms compare on
    /// the same readings).
    func logLikelihood(_ heard: [String: Double], alive: Set<String>) -> [Double] {
        let observed = heard.keys.sorted().compactMap { k in predicted[k].map { (heard[k]!, $0) } }
        let unheard = alive.subtracting(heard.keys).sorted().compactMap { k in
            notHeard[k]
        }
        return logLikelihood(observed: observed, unheard: unheard)
    }

    /// The log-likelihood at every cell of the readings `observed` (each a reading y and its
    /// kiosk's `predicted` row), with the kiosks of `unheard` (their `notHeard` rows) silent;
    /// both in kiosk key order.
    func logLikelihood(observed: [(y: Double, predicted: [Double])], unheard: [[Double]]) -> [Double] {
        let se2 = Positioning.receiverSigma * Positioning.receiverSigma
        let sb2 = Positioning.badgeSigma * Positioning.badgeSigma
        let m = Double(observed.count)
        let shrink = sb2 / (se2 + m * sb2)
        // The badge's own error integrated out: the determinant's share, which depends on how
        // many kiosks heard, keeps rooms with different numbers of readings comparable.
        let norm = -0.5 * (m * log(2 * .pi * se2) + log(1 + m * sb2 / se2))
        // Kiosk by kiosk over every cell, each row read in place (each cell's sums are still
        // taken in kiosk order, so the answer is the same to the last bit).
        let n = cells.count
        var sum = [Double](repeating: 0, count: n)
        var squares = [Double](repeating: 0, count: n)
        for (y, mu) in observed {
            mu.withUnsafeBufferPointer { mu in
                for c in 0..<n {
                    let r = y - mu[c]
                    sum[c] += r
                    squares[c] += r * r
                }
            }
        }
        var ll = [Double](repeating: 0, count: n)
        let half = 0.5 / se2
        for c in 0..<n { ll[c] = norm - half * (squares[c] - shrink * sum[c] * sum[c]) }
        for silent in unheard {
            silent.withUnsafeBufferPointer { silent in
                for c in 0..<n { ll[c] += silent[c] }
            }
        }
        return ll
    }

    /// log Φ(z), the standard normal's log CDF (erfc keeps the far tail finite).
    static func logPhi(_ z: Double) -> Double {
        log(max(1e-300, 0.5 * erfc(-z / 2.0.squareRoot())))
    }

    /// The posterior over cells for each slot, by forward–backward over runs of slots.
    func smooth(slots: [Int], likelihoods: [[Double]]) -> [[Double]] {
        let n = slots.count
        var alpha = [[Double]](repeating: [], count: n)
        for k in 0..<n {
            let gap = k == 0 ? Int.max : slots[k] - slots[k - 1]
            var prior: [Double]
            if gap > Positioning.longestGap {
                prior = [Double](repeating: 1, count: cells.count)
            } else {
                prior = alpha[k - 1]
                for _ in 0..<gap { prior = move(prior) }
            }
            alpha[k] = Self.normalised(zip(prior, likelihoods[k]).map { $0 * $1 })
        }
        var out = alpha
        var beta = [Double](repeating: 1, count: cells.count)
        for k in stride(from: n - 2, through: 0, by: -1) {
            let gap = slots[k + 1] - slots[k]
            if gap > Positioning.longestGap {
                beta = [Double](repeating: 1, count: cells.count)
            } else {
                var b = zip(likelihoods[k + 1], beta).map { $0 * $1 }
                for _ in 0..<gap { b = move(b) }
                beta = Self.normalised(b)
            }
            out[k] = Self.normalised(zip(alpha[k], beta).map { $0 * $1 })
        }
        return out
    }

    /// One slot's motion: mostly still (a blur to the neighbouring cells), sometimes anywhere.
    /// Symmetric, so it serves the backward pass as well.
    func move(_ p: [Double]) -> [Double] {
        let total = p.reduce(0, +)
        var out = [Double](repeating: 0, count: p.count)
        for c in cells.indices {
            for k in neighbourStart[c]..<neighbourStart[c + 1] { out[neighbours[k]] += Self.side * p[c] }
            out[c] += kept[c] * p[c]
        }
        let spread = Positioning.jump * total / Double(p.count)
        return out.map { (1 - Positioning.jump) * $0 + spread }
    }

    /// The share of a cell's chance that `move` blurs to each neighbouring cell per slot.
    static let side = 0.05

    /// Each cell's neighbouring cells in the room (west, east, south, north), and what of its
    /// chance stays in it per slot: worked out once, not for every cell of every step.
    static func neighbourhood(
        columns: Int,
        rows: Int,
        index: [Int],
        cells: Int
    ) -> (neighbours: [Int], start: [Int], kept: [Double]) {
        var neighbours: [Int] = []
        var start = [0]
        var kept = [Double](repeating: 1, count: cells)
        // Cells are numbered row by row, column by column: this visits them in their order.
        for j in 0..<rows {
            for i in 0..<columns {
                let c = index[i + j * columns]
                guard c >= 0 else { continue }
                for (di, dj) in [(-1, 0), (1, 0), (0, -1), (0, 1)] {
                    let ni = i + di
                    let nj = j + dj
                    guard ni >= 0, ni < columns, nj >= 0, nj < rows else { continue }
                    let o = index[ni + nj * columns]
                    guard o >= 0 else { continue }
                    neighbours.append(o)
                    kept[c] -= side
                }
                start.append(neighbours.count)
            }
        }
        return (neighbours, start, kept)
    }

    static func normalised(_ p: [Double]) -> [Double] {
        let total = p.reduce(0, +)
        guard total > 0 else { return [Double](repeating: 1 / Double(p.count), count: p.count) }
        return p.map { $0 / total }
    }

    /// The likeliest cells up to `fixMass` of the chance (at most `fixCells`), renormalised.
    func fix(_ posterior: [Double], receivers: Int) -> Fix {
        var mean = Point(0, 0)
        for c in cells.indices {
            mean.x += posterior[c] * cells[c].x
            mean.y += posterior[c] * cells[c].y
        }
        // The likeliest `fixCells` cells in order (ties by cell number), kept sorted as the cells
        // are read, rather than every cell of the room sorted for a few of them.
        var order: [Int] = []
        order.reserveCapacity(Positioning.fixCells + 1)
        func before(_ a: Int, _ b: Int) -> Bool {
            posterior[a] > posterior[b] || (posterior[a] == posterior[b] && a < b)
        }
        for c in cells.indices {
            if order.count == Positioning.fixCells, !before(c, order[order.count - 1]) { continue }
            var at = order.count
            while at > 0, before(c, order[at - 1]) { at -= 1 }
            order.insert(c, at: at)
            if order.count > Positioning.fixCells { order.removeLast() }
        }
        var kept: [Int] = []
        var mass = 0.0
        for c in order {
            kept.append(c)
            mass += posterior[c]
            if mass >= Positioning.fixMass || kept.count == Positioning.fixCells { break }
        }
        return Fix(
            points: kept.map { cells[$0] },
            weights: kept.map { posterior[$0] / mass },
            mean: mean,
            receivers: receivers
        )
    }
}

/// Each room's grid, built once per engine (building one counts walls for every cell and kiosk).
final class GridCache: Sendable {
    private let grids = Mutex<[String: RoomGrid?]>([:])

    func grid(_ room: String, plan: Plan) -> RoomGrid? {
        if let known = grids.withLock({ $0[room] }) { return known }
        let built = plan.room(room).flatMap { RoomGrid(room: $0, plan: plan) }
        grids.withLock { $0[room] = .some(built) }
        return built
    }
}

import Foundation
import Synchronization
import TracerRanging
import TracerSite

/// The site as positioning sees it: the rooms, and every anchor with what it takes to turn its
/// distances back into decibels. Kiosks hear badges; fixed beacons are heard by phones in scanner
/// mode (docs/design.md), whose windows are at the beacon with the distance from it, so to the
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

    public var rooms: [Room] { didSet { adjacent = Self.adjacency(rooms) } }
    public var receivers: [Receiver] { didSet { index = Self.index(receivers) } }
    /// dB lost through each wall between a badge and a receiver (the map's `wallLoss`).
    public var wallLoss: Double
    /// Each receiver's place in `receivers` by key (the first of a key): `receiver(_:)` is asked
    /// once per window the engine reads.
    private var index: [String: Int]
    /// By room index, the rooms next door (`adjacency(_:)`).
    private(set) var adjacent: [[Int]]

    public init(rooms: [Room], receivers: [Receiver], wallLoss: Double = ExposureSettings().wallLoss) {
        self.rooms = rooms
        self.receivers = receivers
        self.wallLoss = wallLoss
        index = Self.index(receivers)
        adjacent = Self.adjacency(rooms)
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
        self.init(rooms: site.rooms, receivers: receivers, wallLoss: site.exposure.wallLoss)
    }

    /// By room index, the rooms that share a stretch of wall with it (0.5 m or more, edges
    /// within 0.3 m of each other: maps draw walls as lines or as thin gaps) in the same building
    /// and on the same floor: where a badge can walk to next. A map draws no doors, so every
    /// shared wall counts as one.
    static func adjacency(_ rooms: [Room]) -> [[Int]] {
        func edges(_ r: Room) -> [(Point, Point)] {
            r.outline.indices.map { (r.outline[$0], r.outline[($0 + 1) % r.outline.count]) }
        }
        func touching(_ a: Room, _ b: Room) -> Bool {
            guard a.building == b.building, a.floor == b.floor else { return false }
            for (p, q) in edges(a) {
                let length = p.distance(to: q)
                guard length > 0 else { continue }
                let (ux, uy) = ((q.x - p.x) / length, (q.y - p.y) / length)
                for (c, d) in edges(b) {
                    let offC = abs(ux * (c.y - p.y) - uy * (c.x - p.x))
                    let offD = abs(ux * (d.y - p.y) - uy * (d.x - p.x))
                    guard offC <= 0.3, offD <= 0.3 else { continue }
                    let tc = ux * (c.x - p.x) + uy * (c.y - p.y)
                    let td = ux * (d.x - p.x) + uy * (d.y - p.y)
                    if min(length, max(tc, td)) - max(0, min(tc, td)) >= 0.5 { return true }
                }
            }
            return false
        }
        return rooms.indices.map { i in rooms.indices.filter { $0 != i && touching(rooms[i], rooms[$0]) } }
    }

    func room(_ key: String) -> Room? { rooms.first { $0.key == key } }
    func roomIndex(_ key: String) -> Int? { rooms.firstIndex { $0.key == key } }
    func receiver(_ key: String) -> Receiver? { index[key].map { receivers[$0] } }
    /// Whether a room has no room next to it on the map (or is not on it).
    func isolated(_ room: String) -> Bool { roomIndex(room).map { adjacent[$0].isEmpty } ?? true }
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
    /// The chance per slot that a badge in a corridor (a room whose use is `circulation`) leaves
    /// it: people walk through corridors in under a minute.
    static let passing = 0.5
    /// Of a move between rooms, the share that goes to a room not next door (`RoomMoves`).
    static let farMove = 0.1
    /// What one step's evidence weighs in a room chain, as a power of its likelihood. The
    /// likelihood takes each window's readings as independent of the last, but a stay's readings
    /// share errors the model does not know: each kiosk's own receive offset, the wearer's body
    /// turned away from one kiosk for the whole stay, walls that lose more or less than
    /// `wallLoss`. Counted at full weight, thirty steps of the same few decibels of error
    /// outweigh any sense of how people move; at a tenth, about ten steps (five minutes) count
    /// as one look. Chosen on random sites 1001–1004, every badge's minutes in a kiosk's room:
    /// with walls taken at 6 dB, rooms right 83.9% at full weight, 88.7% at 0.3, 93.9% at 0.1;
    /// at 4 dB, 93.5% at 0.3, 94.4% at 0.2, 95.2% at 0.1; at 3 dB, 94.2% at 0.1, 93.9% at 0.05.
    /// Flagging there: precision 0.83 at 0.1 against 0.80 at 0.2 and 0.3, recall 0.97 at each;
    /// equal on sites 1005–1008. The example campus, whose simulated radio has none of those
    /// errors, loses recall at 0.1 (0.90 against 0.93 at 0.3; EFFICACY.md).
    static let evidenceWeight = 0.1
    /// A room's evidence is its likelihood averaged over a coarser grid than positions use, of
    /// about this many cells, at least `evidenceStep` metres apart: on random sites 1001–1004,
    /// rooms right 95.2% against 95.4% with the positions' grid (400 cells, 0.5 m), flagging
    /// one report in 2.3 s against 3.4 s on site 1004.
    static let evidenceCells = 100.0
    static let evidenceStep = 1.0

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

    /// A grid of at most about `cells` cells: for positions 400 (0.5 m in rooms up to 100 m²,
    /// 0.9 m in a 20 × 16 m hall), for rooms' evidence `Positioning.evidenceCells`.
    init?(room: Room, plan: Plan, cells limit: Double = 400, least: Double = 0.5) {
        let xs = room.outline.map(\.x)
        let ys = room.outline.map(\.y)
        guard let x0 = xs.min(), let x1 = xs.max(), let y0 = ys.min(), let y1 = ys.max(), x1 > x0, y1 > y0 else {
            return nil
        }
        let area = (x1 - x0) * (y1 - y0)
        step = max(least, (area / limit).squareRoot())
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
        let walls = Room.Walls(plan.rooms)
        for r in plan.receivers where r.position.distance(to: centre) <= reach {
            guard let there = plan.roomIndex(r.room) else { continue }
            if let a = room.building, let b = plan.rooms[there].building, a != b { continue }
            predicted[r.key] = cells.map { p in
                let d = p.distance(to: r.position)
                let range = (d * d + Positioning.height * Positioning.height).squareRoot()
                let crossed =
                    here.map { here == there ? 0 : walls.count(from: p, in: $0, to: r.position, in: there) } ?? 0
                return r.loss(at: range) + Double(crossed) * plan.wallLoss
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

/// Each room's grids, built once per engine (building one counts walls for every cell and
/// kiosk): the fine one positions use, and the coarse one rooms' evidence uses.
final class GridCache: Sendable {
    private let grids = Mutex<[String: RoomGrid?]>([:])
    private let coarse = Mutex<[String: RoomGrid?]>([:])

    func grid(_ room: String, plan: Plan) -> RoomGrid? {
        cached(room, in: grids) { plan.room(room).flatMap { RoomGrid(room: $0, plan: plan) } }
    }

    func evidenceGrid(_ room: String, plan: Plan) -> RoomGrid? {
        cached(room, in: coarse) {
            plan.room(room).flatMap {
                RoomGrid(room: $0, plan: plan, cells: Positioning.evidenceCells, least: Positioning.evidenceStep)
            }
        }
    }

    private func cached(
        _ room: String,
        in cache: borrowing Mutex<[String: RoomGrid?]>,
        build: () -> RoomGrid?
    ) -> RoomGrid? {
        if let known = cache.withLock({ $0[room] }) { return known }
        let built = build()
        cache.withLock { $0[room] = .some(built) }
        return built
    }
}

import Foundation
import Synchronization
import TracerSite

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
    /// The room's index in the plan and its building, for the models worked out later
    /// (`rows(_:beyondReach:)`).
    let room: Int?
    let building: String?
    let walls: Room.Walls
    /// Models of kiosks beyond `reach`, worked out when a room chain first asks for them.
    private let beyond = Mutex<[String: (predicted: [Double], notHeard: [Double])]>([:])

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
        self.room = here
        building = room.building
        let walls = Room.Walls(plan.rooms)
        self.walls = walls
        for r in plan.receivers where r.position.distance(to: centre) <= reach {
            guard let model = Self.model(of: r, at: cells, in: here, building: room.building, plan: plan, walls: walls)
            else { continue }
            (predicted[r.key], notHeard[r.key]) = model
        }
        self.predicted = predicted
        self.notHeard = notHeard
    }

    /// What a kiosk would read at each cell (10·n·log10(range) + the walls crossed), and what
    /// not being heard by it weighs there; nil for a kiosk in another building, or in no room.
    static func model(
        of r: Plan.Receiver,
        at cells: [Point],
        in here: Int?,
        building: String?,
        plan: Plan,
        walls: Room.Walls
    ) -> (predicted: [Double], notHeard: [Double])? {
        guard let there = plan.roomIndex(r.room) else { return nil }
        if let a = building, let b = plan.rooms[there].building, a != b { return nil }
        let predicted = cells.map { p in
            let d = p.distance(to: r.position)
            let range = (d * d + Positioning.height * Positioning.height).squareRoot()
            let crossed = here.map { here == there ? 0 : walls.count(from: p, in: $0, to: r.position, in: there) } ?? 0
            return r.loss(at: range) + Double(crossed) * plan.wallLoss
        }
        return (predicted, predicted.map { Self.logPhi(($0 - r.floor) / Positioning.notHeardSigma) })
    }

    /// A kiosk's model: the grid's own, or with `beyondReach`, one worked out (and kept) for a
    /// kiosk of the building beyond its reach.
    private func model(_ k: String, beyondReach plan: Plan?) -> ([Double], [Double])? {
        if let p = predicted[k], let q = notHeard[k] { return (p, q) }
        guard let plan, let r = plan.receiver(k) else { return nil }
        if let kept = beyond.withLock({ $0[k] }) { return kept }
        guard
            let made = Self.model(
                of: r,
                at: cells,
                in: room,
                building: building,
                plan: plan,
                walls: walls
            )
        else { return nil }
        beyond.withLock { $0[k] = made }
        return made
    }

    /// The grid's rows for some kiosks, one kiosk after another (the i-th kiosk's cells at
    /// i × `cells`), for the passes over a track's or a room chain's steps: read by offset, not
    /// looked up by name and kept alive as an array for each kiosk and step (BENCHMARKS.md,
    /// "Flagging on random sites").
    struct Rows {
        /// Whether the grid has a model for the i-th kiosk (one within hearing range).
        let known: [Bool]
        /// `RoomGrid.predicted`, and `RoomGrid.notHeard`, of each kiosk (zeros where unknown).
        let predicted: [Double]
        let notHeard: [Double]
    }

    /// The rows of `kiosks` (keys), in their order. With `beyondReach` (a room chain's plan),
    /// a kiosk of the building further than the grid keeps models for has one too: a room chain
    /// compares its rooms on the same readings, and a kiosk far down a corridor that hears a
    /// badge through walls must not rule out every room but the ones long enough to reach it.
    func rows(_ kiosks: [String], beyondReach plan: Plan? = nil) -> Rows {
        let n = cells.count
        var known: [Bool] = []
        var mu = [Double](repeating: 0, count: kiosks.count * n)
        var silent = [Double](repeating: 0, count: kiosks.count * n)
        for (i, k) in kiosks.enumerated() {
            guard let (p, q) = model(k, beyondReach: plan) else {
                known.append(false)
                continue
            }
            known.append(true)
            for c in 0..<n {
                mu[i * n + c] = p[c]
                silent[i * n + c] = q[c]
            }
        }
        return Rows(known: known, predicted: mu, notHeard: silent)
    }

    /// The log-likelihood at every cell of one step's readings, written into the first cells of
    /// `ll`: `y[i]` read by the i-th kiosk of `rows` where `heard[i]`, the others silent (each a
    /// kiosk that heard the badge around then, in key order). A reading whose kiosk the grid has
    /// no model for is left out, or, when `strict` (a room chain: rooms compare on the same
    /// readings), no cell explains it: then false is answered and `ll` is not written. `sum`
    /// is scratch of at least the grid's size.
    func logLikelihood(
        y: [Double],
        heard: [Bool],
        rows: Rows,
        strict: Bool,
        into ll: inout [Double],
        sum: inout [Double]
    ) -> Bool {
        var m = 0
        for i in y.indices where heard[i] {
            if rows.known[i] { m += 1 } else if strict { return false }
        }
        let se2 = Positioning.receiverSigma * Positioning.receiverSigma
        let sb2 = Positioning.badgeSigma * Positioning.badgeSigma
        let shrink = sb2 / (se2 + Double(m) * sb2)
        // The badge's own error integrated out: the determinant's share, which depends on how
        // many kiosks heard, keeps rooms with different numbers of readings comparable.
        let norm = -0.5 * (Double(m) * log(2 * .pi * se2) + log(1 + Double(m) * sb2 / se2))
        let half = 0.5 / se2
        let n = cells.count
        // Kiosk by kiosk over every cell, the squares summed in `ll` before it becomes the
        // log-likelihood (each cell's sums taken in kiosk order, so the same to the last bit).
        rows.predicted.withUnsafeBufferPointer { mu in
            rows.notHeard.withUnsafeBufferPointer { silent in
                ll.withUnsafeMutableBufferPointer { ll in
                    sum.withUnsafeMutableBufferPointer { sum in
                        for c in 0..<n {
                            sum[c] = 0
                            ll[c] = 0
                        }
                        for i in y.indices where heard[i] && rows.known[i] {
                            let base = i * n
                            for c in 0..<n {
                                let r = y[i] - mu[base + c]
                                sum[c] += r
                                ll[c] += r * r
                            }
                        }
                        for c in 0..<n { ll[c] = norm - half * (ll[c] - shrink * sum[c] * sum[c]) }
                        for i in y.indices where !heard[i] && rows.known[i] {
                            let base = i * n
                            for c in 0..<n { ll[c] += silent[base + c] }
                        }
                    }
                }
            }
        }
        return true
    }

    /// log Φ(z), the standard normal's log CDF (erfc keeps the far tail finite).
    static func logPhi(_ z: Double) -> Double {
        log(max(1e-300, 0.5 * erfc(-z / 2.0.squareRoot())))
    }

    /// The posterior over cells for each slot, by forward–backward over runs of slots.
    ///
    /// Each slot's motion steps go back and forth between two buffers, and each product is
    /// normalised where it is made, where the first version made a new array for every motion
    /// step, product and normalisation (BENCHMARKS.md, "Flagging on random sites"). The sums are
    /// taken in the same order, so the posteriors are the same to the last bit.
    func smooth(slots: [Int], likelihoods: [[Double]]) -> [[Double]] {
        let n = slots.count
        let m = cells.count
        var alpha = [[Double]](repeating: [], count: n)
        var here = [Double](repeating: 0, count: m)
        var there = [Double](repeating: 0, count: m)
        for k in 0..<n {
            let gap = k == 0 ? Int.max : slots[k] - slots[k - 1]
            if gap > Positioning.longestGap {
                for c in 0..<m { here[c] = 1 }
            } else {
                for c in 0..<m { here[c] = alpha[k - 1][c] }
                for _ in 0..<gap {
                    move(here, into: &there)
                    swap(&here, &there)
                }
            }
            alpha[k] = Self.normalisedProduct(here, likelihoods[k])
        }
        var out = alpha
        var beta = [Double](repeating: 1, count: m)
        for k in stride(from: n - 2, through: 0, by: -1) {
            let gap = slots[k + 1] - slots[k]
            if gap > Positioning.longestGap {
                for c in 0..<m { beta[c] = 1 }
            } else {
                for c in 0..<m { here[c] = likelihoods[k + 1][c] * beta[c] }
                for _ in 0..<gap {
                    move(here, into: &there)
                    swap(&here, &there)
                }
                Self.normalise(here, into: &beta)
            }
            out[k] = Self.normalisedProduct(alpha[k], beta)
        }
        return out
    }

    /// One slot's motion: mostly still (a blur to the neighbouring cells), sometimes anywhere.
    /// Symmetric, so it serves the backward pass as well.
    func move(_ p: [Double]) -> [Double] {
        var out = [Double](repeating: 0, count: p.count)
        move(p, into: &out)
        return out
    }

    /// `move`, into a buffer of the grid's size.
    func move(_ p: [Double], into out: inout [Double]) {
        let n = p.count
        p.withUnsafeBufferPointer { p in
            out.withUnsafeMutableBufferPointer { out in
                neighbours.withUnsafeBufferPointer { neighbours in
                    neighbourStart.withUnsafeBufferPointer { start in
                        kept.withUnsafeBufferPointer { kept in
                            var total = 0.0
                            for c in 0..<n {
                                total += p[c]
                                out[c] = 0
                            }
                            for c in 0..<n {
                                for k in start[c]..<start[c + 1] { out[neighbours[k]] += Self.side * p[c] }
                                out[c] += kept[c] * p[c]
                            }
                            let spread = Positioning.jump * total / Double(n)
                            for c in 0..<n { out[c] = (1 - Positioning.jump) * out[c] + spread }
                        }
                    }
                }
            }
        }
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

    /// `normalised(p)`, written into `out` (of p's size).
    static func normalise(_ p: [Double], into out: inout [Double]) {
        let total = p.reduce(0, +)
        let n = p.count
        for c in 0..<n { out[c] = total > 0 ? p[c] / total : 1 / Double(n) }
    }

    /// `normalised` of the cell-by-cell product of two rows, in one array.
    static func normalisedProduct(_ a: [Double], _ b: [Double]) -> [Double] {
        let n = a.count
        var out = [Double](unsafeUninitializedCapacity: n) { buffer, count in
            a.withUnsafeBufferPointer { a in
                b.withUnsafeBufferPointer { b in
                    for c in 0..<n { buffer[c] = a[c] * b[c] }
                }
            }
            count = n
        }
        let total = out.reduce(0, +)
        guard total > 0 else { return [Double](repeating: 1 / Double(n), count: n) }
        for c in 0..<n { out[c] /= total }
        return out
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

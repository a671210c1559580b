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

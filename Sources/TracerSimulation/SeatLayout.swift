import Foundation
import TracerSite

/// Where people sit in one room, by its use, and who sits where until when.
///
/// Teaching rooms have rows of seats; meeting rooms a table with chairs round it; work rooms
/// desks; dining rooms tables of four, which friends share; a clinic a row of waiting chairs.
/// Corridors and entrances have no seats: people pass anywhere in them.
struct SeatLayout {
    let room: Room
    private(set) var seats: [Point] = []
    private var table: [Int] = []
    private var occupiedUntil: [Double] = []

    init(room: Room, rng: inout SeededGenerator) {
        self.room = room
        let (lo, hi) = room.bounds
        func grid(_ stepX: Double, _ stepY: Double, margin: Double, _ body: (Point) -> Void) {
            var y = lo.y + margin
            while y <= hi.y - margin + 1e-9 {
                var x = lo.x + margin
                while x <= hi.x - margin + 1e-9 {
                    body(Point(x, y))
                    x += stepX
                }
                y += stepY
            }
        }
        switch room.use {
        case .teaching:
            grid(1.2, 1.3, margin: 1.2) { seats.append($0) }
        case .meeting:
            let c = Point((lo.x + hi.x) / 2, (lo.y + hi.y) / 2)
            let w = (hi.x - lo.x) * 0.5
            let h = max(1.2, (hi.y - lo.y) * 0.3)
            var x = c.x - w / 2
            while x <= c.x + w / 2 + 1e-9 {
                seats.append(Point(x, c.y - h / 2 - 0.5))
                seats.append(Point(x, c.y + h / 2 + 0.5))
                x += 0.9
            }
            seats.append(Point(c.x - w / 2 - 0.6, c.y))
            seats.append(Point(c.x + w / 2 + 0.6, c.y))
        case .work:
            grid(2.4, 2.4, margin: 1.2) { seats.append($0) }
        case .dining:
            var t = 0
            grid(3.0, 3.0, margin: 1.5) { c in
                for (dx, dy) in [(-0.5, -0.55), (0.5, -0.55), (-0.5, 0.55), (0.5, 0.55)] {
                    seats.append(Point(c.x + dx, c.y + dy))
                    table.append(t)
                }
                t += 1
            }
        case .care:
            var x = lo.x + 0.8
            while x <= hi.x - 0.8 + 1e-9 {
                seats.append(Point(x, lo.y + 0.8))
                x += 1.0
            }
            seats.append(Point((lo.x + hi.x) / 2, (lo.y + hi.y) / 2 + 1))
        case .circulation, .entrance:
            break
        }
        seats = seats.filter { room.contains($0) }
        if table.count != seats.count { table = Array(seats.indices) }
        occupiedUntil = Array(repeating: -.infinity, count: seats.count)
    }

    /// A free seat for [from, to), taken; friends in dining rooms prefer a table already in use.
    /// With every seat taken, somewhere standing.
    mutating func take(from: Double, to: Double, rng: inout SeededGenerator) -> Point {
        let free = seats.indices.filter { occupiedUntil[$0] <= from }
        guard !free.isEmpty else { return anywhere(&rng) }
        var choice = free[rng.index(free.count)]
        if room.use == .dining, rng.chance(0.6) {
            let busy = Set(seats.indices.filter { occupiedUntil[$0] > from }.map { table[$0] })
            let joining = free.filter { busy.contains(table[$0]) }
            if !joining.isEmpty { choice = joining[rng.index(joining.count)] }
        }
        occupiedUntil[choice] = to
        return seats[choice]
    }

    /// A random point inside the room, half a metre from its walls.
    func anywhere(_ rng: inout SeededGenerator) -> Point {
        let (lo, hi) = room.bounds
        let m = min(0.5, (hi.x - lo.x) / 4, (hi.y - lo.y) / 4)
        for _ in 0..<100 {
            let p = Point(rng.uniform(lo.x + m, hi.x - m), rng.uniform(lo.y + m, hi.y - m))
            if room.contains(p) { return p }
        }
        return room.outline[0]
    }
}

/// Plane geometry on the floor plan.
enum Geometry {
    /// A polygon's area (shoelace).
    static func area(_ outline: [Point]) -> Double {
        var s = 0.0
        for i in outline.indices {
            let a = outline[i]
            let b = outline[(i + 1) % outline.count]
            s += a.x * b.y - b.x * a.y
        }
        return abs(s) / 2
    }

    static func distance(_ a: Point, _ b: Point) -> Double {
        ((a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y)).squareRoot()
    }
}

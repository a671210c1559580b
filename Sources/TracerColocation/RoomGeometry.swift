import Foundation
import Synchronization
import TracerSite

/// A kiosk's room as the `geometric` separation rule sees it: where in the room a device at a
/// given distance from the kiosk can be, and so how likely two such devices are within a radius.
///
/// One kiosk's distances d1 and d2 put two devices on two circles round it; inside the room each
/// circle is an arc (often a short one: kiosks hang on walls). Taking every point of each arc as
/// equally likely, the chance that they are within the radius is the share of point pairs that
/// are. A distance that fits nowhere in the room, even allowing for ranging error (`slack`), is a
/// device in another room heard through a wall: it is near nobody here.
public struct RoomGeometry: Sendable, Equatable {
    /// The room's key.
    public var room: String
    public var kiosk: Point
    public var outline: [Point]
    /// The farthest point of the room from the kiosk, metres.
    public let farthest: Double
    /// Distances up to `farthest × slack` are taken as the room's far side.
    public var slack = 1.3

    static let samples = 72
    /// Kiosks further apart than this (metres) are taken never to hear the same badge at once.
    public static let hearingRange = 40.0

    /// The distance between this kiosk and another.
    public func kioskDistance(to other: RoomGeometry) -> Double {
        ((kiosk.x - other.kiosk.x) * (kiosk.x - other.kiosk.x) + (kiosk.y - other.kiosk.y) * (kiosk.y - other.kiosk.y))
            .squareRoot()
    }

    public init(kiosk: Point, room: Room) {
        self.kiosk = kiosk
        self.room = room.key
        outline = room.outline
        // The farthest point of a polygon from a point is one of its corners.
        farthest =
            room.outline.map {
                ((($0.x - kiosk.x) * ($0.x - kiosk.x) + ($0.y - kiosk.y) * ($0.y - kiosk.y))).squareRoot()
            }
            .max() ?? 0
    }

    /// The points of the room at a distance from the kiosk; empty when the device cannot be in it.
    func arc(_ distance: Double) -> [Point] {
        guard distance <= farthest * slack else { return [] }
        let room = Room(key: "", name: "", outline: outline)
        var d = min(distance, farthest * 0.999)
        // Short distances near a corner kiosk can fall outside on every sample: step out until
        // some point is inside.
        for _ in 0..<4 {
            let points = (0..<Self.samples).map { i -> Point in
                let a = Double(i) / Double(Self.samples) * 2 * .pi
                return Point(kiosk.x + d * cos(a), kiosk.y + d * sin(a))
            }.filter(room.contains)
            if !points.isEmpty { return points }
            d = d * 0.8 + 0.1
        }
        return []
    }

    /// The chance that devices at d1 and d2 from the kiosk are within the radius of each other
    /// (0 when either cannot be in the room).
    public func probability(_ d1: Double, _ d2: Double, radius: Double) -> Double {
        let a = arc(d1)
        let b = arc(d2)
        guard !a.isEmpty, !b.isEmpty else { return 0 }
        let r2 = radius * radius
        var near = 0
        for p in a {
            for q in b where (p.x - q.x) * (p.x - q.x) + (p.y - q.y) * (p.y - q.y) <= r2 { near += 1 }
        }
        return Double(near) / Double(a.count * b.count)
    }

    /// The least separation of devices at d1 and d2 from the kiosk, each on its arc in the room
    /// (what `probability` weighs): where that chance is above 0 it is within the radius.
    /// Infinite when either cannot be in the room.
    public func closest(_ d1: Double, _ d2: Double) -> Double {
        let a = arc(d1)
        let b = arc(d2)
        var least = Double.infinity
        for p in a {
            for q in b { least = min(least, (p.x - q.x) * (p.x - q.x) + (p.y - q.y) * (p.y - q.y)) }
        }
        return least.squareRoot()
    }
}

/// The `geometric` rule's answers, by anchor and distances to 25 cm: an engine keeps one for
/// all the reports it flags (computing one takes 72 × 72 point pairs).
final class GeometryCache: Sendable {
    private let tables = Mutex<[String: Table]>([:])

    /// One anchor's table, made on first use.
    func table(_ geometry: RoomGeometry, anchor: String, radius: Double) -> Table {
        tables.withLock { tables in
            if let known = tables[anchor] { return known }
            let table = Table(geometry, radius: radius)
            tables[anchor] = table
            return table
        }
    }

    /// One anchor's answers in a flat array by the two distances in quarter metres, each worked
    /// out when first asked. The hits of a report ask once for every pair of windows (on
    /// Tools/bench/exposure, tens of thousands a report): a dictionary keyed by anchor name and
    /// distances, hashed at every ask, was a fifth of the geometric rule's flagging there
    /// (BENCHMARKS.md, "With positions").
    final class Table: Sendable {
        let geometry: RoomGeometry
        let radius: Double
        /// Distances from 0 to `size − 1` quarter metres; beyond, no arc fits the room.
        let size: Int
        /// By q1 × size + q2 with q1 ≤ q2; NaN until worked out.
        private let values: Mutex<[Double]>

        init(_ geometry: RoomGeometry, radius: Double) {
            self.geometry = geometry
            self.radius = radius
            size = Int((geometry.farthest * geometry.slack * 4).rounded(.down)) + 1
            values = Mutex([Double](repeating: .nan, count: size * size))
        }

        /// The chance that devices at d1 and d2 from the kiosk are within the radius, from the
        /// distances to 25 cm (0 when either cannot be in the room).
        func probability(_ d1: Double, _ d2: Double) -> Double {
            guard let (q1, q2) = quarters(d1, d2) else { return 0 }
            let i = q1 * size + q2
            return values.withLock { values in
                if !values[i].isNaN { return values[i] }
                let p = geometry.probability(Double(q1) / 4, Double(q2) / 4, radius: radius)
                values[i] = p
                return p
            }
        }

        /// The two distances in quarter metres, the smaller first; nil when either rounds to
        /// `size` or more (beyond the room's far side; NaN fails the test too) or is negative.
        func quarters(_ d1: Double, _ d2: Double) -> (Int, Int)? {
            let limit = Double(size) - 0.5
            guard d1 * 4 < limit, d2 * 4 < limit, d1 >= 0, d2 >= 0 else { return nil }
            let q1 = Int((d1 * 4).rounded())
            let q2 = Int((d2 * 4).rounded())
            return (min(q1, q2), max(q1, q2))
        }

        /// `RoomGeometry.closest` at the same quarter metres as `probability` (asked only for
        /// the pairs of what is flagged, so not kept).
        func closest(_ d1: Double, _ d2: Double) -> Double {
            guard let (q1, q2) = quarters(d1, d2) else { return .infinity }
            return geometry.closest(Double(q1) / 4, Double(q2) / 4)
        }
    }
}

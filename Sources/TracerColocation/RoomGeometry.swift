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
}

/// The `geometric` rule's answers, by anchor and distances to 25 cm: an engine keeps one for
/// all the reports it flags (computing one takes 72 × 72 point pairs).
final class GeometryCache: Sendable {
    private let cache = Mutex<[Key: Double]>([:])

    struct Key: Hashable {
        var anchor: String
        var d1: Int
        var d2: Int
    }

    func probability(_ geometry: RoomGeometry, anchor: String, _ d1: Double, _ d2: Double, radius: Double) -> Double {
        var q1 = Int((d1 * 4).rounded())
        var q2 = Int((d2 * 4).rounded())
        if q1 > q2 { swap(&q1, &q2) }
        let key = Key(anchor: anchor, d1: q1, d2: q2)
        if let known = cache.withLock({ $0[key] }) { return known }
        let p = geometry.probability(Double(q1) / 4, Double(q2) / 4, radius: radius)
        cache.withLock { $0[key] = p }
        return p
    }
}

import Foundation
import TracerSite

/// Where someone really was: a room (nil outdoors) and a point, from one time to another.
public struct TruthSegment: Sendable, Equatable {
    public var deviceID: String
    public var room: String?
    public var from: Double
    public var to: Double
    public var position: Point
}

/// Two people really near each other: in the same room, within `radius` metres at times within
/// `window` seconds of each other, from `from` to `to` (one episode: near moments merged where
/// they are within the window of each other).
public struct TruthPair: Sendable, Equatable {
    /// The two device ids, a < b.
    public var a: String
    public var b: String
    public var room: String
    public var from: Double
    public var to: Double
    /// The closest they came, metres.
    public var closest: Double

    public func involves(_ device: String) -> Bool { a == device || b == device }
    public func other(than device: String) -> String { a == device ? b : a }
}

/// What a simulation wrote beside its replays: its parameters, everyone's positions over time,
/// and the true co-location pairs.
public struct GroundTruth: Sendable {
    public struct Kiosk: Sendable {
        public var anchor: String
        public var room: String
        public var replay: String
        public var adverts: Int
    }

    /// The BeaconMap the simulation ran on.
    public var map: String
    public var seed: UInt64
    public var start: Double
    public var end: Double
    public var noise: Double
    public var loss: Double
    public var radius: Double
    public var window: Double
    public var kiosks: [Kiosk]
    /// Role by device id.
    public var roles: [String: String]
    /// Each device's segments, in time order.
    public var segments: [String: [TruthSegment]]
    public var pairs: [TruthPair]

    /// The true pairs from everyone's segments: for each room with a kiosk, every two segments of
    /// different people there whose times are within `window` of each other and whose points are
    /// within `radius`; episodes merged per (pair, room).
    public static func pairs(
        _ segments: [TruthSegment],
        rooms: Set<String>,
        radius: Double,
        window: Double
    ) -> [TruthPair] {
        var byRoom: [String: [TruthSegment]] = [:]
        for s in segments { if let r = s.room, rooms.contains(r) { byRoom[r, default: []].append(s) } }
        struct Key: Hashable {
            var a: String
            var b: String
            var room: String
        }
        var near: [Key: [TruthPair]] = [:]
        for (room, list) in byRoom {
            let sorted = list.sorted { $0.from < $1.from }
            for i in sorted.indices {
                let s = sorted[i]
                var j = i + 1
                while j < sorted.count, sorted[j].from <= s.to + window {
                    let t = sorted[j]
                    j += 1
                    guard t.deviceID != s.deviceID else { continue }
                    let d =
                        ((s.position.x - t.position.x) * (s.position.x - t.position.x)
                        + (s.position.y - t.position.y) * (s.position.y - t.position.y)).squareRoot()
                    guard d <= radius + 1e-9 else { continue }
                    let (a, b) = s.deviceID < t.deviceID ? (s.deviceID, t.deviceID) : (t.deviceID, s.deviceID)
                    near[Key(a: a, b: b, room: room), default: []].append(
                        TruthPair(a: a, b: b, room: room, from: min(s.from, t.from), to: max(s.to, t.to), closest: d)
                    )
                }
            }
        }
        var out: [TruthPair] = []
        for (_, list) in near {
            var episodes: [TruthPair] = []
            for p in list.sorted(by: { $0.from < $1.from }) {
                if var last = episodes.last, p.from - last.to <= window {
                    last.to = max(last.to, p.to)
                    last.closest = min(last.closest, p.closest)
                    episodes[episodes.count - 1] = last
                } else {
                    episodes.append(p)
                }
            }
            out += episodes
        }
        return out.sorted { ($0.from, $0.a, $0.b, $0.room) < ($1.from, $1.a, $1.b, $1.room) }
    }

    /// Whether the truth has two devices within the radius of each other in a room at times
    /// within the window of the stretch [from, to]: what an exposure or a stretch of evidence
    /// there claims.
    public func near(_ a: String, _ b: String, room: String, from: Double, to: Double) -> Bool {
        pairs.contains {
            $0.involves(a) && $0.other(than: a) == b && $0.room == room && $0.from <= to + window
                && $0.to >= from - window
        }
    }

    /// Where a device was at a time (nil: not on site, or outdoors).
    public func segment(of device: String, at t: Double) -> TruthSegment? {
        guard let list = segments[device] else { return nil }
        var lo = 0
        var hi = list.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if list[mid].to <= t { lo = mid + 1 } else { hi = mid }
        }
        guard lo < list.count, list[lo].from <= t else { return nil }
        return list[lo]
    }
}

import TracerBadges
import TracerSite

/// What an outsider with a scanner learns from rotating badge ids: a listener at each kiosk's
/// place, with no key, who tries to link each badge's id in one epoch to its id in the next by
/// the best simple method (the same id if there is one; else, at the same place, the id that
/// appears in the next epoch at the strength nearest the one that stopped). Scored against the
/// simulation's truth, with chance (a guess among the ids that appear) beside it.
public struct Linkability: Sendable {
    /// Ids that stopped at an epoch's change with the same badge heard after it (what could be linked).
    public var linkable = 0
    /// Of those, linked to the right next id.
    public var right = 0
    /// The expected right links of a guess among the next epoch's new ids.
    public var chance = 0.0

    public init() {}

    public var rate: Double { linkable > 0 ? Double(right) / Double(linkable) : 0 }
    public var chanceRate: Double { linkable > 0 ? chance / Double(linkable) : 0 }

    /// Seconds each side of a change of epoch the listener compares.
    public static let span = 60.0
    /// Seconds around the change within which an id must stop, and the next start, to be linked.
    public static let gap = 5.0
    /// Adverts whose mean RSSI is a track's strength at its end (or start).
    public static let edge = 5

    /// One id heard at one place around one change of epoch.
    struct Track {
        var emitter: Int32
        var id: UInt32
        var readings: [Double] = []
        var first = Double.infinity
        var last = -Double.infinity
        mutating func heard(_ h: Simulation.Heard) {
            readings.append(Double(h.rssi))
            first = min(first, h.time)
            last = max(last, h.time)
        }

        /// The strength where it stops (the last adverts) or starts (the first).
        func rssi(atEnd: Bool) -> Double {
            let part = atEnd ? readings.suffix(edge) : readings.prefix(edge)
            return part.reduce(0, +) / Double(max(1, part.count))
        }
    }

    /// The listener at `kiosk`'s place. `id(person, epoch)` is what the badge advertises then
    /// (its rotating id, or its static one for the comparison).
    public static func attack(
        _ simulation: Simulation,
        at kiosk: Anchor,
        bits: Int,
        id: (Int, UInt32) -> UInt32
    ) -> Linkability {
        let heard = simulation.heard(by: kiosk).filter { $0.emitter >= 0 }
        var result = Linkability()
        guard let first = heard.first, let last = heard.last else { return result }
        let length = Double(1 << bits)
        var boundary = Double(RotatingID.epochStart(first.time, bits: bits)) + length
        var index = 0
        while boundary < last.time {
            // Adverts within `span` of the change.
            while index < heard.count, heard[index].time < boundary - span { index += 1 }
            var before: [UInt32: Track] = [:]
            var after: [UInt32: Track] = [:]
            var i = index
            let epochBefore = UInt32(boundary - length)
            let epochAfter = UInt32(boundary)
            while i < heard.count, heard[i].time < boundary + span {
                let h = heard[i]
                let person = Int(h.emitter)
                if h.time < boundary {
                    let key = id(person, epochBefore)
                    before[key, default: Track(emitter: h.emitter, id: key)].heard(h)
                } else {
                    let key = id(person, epochAfter)
                    after[key, default: Track(emitter: h.emitter, id: key)].heard(h)
                }
                i += 1
            }
            // In id order: the matching breaks ties the same way every run.
            result.add(
                before: before.values.sorted { $0.id < $1.id },
                after: after.values.sorted { $0.id < $1.id },
                boundary: boundary
            )
            boundary += length
        }
        return result
    }

    /// Links the tracks that stop at a change to those that start after it, and scores the links.
    mutating func add(before: [Track], after: [Track], boundary: Double) {
        let ending = before
        var starting = after
        let afterEmitters = Set(after.map(\.emitter))
        for t in ending where afterEmitters.contains(t.emitter) { linkable += 1 }
        // The same id on both sides: a static badge, linked for certain.
        var left: [Track] = []
        for t in ending {
            if let j = starting.firstIndex(where: { $0.id == t.id }) {
                if afterEmitters.contains(t.emitter) && starting[j].emitter == t.emitter { right += 1 }
                starting.remove(at: j)
            } else {
                left.append(t)
            }
        }
        // An id that stops just before the change and one that starts just after it: those are the
        // candidates (one that stopped earlier, or starts later, is someone leaving or arriving).
        left = left.filter { $0.last >= boundary - Self.gap }
        starting = starting.filter { $0.first < boundary + Self.gap }
        guard !left.isEmpty, !starting.isEmpty else { return }
        for t in left where afterEmitters.contains(t.emitter) {
            chance += starting.contains { $0.emitter == t.emitter } ? 1 / Double(starting.count) : 0
        }
        // The nearest strengths first, one to one.
        var pairs: [(Double, Int, Int)] = []
        for (a, t) in left.enumerated() {
            for (b, s) in starting.enumerated() {
                pairs.append((abs(t.rssi(atEnd: true) - s.rssi(atEnd: false)), a, b))
            }
        }
        pairs.sort { ($0.0, $0.1, $0.2) < ($1.0, $1.1, $1.2) }
        var usedA = Set<Int>()
        var usedB = Set<Int>()
        for (_, a, b) in pairs where !usedA.contains(a) && !usedB.contains(b) {
            usedA.insert(a)
            usedB.insert(b)
            if left[a].emitter == starting[b].emitter { right += 1 }
        }
    }

    /// Adds another place's.
    public mutating func add(_ other: Linkability) {
        linkable += other.linkable
        right += other.right
        chance += other.chance
    }
}

/// The co-location rule with no I/O: a reporter's windows and their neighbours' in, episodes out.
///
/// The exposure engine drives it in steps so that it reads only what it needs from the store:
/// `reads(reporter:)` says which span of which anchor to read; `hits(_:neighbours:)` judges one
/// read's windows; `whereaboutsReads(_:)` and `attributed(_:elsewhere:)` leave out devices heard
/// through a wall; `episodes(_:)` merges what is left. `episodes(reporter:windows:)` runs them
/// all over windows in memory.
public struct Colocation: Sendable {
    public let policy: ExposurePolicy
    /// The geometric rule's answers so far (they depend on the policy only).
    let cache = GeometryCache()

    public init(policy: ExposurePolicy) { self.policy = policy }

    /// One range read of an anchor's presence, for a run of the reporter's windows there.
    public struct Read: Sendable, Equatable {
        public var anchor: String
        public var from: Double
        public var through: Double
        /// The reporter's windows this read serves, in time order.
        public var reporter: [Window]
    }

    /// A neighbour's window near the reporter's: the span they cover together, the closest
    /// separation bounds, and the seconds both were heard.
    public struct Hit: Sendable, Equatable {
        public var device: String
        public var anchor: String
        /// The neighbour's window.
        public var start: Double
        public var end: Double
        public var distance: Double
        public var from: Double
        public var to: Double
        public var low: Double
        public var high: Double
        public var together: [Pair]

        /// A stretch both were heard (`start` < `end`).
        public struct Pair: Sendable, Equatable {
            public var start: Double
            public var end: Double
        }
    }

    /// One device near the reporter at one anchor, over a contiguous stretch.
    public struct Episode: Sendable, Equatable {
        public var device: String
        public var anchor: String
        public var from: Double
        public var to: Double
        /// Separation bounds, metres, rounded to centimetres.
        public var low: Double
        public var high: Double
        public var overlapSeconds: Double
    }

    /// The reporter's windows where they were (under attribution, not those another kiosk heard
    /// closer), grouped by anchor into runs: one read each, covering every neighbour window that
    /// can be within the policy's window of the run.
    public func reads(reporter windows: [Window]) -> [Read] {
        var byAnchor: [String: [Window]] = [:]
        for w in policy.attributes ? Self.inRoom(windows) : windows { byAnchor[w.anchor, default: []].append(w) }
        var reads: [Read] = []
        for anchor in byAnchor.keys.sorted() {
            for run in Spans.merge(byAnchor[anchor]!, gap: 2 * policy.window, span: { ($0.start, $0.end) }) {
                reads.append(
                    Read(
                        anchor: anchor,
                        from: run.start - policy.window - policy.longestInteraction,
                        through: run.end + policy.window,
                        reporter: run.members
                    )
                )
            }
        }
        return reads
    }

    /// The neighbours' windows of one read that were near the reporter's: at most one hit per
    /// neighbour window, folding every reporter window it qualifies with. The reporter's own
    /// windows are skipped.
    public func hits(_ read: Read, neighbours: [Window]) -> [Hit] {
        let reporter = read.reporter.first?.device
        let starts = read.reporter.map(\.start)
        var out: [Hit] = []
        for theirs in neighbours where theirs.device != reporter {
            // The reporter's windows that can be within the window of this one: those starting
            // from (its start − window − the longest interaction) on.
            var i = Self.firstIndex(in: starts, atLeast: theirs.start - policy.window - policy.longestInteraction)
            var hit: Hit?
            while i < starts.count, starts[i] <= theirs.end + policy.window {
                defer { i += 1 }
                let mine = read.reporter[i]
                let gap = max(theirs.start, mine.start) - min(theirs.end, mine.end)
                guard gap <= policy.window, within(anchor: read.anchor, mine.distance, theirs.distance) else {
                    continue
                }
                let low = abs(mine.distance - theirs.distance)
                let high = mine.distance + theirs.distance
                let shared = Hit.Pair(start: max(theirs.start, mine.start), end: min(theirs.end, mine.end))
                let together = shared.end > shared.start ? [shared] : []
                if var h = hit {
                    h.from = min(h.from, theirs.start, mine.start)
                    h.to = max(h.to, theirs.end, mine.end)
                    h.low = min(h.low, low)
                    h.high = min(h.high, high)
                    h.together += together
                    hit = h
                } else {
                    hit = Hit(
                        device: theirs.device,
                        anchor: read.anchor,
                        start: theirs.start,
                        end: theirs.end,
                        distance: theirs.distance,
                        from: min(theirs.start, mine.start),
                        to: max(theirs.end, mine.end),
                        low: low,
                        high: high,
                        together: together
                    )
                }
            }
            if let hit { out.append(hit) }
        }
        return out
    }

    /// Whether two devices at d1 and d2 from an anchor count as within the radius.
    public func within(anchor: String, _ d1: Double, _ d2: Double) -> Bool {
        if policy.separation == .geometric, let g = policy.geometry[anchor] {
            return cache.probability(g, anchor: anchor, d1, d2, radius: policy.radius) >= policy.likelihood
        }
        return policy.within((abs(d1 - d2), d1 + d2))
    }

    /// Under attribution, the spans of each hit device's whereabouts to read (by device, in time
    /// order): where else it was heard around its hits. Empty when the policy does not attribute.
    public func whereaboutsReads(_ hits: [Hit]) -> [(device: String, from: Double, through: Double)] {
        guard policy.attributes else { return [] }
        var byDevice: [String: [Hit]] = [:]
        for h in hits { byDevice[h.device, default: []].append(h) }
        return byDevice.keys.sorted().flatMap { device in
            Spans.merge(byDevice[device]!, gap: policy.window, span: { ($0.start - policy.longestInteraction, $0.end) })
                .map { (device, $0.start, $0.end) }
        }
    }

    /// The hits left once those heard through a wall are gone: a hit whose window another kiosk
    /// within hearing range heard closer at the time is someone in the next room.
    public func attributed(_ hits: [Hit], elsewhere: [String: [Window]]) -> [Hit] {
        guard policy.attributes else { return hits }
        return hits.filter { h in
            guard let here = policy.geometry[h.anchor] else { return true }
            return !(elsewhere[h.device] ?? []).contains { w in
                guard w.anchor != h.anchor, let there = policy.geometry[w.anchor],
                    there.kioskDistance(to: here) <= RoomGeometry.hearingRange
                else { return false }
                return w.start < h.end && w.end > h.start && w.distance < h.distance
            }
        }
    }

    /// A device's hits at one anchor, merged where they are within the window of each other.
    public func episodes(_ hits: [Hit]) -> [Episode] {
        var groups: [String: [Hit]] = [:]
        for h in hits { groups["\(h.anchor)\n\(h.device)", default: []].append(h) }
        var out: [Episode] = []
        for key in groups.keys.sorted() {
            let merged = Spans.merge(
                groups[key]!,
                gap: policy.window,
                span: { ($0.from, $0.to) },
                order: { ($0.from, $0.start) < ($1.from, $1.start) }
            )
            for m in merged {
                let first = m.members[0]
                out.append(
                    Episode(
                        device: first.device,
                        anchor: first.anchor,
                        from: m.start,
                        to: m.end,
                        low: Self.centimetres(m.members.map(\.low).min()!),
                        high: Self.centimetres(m.members.map(\.high).min()!),
                        overlapSeconds: Spans.covered(m.members.flatMap(\.together).map { ($0.start, $0.end) })
                    )
                )
            }
        }
        return out
    }

    /// Every step over windows in memory: `windows` holds everyone's (the reporter's included);
    /// reads are answered from it as the store would answer them.
    public func episodes(reporter: String, windows: [Window]) -> [Episode] {
        let mine = windows.filter { $0.device == reporter }
        var hits: [Hit] = []
        for read in reads(reporter: mine) {
            let neighbours = windows.filter {
                $0.anchor == read.anchor && $0.start >= read.from && $0.start <= read.through
            }
            hits += self.hits(read, neighbours: neighbours.sorted { $0.start < $1.start })
        }
        var elsewhere: [String: [Window]] = [:]
        for (device, from, through) in whereaboutsReads(hits) {
            elsewhere[device, default: []] += windows.filter {
                $0.device == device && $0.start >= from && $0.start <= through
            }
        }
        return episodes(attributed(hits, elsewhere: elsewhere))
    }

    /// The windows of one device at the kiosk that heard it closest at the time: a window is
    /// dropped when a window at another anchor overlaps it with a shorter distance.
    public static func inRoom(_ windows: [Window]) -> [Window] {
        let sorted = windows.sorted { $0.start < $1.start }
        let longest = sorted.map { $0.end - $0.start }.max() ?? 0
        return sorted.enumerated().filter { i, w in
            // Overlapping windows start before this one ends and after (its start − the longest).
            var j = i
            while j > 0, sorted[j - 1].start > w.start - longest - 1e-9 { j -= 1 }
            while j < sorted.count, sorted[j].start < w.end {
                let o = sorted[j]
                if o.anchor != w.anchor, o.end > w.start, o.distance < w.distance { return false }
                j += 1
            }
            return true
        }.map(\.1)
    }

    /// The first index of sorted `values` at or above `bound` (binary search).
    static func firstIndex(in values: [Double], atLeast bound: Double) -> Int {
        var low = 0
        var high = values.count
        while low < high {
            let mid = (low + high) / 2
            if values[mid] < bound { low = mid + 1 } else { high = mid }
        }
        return low
    }

    static func centimetres(_ v: Double) -> Double { (v * 100).rounded() / 100 }
}

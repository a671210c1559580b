import Foundation
import Synchronization

/// The co-location rule with no I/O: a reporter's windows and their neighbours' in, episodes out.
///
/// The exposure engine drives it in steps so that it reads only what it needs from the store:
/// `reads(reporter:)` says which span of which anchor to read; `hits(_:neighbours:)` judges one
/// read's windows; `whereaboutsReads(_:)` says where else to read the hit devices' windows, with
/// which `judged(_:reporter:elsewhere:)` decides by positions where several kiosks heard both
/// and `attributed(_:elsewhere:)` leaves out devices heard through a wall; `episodes(_:)` merges
/// what is left — under positions, as one decision over each neighbour's stretch in a room
/// (`decided`, with `Evidence` and `PairModel`). `episodes(reporter:windows:)` runs them
/// all over windows in memory.
public struct Colocation: Sendable {
    public let policy: ExposurePolicy
    /// The geometric rule's answers so far (they depend on the policy only).
    let cache = GeometryCache()
    /// Positions from several receivers, where the policy has a plan and uses them.
    public let positioning: Positioning?

    public init(policy: ExposurePolicy) {
        self.policy = policy
        positioning =
            policy.separation == .geometric && policy.positions
            ? policy.plan.map { Positioning(plan: $0, slot: policy.slot) } : nil
    }

    /// One range read of an anchor's presence, for a run of the reporter's windows there.
    public struct Read: Sendable, Equatable {
        public var anchor: String
        public var from: Double
        public var through: Double
        /// The reporter's windows this read serves, in time order.
        public var reporter: [Window]
        /// The window slots in which two receivers of the anchor's room heard the reporter: only
        /// there can positions decide a pair (`judged`), so only there are undecided pairs kept.
        public var placed: Set<Int> = []
    }

    /// A neighbour's window near the reporter's: the reporter's windows it may have been near
    /// (each with the verdict), and from those it was near, the span they cover together, the
    /// closest separation bounds and the seconds both were heard.
    public struct Hit: Sendable, Equatable {
        public var device: String
        public var anchor: String
        /// The neighbour's window.
        public var start: Double
        public var end: Double
        public var distance: Double
        /// The reporter's windows within the policy's window of this one whose distances allow
        /// the radius, in time order.
        public var pairs: [Pairing]

        public struct Pairing: Sendable, Equatable {
            public var mine: Window
            /// Whether the two count as within the radius: the geometric rule's answer from the
            /// two distances, replaced by the positions' where both badges have one.
            public var near: Bool
            /// The chance that the two were within the radius, from what judged `near` (1 or 0
            /// under `sum` and `possible`).
            public var chance: Double = 1
            /// Whether the two badges' positions judged it, not their distances to the anchor.
            public var byPositions = false
            /// Where positions judged it, the least separation of the two fixes' points.
            public var closest: Double?
        }

        /// The chance that the neighbour was in the anchor's room at the time (`judged`).
        public var room: Double = 1
        /// The two badges' readings across the kiosks that heard both in the hit's slot.
        public var readings: Readings?

        /// Two badges' readings compared kiosk by kiosk (Mirzaei & Manduchi, IPIN 2021): badges
        /// side by side read alike at every kiosk, through the same walls.
        public struct Readings: Sendable, Equatable {
            /// Kiosks that heard both.
            public var common: Int
            /// The mean of |ln d1 − ln d2| over the common kiosks.
            public var gap: Double
        }

        /// A stretch both were heard (`start` < `end`).
        public struct Pair: Sendable, Equatable {
            public var start: Double
            public var end: Double
        }

        public var isNear: Bool { pairs.contains(where: \.near) }
        /// Near under the rule as it stands: a pair near, the neighbour in the room.
        var flags: Bool { isNear && room >= Colocation.roomChance }
        /// Worth weighing at all (`Colocation.candidate`).
        var isCandidate: Bool {
            room >= Colocation.candidateRoom && pairs.contains { $0.near || $0.chance >= Colocation.candidate }
        }

        /// `from`, `to`, `low`, `high` and `together` in one pass over the pairs, copying no
        /// window: `episodes` needs all five of every hit, and working each out on its own was a
        /// fifth of the time a report took to flag (perf on `Tools/bench/exposure`).
        func summary() -> (from: Double, to: Double, low: Double, high: Double, together: [Pair]) {
            var (from, to, low, high) = (start, end, Double.infinity, Double.infinity)
            var together: [Pair] = []
            for p in pairs where p.near {
                from = min(from, p.mine.start)
                to = max(to, p.mine.end)
                low = min(low, abs(p.mine.distance - distance))
                high = min(high, p.mine.distance + distance)
                let shared = Pair(start: max(start, p.mine.start), end: min(end, p.mine.end))
                if shared.end > shared.start { together.append(shared) }
            }
            return (from, to, low, high, together)
        }
        public var from: Double { summary().from }
        public var to: Double { summary().to }
        public var low: Double { summary().low }
        public var high: Double { summary().high }
        public var together: [Pair] { summary().together }
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
        /// The chance that the two were within the radius, in one room, within the window of
        /// each other over the episode (`PairModel`); nil where distances alone decided.
        public var chance: Double? = nil
    }

    /// The reporter's windows where they were (under attribution, not those another kiosk heard
    /// closer), grouped by anchor into runs: one read each, covering every neighbour window that
    /// can be within the policy's window of the run.
    public func reads(reporter windows: [Window]) -> [Read] {
        var byAnchor: [String: [Window]] = [:]
        for w in policy.attributes ? inRoom(windows) : windows { byAnchor[w.anchor, default: []].append(w) }
        // Slots in which two receivers of one room heard the reporter, by room.
        var placed: [String: Set<Int>] = [:]
        if let positioning {
            var heard: [String: [Int: Set<String>]] = [:]
            for w in windows {
                guard let r = positioning.plan.receiver(w.anchor) else { continue }
                heard["\(r.kind)\n\(r.room)", default: [:]][positioning.slot(of: w.start), default: []].insert(r.key)
            }
            placed = heard.mapValues { Set($0.filter { $0.value.count >= 2 }.keys) }
        }
        var reads: [Read] = []
        for anchor in byAnchor.keys.sorted() {
            let room = positioning?.plan.receiver(anchor).map { "\($0.kind)\n\($0.room)" }
            for run in Spans.merge(byAnchor[anchor]!, gap: 2 * policy.window, span: { ($0.start, $0.end) }) {
                reads.append(
                    Read(
                        anchor: anchor,
                        from: run.start - policy.window - policy.longestInteraction,
                        through: run.end + policy.window,
                        reporter: run.members,
                        placed: room.flatMap { placed[$0] } ?? []
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
        // Positions decide only where two receivers of the room heard both badges: here, the
        // reporter's slots in which they did.
        func placed(_ w: Window) -> Bool {
            guard !read.placed.isEmpty, let positioning else { return false }
            return read.placed.contains(positioning.slot(of: w.start))
        }
        let (within, threshold) = rule(at: read.anchor)
        let starts = read.reporter.map(\.start)
        var out: [Hit] = []
        for theirs in neighbours where theirs.device != reporter {
            // The reporter's windows that can be within the window of this one: those starting
            // from (its start − window − the longest interaction) on.
            var i = Self.firstIndex(in: starts, atLeast: theirs.start - policy.window - policy.longestInteraction)
            var pairs: [Hit.Pairing] = []
            while i < starts.count, starts[i] <= theirs.end + policy.window {
                defer { i += 1 }
                let mine = read.reporter[i]
                let gap = max(theirs.start, mine.start) - min(theirs.end, mine.end)
                guard gap <= policy.window else { continue }
                let chance = within(mine.distance, theirs.distance)
                let near = chance >= threshold
                // Where positions may decide, every pair the two distances allow is kept.
                if near || chance >= Self.candidate
                    || (placed(mine) && abs(mine.distance - theirs.distance) <= policy.radius + 1e-9)
                {
                    pairs.append(Hit.Pairing(mine: mine, near: near, chance: chance))
                }
            }
            if !pairs.isEmpty {
                out.append(
                    Hit(
                        device: theirs.device,
                        anchor: read.anchor,
                        start: theirs.start,
                        end: theirs.end,
                        distance: theirs.distance,
                        pairs: pairs
                    )
                )
            }
        }
        return out
    }

    /// Whether two devices at d1 and d2 from an anchor count as within the radius.
    public func within(anchor: String, _ d1: Double, _ d2: Double) -> Bool {
        let (chance, threshold) = rule(at: anchor)
        return chance(d1, d2) >= threshold
    }

    /// At one anchor, the chance that two devices at d1 and d2 were within the radius and the
    /// chance that counts (its room's table found once for all of a read's pairs): the geometric
    /// rule's, else 1 or 0 by the separation bounds.
    func rule(at anchor: String) -> (chance: (Double, Double) -> Double, threshold: Double) {
        if policy.separation == .geometric, let g = policy.geometry[anchor] {
            let table = cache.table(g, anchor: anchor, radius: policy.radius)
            return ({ table.probability($0, $1) }, positioning == nil ? policy.likelihood : Self.pairLikelihood)
        }
        let policy = policy
        return ({ policy.within((abs($0 - $1), $0 + $1)) ? 1 : 0 }, 1)
    }

    /// Under attribution or positions, the spans of each hit device's whereabouts to read (by
    /// device, in time order): where else it was heard around its hits. Empty when the policy
    /// uses neither.
    public func whereaboutsReads(_ hits: [Hit]) -> [(device: String, from: Double, through: Double)] {
        guard policy.attributes || positioning != nil else { return [] }
        // The spans alone, not the hits (each a copy of its pairs).
        var byDevice: [String: [(start: Double, end: Double)]] = [:]
        for h in hits { byDevice[h.device, default: []].append((h.start - policy.longestInteraction, h.end)) }
        return byDevice.keys.sorted().flatMap { device in
            Spans.merge(byDevice[device]!, gap: policy.window, span: { $0 }).map { (device, $0.start, $0.end) }
        }
    }

    /// The hits left once those heard through a wall are gone: a hit whose window another kiosk
    /// within hearing range heard closer at the time is someone in the next room. Where the
    /// policy has positions, `judged` attributes rooms instead and this leaves the hits as they are.
    public func attributed(_ hits: [Hit], elsewhere: [String: [Window]]) -> [Hit] {
        guard policy.attributes, positioning == nil else { return hits }
        let timelines = elsewhere.mapValues(Timeline.init)
        return hits.filter { h in
            guard let here = policy.geometry[h.anchor], let timeline = timelines[h.device] else { return true }
            return !timeline.overlapping(h.start, h.end).contains { w in
                guard w.distance < h.distance, policy.room(of: w.anchor) != here.room,
                    let there = policy.geometry[w.anchor]
                else { return false }
                return there.kioskDistance(to: here) <= RoomGeometry.hearingRange
            }
        }
    }

    /// The hits judged by positions where both badges have one: a pair of windows is near when
    /// the chance that the two were within the radius, from their fixes in the anchor's room,
    /// reaches the policy's likelihood; elsewhere the geometric rule's answer stands. Only hits
    /// near the reporter at least once are left. `reporter` holds the reporter's windows at
    /// every anchor, `elsewhere` each hit device's around its hits.
    ///
    /// Under attribution, a hit is also left out when the room its device was in at the time,
    /// by `Positioning.rooms` over its whereabouts, is not the anchor's.
    public func judged(_ hits: [Hit], reporter: [Window], elsewhere: [String: [Window]]) -> [Hit] {
        guard let positioning else { return hits.filter(\.isNear) }
        let timelines = elsewhere.mapValues(Timeline.init)
        let me = reporter.first?.device ?? ""
        // A device whose whereabouts were all heard by the kiosks of one room with no room next
        // to it was in that room: its room chain would give that room a chance of 1 at every
        // step, so it is not run. On Tools/bench/exposure that is most hit devices.
        var onlyRooms: [String: String?] = [:]
        func onlyRoom(_ device: String) -> String? {
            if let known = onlyRooms[device] { return known }
            var heardIn = Set<String>()
            for w in elsewhere[device] ?? [] {
                if let r = positioning.plan.receiver(w.anchor) { heardIn.insert(r.room) }
            }
            let plan = positioning.plan
            let only = heardIn.count == 1 ? heardIn.first.flatMap { plan.isolated($0) ? $0 : nil } : nil
            onlyRooms[device] = .some(only)
            return only
        }
        // The room chains the hits ask for, each device's once, on every core: they are most of
        // a report's work, and each is the device's own (BENCHMARKS.md, "Flagging on two cores").
        var asked: [String] = []
        if policy.attribution {
            var seen = Set<String>()
            for h in hits {
                guard let room = positioning.plan.receiver(h.anchor)?.room, onlyRoom(h.device) != room else { continue }
                if seen.insert(h.device).inserted { asked.append(h.device) }
            }
        }
        let rooms = Dictionary(
            uniqueKeysWithValues: zip(
                asked,
                Self.concurrently(asked) { device in positioning.rooms(elsewhere[device] ?? [], device: device) }
            )
        )

        // Each hit's room and the two badges' readings; those with two of the room's kiosks
        // hearing the neighbour in the hit's slot are judged by fixes, below.
        enum Stage {
            case decided(Hit?)
            case byFixes(Hit, room: String, slot: Int)
        }
        let mine = Timeline(reporter)
        // The reporter's readings by slot: many hits share a slot.
        var reporterReadings: [Int: [String: Double]] = [:]
        let staged: [Stage] = hits.map { h in
            guard let room = positioning.plan.receiver(h.anchor)?.room else { return .decided(h.isNear ? h : nil) }
            var judged = h
            if policy.attribution, onlyRoom(h.device) != room, let chain = rooms[h.device] {
                judged.room = chain.chance(of: room, at: (h.start + h.end) / 2) ?? 1
                if judged.room < Self.candidateRoom { return .decided(nil) }
            }
            // The two badges' readings at every kiosk that heard them in the hit's slot.
            let slot = positioning.slot(of: h.start)
            let from = Double(slot) * positioning.slot
            func inSlot(_ t: Timeline?) -> [String: Double] {
                var out: [String: Double] = [:]
                for w in t?.starting(from: from - 1, before: from + positioning.slot + 1) ?? []
                where positioning.slot(of: w.start) == slot {
                    out[w.anchor] = min(out[w.anchor] ?? .infinity, w.distance)
                }
                return out
            }
            let theirReadings = inSlot(timelines[h.device])
            if reporterReadings[slot] == nil { reporterReadings[slot] = inSlot(mine) }
            judged.readings = Self.readings(reporterReadings[slot]!, theirReadings)
            // Without two receivers of the room hearing the neighbour in the hit's slot there is
            // no fix to judge by (`Fix.receivers`): that is counted before any track is worked out.
            let heardBy = theirReadings.keys.filter { positioning.plan.receiver($0)?.room == room }
            guard heardBy.count >= 2 else { return .decided(judged.isCandidate ? judged : nil) }
            return .byFixes(judged, room: room, slot: slot)
        }

        // Each track those hits need (the neighbour's in the room, and the reporter's), smoothed
        // once, on every core as the chains were; a fix (the likeliest of the room's cells) is
        // worked out only for a slot a comparison needs, once.
        var wanted: [DeviceRoom] = []
        var seen = Set<DeviceRoom>()
        for case .byFixes(let h, room: let room, slot: _) in staged {
            for key in [DeviceRoom(device: h.device, room: room), DeviceRoom(device: me, room: room)]
            where seen.insert(key).inserted {
                wanted.append(key)
            }
        }
        let tracks = Dictionary(
            uniqueKeysWithValues: zip(
                wanted,
                Self.concurrently(wanted) { key in
                    positioning.smoothed(
                        key.device == me ? reporter : elsewhere[key.device] ?? [],
                        device: key.device,
                        room: key.room
                    )
                }
            )
        )
        var fixes: [DeviceRoom: [Int: Fix?]] = [:]
        func fix(_ key: DeviceRoom, at slot: Int) -> Fix? {
            if let known = fixes[key]?[slot] { return known }
            let f = tracks[key]??.fix(at: slot, least: 2)
            fixes[key, default: [:]][slot] = .some(f)
            return f
        }
        // Each neighbour's fixes compared with the reporter's, by the neighbour and room and the
        // two slots: a room's two kiosks each make a hit of the same slot, and each hit pairs
        // with every reporter window of a slot, so the same two fixes met up to four times over
        // (on Tools/bench/campus, comparing fixes was over half of flagging a report).
        var compared: [DeviceRoom: [SlotPair: (chance: Double, closest: Double)]] = [:]
        return staged.compactMap { stage in
            guard case .byFixes(var judged, room: let room, slot: let slot) = stage else {
                if case .decided(let hit) = stage { return hit }
                return nil
            }
            let theirKey = DeviceRoom(device: judged.device, room: room)
            guard let b = fix(theirKey, at: slot) else { return judged.isCandidate ? judged : nil }
            for k in judged.pairs.indices {
                let mySlot = positioning.slot(of: judged.pairs[k].mine.start)
                guard let a = fix(DeviceRoom(device: me, room: room), at: mySlot) else { continue }
                let both = SlotPair(mine: mySlot, theirs: slot)
                let known = compared[theirKey]?[both]
                let (chance, closest) = known ?? Positioning.compare(a, b, radius: policy.radius)
                if known == nil { compared[theirKey, default: [:]][both] = (chance, closest) }
                judged.pairs[k].chance = chance
                judged.pairs[k].near = chance >= Self.pairLikelihood
                judged.pairs[k].byPositions = true
                judged.pairs[k].closest = closest
            }
            return judged.isCandidate ? judged : nil
        }
    }

    /// `body` for every key, on every core, in the keys' order. Each answer is its key's own (a
    /// device's room chain, its track in a room), worked out from values nobody changes, so the
    /// order they are worked out in changes nothing.
    static func concurrently<Key: Sendable, Value: Sendable>(
        _ keys: [Key],
        _ body: @Sendable (Key) -> Value
    ) -> [Value] {
        guard keys.count > 1 else { return keys.map(body) }
        let answers = Answers<Value>(count: keys.count)
        DispatchQueue.concurrentPerform(iterations: keys.count) { i in
            let value = body(keys[i])
            answers.values.withLock { $0[i] = value }
        }
        return answers.values.withLock { $0.map { $0! } }
    }

    /// A device in a room (`judged`'s tracks and comparisons), not a string made for each hit.
    struct DeviceRoom: Hashable, Sendable {
        var device: String
        var room: String
    }

    /// A slot of the reporter's and one of a neighbour's (`judged`'s comparisons).
    struct SlotPair: Hashable {
        var mine: Int
        var theirs: Int
    }

    /// Two badges' readings (distance by kiosk) compared kiosk by kiosk; nil when no kiosk
    /// heard both.
    static func readings(_ a: [String: Double], _ b: [String: Double]) -> Hit.Readings? {
        var common = 0
        var gap = 0.0
        for (anchor, d1) in a {
            guard let d2 = b[anchor] else { continue }
            common += 1
            gap += abs(log(max(d1, 0.3)) - log(max(d2, 0.3)))
        }
        guard common > 0 else { return nil }
        return Hit.Readings(common: common, gap: gap / Double(common))
    }

    /// A device's hits in one room, merged where they are within the window of each other: two
    /// kiosks of a room that both heard a pair make one episode, not two. Its anchor is the kiosk
    /// that heard the pair together longest (the first by key on a tie). Under positions, each
    /// merged stretch is one decision over all its evidence (`decided`).
    public func episodes(_ hits: [Hit]) -> [Episode] {
        if positioning != nil { return decided(hits) }
        var groups: [String: [Hit]] = [:]
        for h in hits where h.flags { groups["\(policy.room(of: h.anchor))\n\(h.device)", default: []].append(h) }
        var out: [Episode] = []
        for key in groups.keys.sorted() {
            // Each hit's span, bounds and shared stretches worked out once.
            let summed = groups[key]!.map { (hit: $0, summary: $0.summary()) }
            let merged = Spans.merge(
                summed,
                gap: policy.window,
                span: { ($0.summary.from, $0.summary.to) },
                order: { ($0.summary.from, $0.hit.start) < ($1.summary.from, $1.hit.start) }
            )
            for m in merged {
                var byAnchor: [String: [(start: Double, end: Double)]] = [:]
                for member in m.members {
                    byAnchor[member.hit.anchor, default: []] += member.summary.together.map { ($0.start, $0.end) }
                }
                let anchor = byAnchor.mapValues(Spans.covered).min { ($1.value, $0.key) < ($0.value, $1.key) }!.key
                out.append(
                    Episode(
                        device: m.members[0].hit.device,
                        anchor: anchor,
                        from: m.start,
                        to: m.end,
                        low: Self.centimetres(m.members.map(\.summary.low).min()!),
                        high: Self.centimetres(m.members.map(\.summary.high).min()!),
                        overlapSeconds: Spans.covered(byAnchor.values.flatMap { $0 })
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
        return episodes(attributed(judged(hits, reporter: mine, elsewhere: elsewhere), elsewhere: elsewhere))
    }

    /// The windows of one device in the room it was in at the time: by `Positioning.rooms` where
    /// the policy has positions, else by the closest kiosk (`inRoom(_:room:)`).
    public func inRoom(_ windows: [Window]) -> [Window] {
        guard let positioning, let device = windows.first?.device else {
            return Self.inRoom(windows, room: policy.room(of:))
        }
        let rooms = positioning.rooms(windows, device: device)
        return windows.filter { w in
            (rooms.chance(of: policy.room(of: w.anchor), at: (w.start + w.end) / 2) ?? 1) >= Self.roomChance
        }
    }

    /// The windows of one device in the room whose kiosk heard it closest at the time: a window
    /// is dropped when a window at an anchor in another room overlaps it with a shorter distance.
    public static func inRoom(_ windows: [Window], room: (String) -> String = { $0 }) -> [Window] {
        let timeline = Timeline(windows)
        return timeline.windows.filter { w in
            !timeline.overlapping(w.start, w.end).contains { o in
                o.anchor != w.anchor && o.distance < w.distance && room(o.anchor) != room(w.anchor)
            }
        }
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

    /// One device's windows in time order, to find those near a time by binary search. Attribution
    /// and positions looked through a hit device's whole whereabouts once for every one of its
    /// hits, which grows as hits × windows: on Tools/bench/exposure the geometric rule took
    /// 530–538 ms a report with the scan and 352–359 ms with this (BENCHMARKS.md, "With
    /// positions").
    struct Timeline {
        let windows: [Window]
        let starts: [Double]
        /// The longest window: one overlapping a time starts at most this long before it.
        let longest: Double

        init(_ windows: [Window]) {
            self.windows = windows.sorted { $0.start < $1.start }
            starts = self.windows.map(\.start)
            longest = self.windows.map { $0.end - $0.start }.max() ?? 0
        }

        /// The windows starting in [from, before).
        func starting(from: Double, before: Double) -> ArraySlice<Window> {
            let low = Colocation.firstIndex(in: starts, atLeast: from)
            return windows[low..<max(low, Colocation.firstIndex(in: starts, atLeast: before))]
        }

        /// The windows overlapping the open span (start, end): starting before its end, ending
        /// after its start.
        func overlapping(_ start: Double, _ end: Double) -> LazyFilterSequence<ArraySlice<Window>> {
            starting(from: start - longest, before: end).lazy.filter { $0.end > start }
        }
    }

    /// A window counts in a room while the chance that its badge was there is at least this.
    static let roomChance = 0.2
    /// Under positions, a pair of windows counts as near on its own from this chance (one of the
    /// things `PairModel` weighs; the policy's likelihood is the episode's).
    static let pairLikelihood = 0.3
    /// Pairs and hits kept to be weighed over the window: a pair whose chance is at least this,
    /// a neighbour whose chance of being in the room is at least `candidateRoom`.
    static let candidate = 0.05
    static let candidateRoom = 0.02

    static func centimetres(_ v: Double) -> Double { (v * 100).rounded() / 100 }
}

/// `Colocation.concurrently`'s answers, each written once by the thread that worked it out.
private final class Answers<Value: Sendable>: Sendable {
    let values: Mutex<[Value?]>
    init(count: Int) { values = Mutex([Value?](repeating: nil, count: count)) }
}

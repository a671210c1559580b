/// What one neighbour's hits in one room say over the policy's window, weighed together: the
/// pair decision's inputs (`PairModel`).
public struct Evidence: Sendable, Equatable {
    public var device: String
    public var room: String
    /// The stretch weighed: the pairs' windows, the reporter's and the neighbour's.
    public var from = Double.infinity
    public var to = -Double.infinity
    /// Pairs of windows weighed, and those near on their own (`Colocation.pairLikelihood`).
    public var pairs = 0
    public var near = 0
    /// The best and the mean pair chance; the pairs positions judged and the best of theirs.
    public var best = 0.0
    public var mean = 0.0
    public var byPositions = 0
    public var bestByPositions = 0.0
    /// The best pair chance times the neighbour's room chance at its hit.
    public var bestJoint = 0.0
    /// The neighbour's chance of being in the room over its hits: highest and mean.
    public var roomHigh = 0.0
    public var roomMean = 0.0
    /// Seconds both were heard in the pairs weighed.
    public var together = 0.0
    /// Closest separation bounds from the pairs' distances to their kiosk.
    public var low = Double.infinity
    public var high = Double.infinity
    /// Readings compared kiosk by kiosk (`Colocation.Hit.Readings`): the most kiosks that heard
    /// both in a slot, the smallest mean gap, the hits that had any.
    public var common = 0
    public var gap = Double.infinity
    public var compared = 0
    /// Whether a pair of its windows counts as near on its own, with the neighbour in the room
    /// (chance 0.2 or more): the decision flags only such a stretch.
    public var counted = false

    public init(device: String, room: String) {
        self.device = device
        self.room = room
    }
}

extension Colocation {
    /// Each neighbour's hits in each room, merged where they are within the window of each
    /// other, with what they say together.
    public func evidence(_ hits: [Hit]) -> [Evidence] { weigh(hits).map(\.evidence) }

    func weigh(_ hits: [Hit]) -> [(evidence: Evidence, members: [Hit])] {
        var groups: [String: [Hit]] = [:]
        for h in hits { groups["\(policy.room(of: h.anchor))\n\(h.device)", default: []].append(h) }
        var out: [(evidence: Evidence, members: [Hit])] = []
        for key in groups.keys.sorted() {
            for m in Spans.merge(groups[key]!, gap: policy.window, span: { ($0.start, $0.end) }) {
                var e = Evidence(device: m.members[0].device, room: policy.room(of: m.members[0].anchor))
                var sum = 0.0
                var roomSum = 0.0
                var together: [(start: Double, end: Double)] = []
                for h in m.members {
                    e.counted = e.counted || h.flags
                    e.roomHigh = max(e.roomHigh, h.room)
                    roomSum += h.room
                    if let r = h.readings {
                        e.compared += 1
                        e.common = max(e.common, r.common)
                        e.gap = min(e.gap, r.gap)
                    }
                    for p in h.pairs {
                        e.pairs += 1
                        if p.near { e.near += 1 }
                        sum += p.chance
                        e.best = max(e.best, p.chance)
                        e.bestJoint = max(e.bestJoint, p.chance * h.room)
                        if p.byPositions {
                            e.byPositions += 1
                            e.bestByPositions = max(e.bestByPositions, p.chance)
                        }
                        e.low = min(e.low, abs(p.mine.distance - h.distance))
                        e.high = min(e.high, p.mine.distance + h.distance)
                        e.from = min(e.from, h.start, p.mine.start)
                        e.to = max(e.to, h.end, p.mine.end)
                        together.append((max(h.start, p.mine.start), min(h.end, p.mine.end)))
                    }
                }
                e.mean = e.pairs == 0 ? 0 : sum / Double(e.pairs)
                e.roomMean = roomSum / Double(m.members.count)
                e.together = Spans.covered(together)
                out.append((e, m.members))
            }
        }
        return out
    }

    /// Under positions: one decision for each neighbour's merged stretch in a room, from all
    /// its evidence together — the chance `PairModel` gives it, flagged from the policy's
    /// `chance` where a pair of its windows counts as near on its own (`Evidence.counted`). The
    /// model learned on sites whose readings are off by several dB, where one pair's chance
    /// says little; where positions rule a pair out (two kiosks agree the neighbour was 9 m
    /// away) that stands, and the model cannot flag on time together alone. What the episode shows is that decision's: its chance, and as the closest
    /// separation the least that what judged its pairs allows (each pair's arcs in the room, or
    /// its two fixes), so a flagged episode never shows a separation beyond the radius that
    /// the decision says it was within.
    func decided(_ hits: [Hit]) -> [Episode] {
        weigh(hits).compactMap { e, members in
            guard e.counted else { return nil }
            let chance = PairModel.fitted.chance(e)
            guard chance >= policy.chance else { return nil }
            var closest = Double.infinity
            var byAnchor: [String: [(start: Double, end: Double)]] = [:]
            for h in members {
                let table = policy.geometry[h.anchor].map { cache.table($0, anchor: h.anchor, radius: policy.radius) }
                for p in h.pairs where p.chance > 0 {
                    let least = p.closest ?? table?.closest(p.mine.distance, h.distance)
                    closest = min(closest, least ?? abs(p.mine.distance - h.distance))
                    byAnchor[h.anchor, default: []].append((max(h.start, p.mine.start), min(h.end, p.mine.end)))
                }
            }
            guard closest.isFinite else { return nil }
            let anchor =
                byAnchor.mapValues(Spans.covered).min { ($1.value, $0.key) < ($0.value, $1.key) }?.key
                ?? members[0].anchor
            return Episode(
                device: e.device,
                anchor: anchor,
                from: e.from,
                to: e.to,
                low: Self.centimetres(closest),
                high: Self.centimetres(max(e.high, closest)),
                overlapSeconds: e.together,
                chance: (chance * 100).rounded() / 100
            )
        }
    }
}

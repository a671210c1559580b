/// One device heard at one anchor over a window, as co-location needs it: Unix seconds and metres.
public struct Window: Sendable, Equatable {
    public var device: String
    public var anchor: String
    public var start: Double
    public var end: Double
    public var distance: Double

    public init(device: String, anchor: String, start: Double, end: Double, distance: Double) {
        self.device = device
        self.anchor = anchor
        self.start = start
        self.end = end
        self.distance = distance
    }
}

/// Merging of time spans: the one interval merge co-location uses (runs of windows, episodes,
/// the spans of neighbour reads, seconds together).
public enum Spans {
    /// Groups items whose spans lie within `gap` seconds of the group so far (sorted by
    /// `order`, then start): each group with its covering span, in time order. A gap of 0
    /// merges touching and overlapping spans only.
    public static func merge<T>(
        _ items: [T],
        gap: Double,
        span: (T) -> (start: Double, end: Double),
        order: ((T, T) -> Bool)? = nil
    ) -> [(start: Double, end: Double, members: [T])] {
        let sorted = order.map { items.sorted(by: $0) } ?? items.sorted { span($0).start < span($1).start }
        var out: [(start: Double, end: Double, members: [T])] = []
        for item in sorted {
            let s = span(item)
            if let last = out.last, s.start - last.end <= gap {
                out[out.count - 1].end = max(last.end, s.end)
                out[out.count - 1].members.append(item)
            } else {
                out.append((s.start, s.end, [item]))
            }
        }
        return out
    }

    /// The length of the union of spans (empty ones count nothing).
    public static func covered(_ spans: [(start: Double, end: Double)]) -> Double {
        merge(spans.filter { $0.end > $0.start }, gap: 0, span: { $0 }).reduce(0) { $0 + $1.end - $1.start }
    }
}

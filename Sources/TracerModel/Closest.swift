import Foundation

/// The known names closest to a mistyped one, for an error that says what was probably meant.
public enum Closest {
    /// Up to `count` of `known`, nearest to `name` by edit distance (then by name).
    public static func to(_ name: String, in known: some Sequence<String>, count: Int = 3) -> [String] {
        let target = Array(name.lowercased())
        return known.map { ($0, distance(target, Array($0.lowercased()))) }
            .sorted { ($0.1, $0.0) < ($1.1, $1.0) }
            .prefix(count).map(\.0)
    }

    /// Levenshtein's distance, one row at a time.
    public static func distance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        var row = Array(0...b.count)
        for i in 1...a.count {
            var previous = row[0]
            row[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                let next = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = row[j]
                row[j] = next
            }
        }
        return row[b.count]
    }
}

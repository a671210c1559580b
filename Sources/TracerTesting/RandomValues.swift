import TracerStore

/// A small, fast, seedable generator, so property tests are repeatable.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Random values of every type, biased towards the edges where orderings go wrong.
public enum RandomValues {
    public static func value(_ g: inout SplitMix64, depth: Int = 0, inArray: Bool = false) -> Value {
        let kinds = depth > 2 ? 7 : 9
        switch Int.random(in: 0..<kinds, using: &g) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &g))
        case 2:
            let edges: [Int64] = [0, 1, -1, Int64.max, Int64.min, 1 << 53, (1 << 53) + 1, -(1 << 53) - 1]
            return .integer(
                Bool.random(using: &g) ? edges.randomElement(using: &g)! : Int64.random(in: -1000...1000, using: &g)
            )
        case 3:
            let edges: [Double] = [
                0, -0.0, .nan, .infinity, -.infinity, 0.5, -0.5, 9_007_199_254_740_992, 1e300, -1e-300,
            ]
            return .double(
                Bool.random(using: &g) ? edges.randomElement(using: &g)! : Double.random(in: -1000...1000, using: &g)
            )
        case 4:
            return .timestamp(
                Timestamp(microseconds: Int64.random(in: -10_000_000_000...10_000_000_000_000, using: &g))
            )
        case 5: return .string(string(&g))
        case 6:
            return .bytes(
                (0..<Int.random(in: 0..<4, using: &g)).map { _ in [0, 1, 255, 128].randomElement(using: &g)! }
            )
        case 7:
            if inArray { return .string(string(&g)) }
            return .array(
                (0..<Int.random(in: 0..<3, using: &g)).map { _ in value(&g, depth: depth + 1, inArray: true) }
            )
        default:
            var m: [String: Value] = [:]
            for _ in 0..<Int.random(in: 0..<3, using: &g) { m[string(&g, minLength: 1)] = value(&g, depth: depth + 1) }
            return .map(m)
        }
    }

    public static func string(_ g: inout SplitMix64, minLength: Int = 0) -> String {
        let alphabet: [String] = ["a", "b", "A", "\u{0}", "é", "😀", "/", " ", "z"]
        return (0..<Int.random(in: minLength..<4, using: &g)).map { _ in alphabet.randomElement(using: &g)! }.joined()
    }
}

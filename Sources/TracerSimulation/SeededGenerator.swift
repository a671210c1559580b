import Foundation

/// SplitMix64: a small, fast generator whose whole state is one seed, so a simulation is the
/// same for the same seed on every machine.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    /// A generator of its own for one part of a simulation, so that changing one part (say the
    /// noise) leaves the draws of the others (the schedules) as they were.
    public init(seed: UInt64, stream: String) {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a of the stream's name, mixed with the seed
        for b in stream.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        state = seed ^ h
        _ = next()
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    public mutating func unit() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// Uniform in [a, b).
    public mutating func uniform(_ a: Double, _ b: Double) -> Double {
        a + (b - a) * unit()
    }

    /// True with probability p.
    public mutating func chance(_ p: Double) -> Bool {
        unit() < p
    }

    /// Normal with mean 0 and standard deviation sigma (Box–Muller).
    public mutating func gaussian(_ sigma: Double) -> Double {
        guard sigma > 0 else { return 0 }
        let u = max(unit(), 1e-300)
        return sigma * (-2 * log(u)).squareRoot() * cos(2 * Double.pi * unit())
    }

    /// An index in 0..<n.
    public mutating func index(_ n: Int) -> Int {
        Int(next() % UInt64(max(n, 1)))
    }

    /// An element of a non-empty array.
    public mutating func pick<T>(_ xs: [T]) -> T {
        xs[index(xs.count)]
    }

    /// An index drawn with the given weights.
    public mutating func weighted(_ weights: [Double]) -> Int {
        let total = weights.reduce(0, +)
        var r = unit() * total
        for (i, w) in weights.enumerated() {
            r -= w
            if r < 0 { return i }
        }
        return weights.count - 1
    }
}

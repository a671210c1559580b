import Foundation

/// What every benchmark here does with its timings: run and time a body, take medians and
/// percentiles, and say whether a target was met.
protocol Measuring {}

extension Measuring {
    /// Seconds `body` took.
    func time(_ body: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    func median(_ xs: [Double]) -> Double { percentile(xs, 0.5) }

    /// The nearest-rank percentile `p` (0–1); NaN for no samples.
    func percentile(_ xs: [Double], _ p: Double) -> Double {
        guard !xs.isEmpty else { return .nan }
        let sorted = xs.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
    }

    func format(_ x: Double) -> String { String(format: "%.2f", x) }
    func verdict(_ ok: Bool, _ target: String) -> String { "(\(target): \(ok ? "met" : "MISSED"))" }
}

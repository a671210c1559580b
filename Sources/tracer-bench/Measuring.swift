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

    /// Seconds `body` took, and the CPU seconds (user and system, every thread) this process
    /// spent meanwhile: a second view, leaving out what a shared machine takes away (another
    /// process on the core, a wait for the disk). On the 2-core machines measured it varied from
    /// run to run about as much as the wall clock (BENCHMARKS.md, "Writes at the benchmark's own
    /// size"). Only meaningful where nothing else in the process runs.
    func timeWithCPU(_ body: () throws -> Void) rethrows -> (wall: Double, cpu: Double) {
        func cpu() -> Double {
            var t = timespec()
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t)
            return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
        }
        let (cpuStart, start) = (cpu(), DispatchTime.now().uptimeNanoseconds)
        try body()
        return (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9, cpu() - cpuStart)
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

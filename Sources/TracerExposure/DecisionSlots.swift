import Synchronization

/// How many reports one process decides at once. A decision reads for a second or more on random
/// sites (a minute at a campus's 14 days, BENCHMARKS.md) and holds one of the store's reader
/// threads while it does; the site server has 4, and every status page, stream and API read waits
/// for one. Several reports at once (people reporting after the same class, a health team's
/// flags) took them all, and a person's page waited for the decisions. Past the limit a decision
/// waits here, holding no thread, for one before it to end.
final class DecisionSlots: Sendable {
    private struct State {
        var free: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
        var inUse = 0
        var peak = 0
    }
    private let state: Mutex<State>

    init(_ limit: Int) {
        state = Mutex(State(free: max(1, limit)))
    }

    /// The most decisions that ran at once (for tests).
    var peak: Int { state.withLock { $0.peak } }

    /// `body` once a slot is free; the slot is given to the next waiting, in order, after.
    func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        await acquire()
        defer { release() }
        return try await body()
    }

    private func acquire() async {
        if state.withLock({ Self.takeFree(&$0) }) { return }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { s -> Bool in
                // Freed between the two looks: taken at once.
                if Self.takeFree(&s) { return true }
                s.waiting.append(c)
                return false
            }
            if resumeNow { c.resume() }
        }
    }

    /// A free slot taken, if there is one.
    private static func takeFree(_ s: inout State) -> Bool {
        guard s.free > 0 else { return false }
        s.free -= 1
        s.inUse += 1
        s.peak = max(s.peak, s.inUse)
        return true
    }

    private func release() {
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            // Handed over to the next in line, the slot stays taken.
            guard !s.waiting.isEmpty else {
                s.inUse -= 1
                s.free += 1
                return nil
            }
            return s.waiting.removeFirst()
        }
        next?.resume()
    }
}

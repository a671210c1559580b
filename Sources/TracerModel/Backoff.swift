/// Exponential backoff, the one way tracer waits between retries (the replicator, the notifier,
/// the BlueZ source, `status --watch`): the delay after each failure in a row doubles from
/// `first` up to `longest`; with `jitter`, each is drawn between half and all of it, so that a
/// site's kiosks retrying after one outage do not all come back in the same second.
public struct Backoff: Sendable, Equatable {
    public var first: Duration
    public var longest: Duration
    public var jitter: Bool
    /// Failures in a row so far.
    public private(set) var failures = 0

    public init(first: Duration, longest: Duration, jitter: Bool = false) {
        self.first = first
        self.longest = longest
        self.jitter = jitter
    }

    /// The delay after `failures` failures in a row (1 is the first), before jitter: `first`
    /// doubled `failures - 1` times, at most `longest`.
    public func ceiling(after failures: Int) -> Duration {
        var delay = first
        for _ in 1..<max(1, min(failures, 64)) where delay < longest { delay = delay * 2 }
        return min(delay, longest)
    }

    /// The delay after `failures` failures in a row; `fraction` (0.5 to 1) is where in its upper
    /// half a jittered delay falls (random unless a test gives it).
    public func delay(after failures: Int, fraction: Double = Double.random(in: 0.5...1.0)) -> Duration {
        jitter ? ceiling(after: failures) * min(1, max(0.5, fraction)) : ceiling(after: failures)
    }

    /// Counts a failure; the delay to wait before the next attempt.
    public mutating func failed() -> Duration {
        failures += 1
        return delay(after: failures)
    }

    /// A success: the next failure waits `first` again.
    public mutating func succeeded() { failures = 0 }
}

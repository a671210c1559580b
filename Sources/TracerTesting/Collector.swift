import Foundation

/// Collects values handed to callbacks on other threads, for tests to wait on.
public final class Collector<T: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var items: [T] = []

    public init() {}

    /// Adds a value (from any thread).
    public func add(_ item: T) {
        condition.lock()
        items.append(item)
        condition.broadcast()
        condition.unlock()
    }

    /// The next value, waiting up to `timeout` seconds; nil if none came.
    public func next(timeout: Double = 5) -> T? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while items.isEmpty {
            if !condition.wait(until: deadline) { return nil }
        }
        return items.removeFirst()
    }

    /// How many values are waiting.
    public var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return items.count
    }
}

import Foundation
import Logging
import TracerStore

/// A clock that moves only when told: for server timestamps and retention in tests.
public final class ManualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Timestamp

    public init(_ start: Timestamp = Timestamp(seconds: 1_763_776_800)) {
        self.current = start
    }

    /// The time now.
    public func now() -> Timestamp {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    /// Moves the clock forward.
    public func advance(seconds: Double) {
        lock.lock()
        current = current.adding(seconds: seconds)
        lock.unlock()
    }
}

extension DocumentStore {
    /// A store in a fresh temporary directory (kept alive by the returned directory), or on the
    /// test's PostgreSQL when `TRACER_TEST_STORE=postgres` (`TestBackend`).
    public static func temporary(
        clock: ManualClock? = nil,
        pollInterval: Duration = .milliseconds(10)
    ) throws
        -> (DocumentStore, TemporaryDirectory)
    {
        let dir = TemporaryDirectory("tracer-store")
        var configuration = Configuration()
        configuration.synchronousCommits = false
        configuration.crossProcessPollInterval = pollInterval
        if let clock { configuration.clock = { clock.now() } }
        let quiet = Logger(label: "tracer.store.test", factory: { _ in SwiftLogNoOpLogHandler() })
        let location = try TestBackend.location(in: dir)
        return (try DocumentStore(path: location, configuration: configuration, logger: quiet), dir)
    }
}

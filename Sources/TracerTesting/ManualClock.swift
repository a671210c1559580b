import Foundation
import Logging
import Synchronization
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

/// The backend the tests' stores are made on: `TRACER_TEST_STORE=postgres` runs the same tests on
/// PostgreSQL (a cluster of the test process's own, a fresh schema per store), so that one suite
/// proves both backends behave alike (`Tools/test` runs the store's tests both ways).
public enum TestBackend {
    public static var isPostgres: Bool { ProcessInfo.processInfo.environment["TRACER_TEST_STORE"] == "postgres" }

    /// The test process's PostgreSQL, started at first use and stopped when the process ends.
    public static func cluster() throws -> PostgresCluster {
        try shared.withLock { cluster in
            if let cluster { return cluster }
            let started = try PostgresCluster()
            cluster = started
            return started
        }
    }

    private static let shared = Mutex<PostgresCluster?>(nil)

    /// Where a test's store goes: the file `name` in `dir`, or a fresh PostgreSQL schema.
    public static func location(in dir: TemporaryDirectory, _ name: String = "store.sqlite") throws -> String {
        isPostgres ? try freshPostgresStore() : dir.file(name)
    }

    /// A store location on PostgreSQL: a schema of its own (made when the store opens).
    public static func freshPostgresStore() throws -> String {
        let schema = "t_" + UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: "")
        return try cluster().uri + "&options=-csearch_path%3D" + schema
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

import Foundation
import Synchronization
import TracerStorePostgres

/// The backend the tests' stores are made on: `TRACER_TEST_STORE=postgres` runs the same tests on
/// PostgreSQL (a cluster of the test process's own, a fresh schema per store), so that one suite
/// proves both backends behave alike (`Tools/test` runs the store's tests both ways).
public enum TestBackend {
    public static var isPostgres: Bool { ProcessInfo.processInfo.environment["TRACER_TEST_STORE"] == "postgres" }

    /// The test process's PostgreSQL, started at first use and stopped when the process ends;
    /// the store's PostgreSQL backend enabled with it.
    public static func cluster() throws -> PostgresCluster {
        PostgresBackend.enable()
        return try shared.withLock { cluster in
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

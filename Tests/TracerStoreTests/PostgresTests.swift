import Foundation
import Synchronization
import Testing
import TracerTesting

@_spi(Blocking) @testable import TracerStore
@testable import TracerStorePostgres

/// The ground the store's PostgreSQL backend stands on: a server of the test's own, started and
/// removed by the test (also when the test run is killed), libpq through `PostgresConnection`,
/// and `bytea` ordering the store's index keys exactly as SQLite's BLOB order does.
@Suite(.serialized) struct PostgresTests {
    /// The server processes running on `directory`'s socket (none once it is stopped).
    static func servers(in directory: String) -> [String] {
        let ps = Process()
        ps.executableURL = URL(fileURLWithPath: "/bin/ps")
        ps.arguments = ["-eo", "pid=,args="]
        let out = Pipe()
        ps.standardOutput = out
        try? ps.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        ps.waitUntilExit()
        return text.split(separator: "\n").map(String.init).filter { $0.contains(directory) && $0.contains("postgres") }
    }

    @Test func aServerOfItsOwnOnASocketAndLoopbackIsRemovedAfterwards() throws {
        let cluster = try PostgresCluster()
        let directory = cluster.directory
        for uri in [cluster.uri, cluster.tcpURI] {
            let c = try PostgresConnection(uri)
            let rows = try c.query("SELECT current_user, current_database(), $1::text", [.text("é ✓")])
            #expect(rows == [["tracer", "tracer", "é ✓"]])
        }
        // Not the machine's superuser and not root: initdb ran as an unprivileged user.
        let owner = try FileManager.default.attributesOfItem(atPath: directory + "/data")[.ownerAccountID] as? Int
        #expect(owner != nil && owner != 0)
        #expect(!Self.servers(in: directory).isEmpty)
        cluster.stop()
        #expect(!FileManager.default.fileExists(atPath: directory))
        #expect(Self.servers(in: directory).isEmpty)
    }

    /// A statement PostgreSQL refuses carries its SQLSTATE, whichever way it was sent (a plain
    /// query, a prepared statement): callers decide by code, never by the message's words.
    /// Stores opened at once on a schema that is not there yet all open: each makes the schema
    /// if it is missing, and `CREATE SCHEMA IF NOT EXISTS` does not hold between connections (the
    /// second fails on the catalogue's unique index; CI met it once, two stores of one test).
    @Test func storesOpenedTogetherOnANewSchemaAllOpen() async throws {
        for round in 0..<12 {
            let uri = try TestBackend.freshPostgresStore()
            let opened = Mutex<[Result<DocumentStore, any Error>]>([])
            DispatchQueue.concurrentPerform(iterations: 6) { _ in
                let r = Result { try DocumentStore(path: uri) }
                opened.withLock { $0.append(r) }
            }
            for r in opened.withLock({ $0 }) {
                switch r {
                case .success(let store): await store.close()
                case .failure(let error): Issue.record("round \(round): \(error)")
                }
            }
            #expect(opened.withLock { $0.count } == 6)
        }
    }

    @Test func aRefusedStatementCarriesItsSQLSTATE() throws {
        let cluster = try PostgresCluster()
        defer { cluster.stop() }
        let c = try PostgresConnection(cluster.uri)
        let syntax = #expect(throws: StoreError.self) { try c.execute("SELEC 1") }
        #expect(syntax?.sqlstate == "42601", "\(String(describing: syntax))")
        #expect(syntax?.code == .postgres)
        // One line, what failed first, the statement as its context (the one funnel's shape).
        #expect(syntax?.message.hasPrefix("PostgreSQL: syntax error") == true, "\(String(describing: syntax))")
        #expect(syntax?.message.contains("\n") == false && syntax?.context == "SELEC 1")
        let missing = #expect(throws: StoreError.self) { _ = try c.query("SELECT * FROM no_such_table") }
        #expect(missing?.sqlstate == "42P01", "\(String(describing: missing))")
        let s = try c.statement("SELECT 1 / ?1::int")
        s.bind(1, Int64(0))
        let division = #expect(throws: StoreError.self) { _ = try s.step() }
        #expect(division?.sqlstate == "22012", "\(String(describing: division))")
    }

    /// The test process killed outright: the watchdog stops its server and removes the files.
    @Test func aKilledTestRunStillRemovesItsServer() async throws {
        let owner = Process()
        owner.executableURL = URL(fileURLWithPath: "/bin/sleep")
        owner.arguments = ["600"]
        try owner.run()
        let directory = (NSTemporaryDirectory() as NSString).appendingPathComponent(
            "tracer-pg-\(UUID().uuidString.prefix(8))"
        )
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let watchdog = Process()
        watchdog.executableURL = URL(fileURLWithPath: "/usr/bin/setsid")
        watchdog.arguments = [
            PostgresCluster.root.appendingPathComponent("Tools/testing/pg-cluster").path, directory,
            "\(try PostgresCluster.freePort())", "\(owner.processIdentifier)",
        ]
        let out = Pipe()
        watchdog.standardOutput = out
        watchdog.standardError = FileHandle.nullDevice
        try watchdog.run()
        let ready = out.fileHandleForReading.availableData
        #expect(String(decoding: ready, as: UTF8.self).hasPrefix("ready "))
        #expect(!Self.servers(in: directory).isEmpty)
        kill(owner.processIdentifier, SIGKILL)
        owner.waitUntilExit()
        #expect(await until { !FileManager.default.fileExists(atPath: directory) })
        #expect(await until { Self.servers(in: directory).isEmpty })
    }

    /// Index keys sort in `bytea` as they do in SQLite and as `Value.compare` orders their
    /// values: the store's layout carries over without a second encoding.
    @Test func byteaOrdersIndexKeysAsSQLiteDoes() throws {
        let cluster = try PostgresCluster()
        let c = try PostgresConnection(cluster.uri)
        try c.execute("CREATE TABLE keys (key bytea PRIMARY KEY)")
        var g = SplitMix64(seed: 17)
        var values: [Value] = []
        var keys = Set<[UInt8]>()
        for _ in 0..<3_000 {
            let v = RandomValues.value(&g)
            if keys.insert(IndexKey.key(v)).inserted { values.append(v) }
        }
        for key in keys { _ = try c.query("INSERT INTO keys VALUES ($1)", [.bytes(key)]) }
        let postgres = try c.bytes("SELECT key FROM keys ORDER BY key")
        let sqlite = try SQLiteConnection(path: ":memory:")
        try sqlite.execute("CREATE TABLE keys (key BLOB PRIMARY KEY)")
        let insert = try sqlite.statement("INSERT INTO keys VALUES (?1)")
        for key in keys {
            insert.reset()
            insert.bindBlob(1, key)
            try insert.run()
        }
        let read = try sqlite.statement("SELECT key FROM keys ORDER BY key")
        var ordered: [[UInt8]] = []
        while try read.step() { ordered.append(read.blob(0)) }
        #expect(postgres.count == keys.count)
        #expect(postgres == ordered)
        let byValue = values.sorted { Value.compare($0, $1) < 0 }.map { IndexKey.key($0) }
        #expect(postgres == byValue)
    }

    /// Nothing listening, a wrong database: one line naming what failed, no password shown.
    @Test func connectionFailuresAreOneLine() throws {
        let port = try PostgresCluster.freePort()
        #expect {
            try PostgresConnection("postgres://tracer:secret@127.0.0.1:\(port)/tracer?connect_timeout=5")
        } throws: { error in
            guard let e = error as? StoreError else { return false }
            return e.code == .postgres && e.message.hasPrefix("cannot connect to PostgreSQL")
                && !e.description.contains("secret") && !e.description.contains("\n")
                && e.context == "postgres://tracer@127.0.0.1:\(port)/tracer?connect_timeout=5"
        }
        let cluster = try PostgresCluster()
        #expect {
            try PostgresConnection("postgres://tracer@/nosuchdb?host=\(cluster.directory)&port=\(cluster.port)")
        } throws: { error in
            (error as? StoreError)?.message.contains("nosuchdb") == true
        }
    }
}

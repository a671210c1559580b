import Foundation
import Testing
import TracerTesting

/// Values an operator might type that crashed the binary (SIGILL on a Double-to-Int conversion):
/// each is now a one-line error and a non-zero exit, or, where it has a meaning, done.
@Suite struct HostileCommandLineTests {
    let dir = TemporaryDirectory("tracer-hostile-cli")
    var store: String { dir.file("s.sqlite") }

    @Test(arguments: [
        (["db", "set", "x/y", #"{"t": {"__time__": 1e300}}"#], "__time__"),
        (["db", "set", "x/y", #"{"t": {"__time__": -1e300}}"#], "__time__"),
        (["db", "set", "x/y", #"{"t": {"__time__": "2026-02-30T10:00:00Z"}}"#], "__time__"),
        (["db", "set", "x/a\u{1}b", #"{"n": 1}"#], "control characters"),
        (["db", "query", "x", "--where", #"t >= {"__time__": 1e300}"#], "__time__"),
        (["serve", "--idle-timeout", "1e300"], "--idle-timeout takes seconds"),
        (["serve", "--max-connections-per-client", "0"], "--max-connections-per-client"),
    ])
    func aValueOutOfRangeIsOneLineAndNonZero(_ args: [String], _ words: String) async throws {
        _ = try await TracerProcess.running(["db", "set", "x/seed", #"{"n": 1}"#, "--store", store])
        let r = try await TracerProcess.running(args + ["--store", store])
        #expect(r.status == 1, "exit \(r.status): \(r.stderr)")
        #expect(r.stderr.contains(words), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
    }

    /// An age beyond the calendar means "everything older than year 1": nothing, and no crash.
    @Test func aPurgeOlderThanTheCalendarDeletesNothing() async throws {
        _ = try await TracerProcess.running([
            "db", "set", "x/y", #"{"t": {"__time__": "2026-11-20T10:00:00Z"}}"#, "--store", store,
        ])
        let r = try await TracerProcess.running(
            ["db", "purge", "x", "--field", "t", "--older-than", "999999999d", "--store", store]
        )
        #expect(r.status == 0, "exit \(r.status): \(r.stderr)")
        #expect(r.stdout.contains("deleted 0 documents"), "\(r.stdout)")
    }
}

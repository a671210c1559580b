import Foundation
import Testing
import TracerTesting

/// The stand-ins a test starts (a private dbus-daemon, the BlueZ mock, the push service) never
/// outlive the process that started them, however it ends: a run killed in CI leaves nothing.
@Suite struct StandInLifetimeTests {
    /// Starts `command` from a shell that is then SIGKILLed, as a test process killed mid-run;
    /// returns once the shell has printed the stand-in's first line, and is gone.
    static func orphan(_ command: String) async throws -> String {
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        // The stand-in's first line comes through; the shell waits, as a test would.
        shell.arguments = ["-c", "\(command) & wait"]
        let out = Pipe()
        shell.standardOutput = out
        try shell.run()
        let line = out.fileHandleForReading.firstLine()
        kill(shell.processIdentifier, SIGKILL)
        shell.waitUntilExit()
        return line
    }

    /// Processes whose command line contains `text`.
    static func running(_ text: String) -> [Int32] {
        let ids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return ids.compactMap(Int32.init).filter { pid in
            guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
            return String(decoding: data, as: UTF8.self).contains(text)
        }
    }

    @Test func aPrivateBusEndsWithTheProcessThatStartedIt() async throws {
        let dir = TemporaryDirectory("tracer-reaper")
        let socket = dir.file("bus")
        let address = try await Self.orphan(
            "'\(PrivateBus.reaperPath)' /usr/bin/dbus-daemon --session --nofork --print-address=1 --address=unix:path=\(socket)"
        )
        #expect(address.hasPrefix("unix:path=\(socket)"), "\(address)")
        let gone = await until(10) { Self.running(socket).isEmpty }
        #expect(gone, "dbus-daemon outlived its test: \(Self.running(socket))")
    }

    @Test func thePushStandInEndsWithTheProcessThatStartedIt() async throws {
        let dir = TemporaryDirectory("tracer-reaper-push")
        let state = dir.file("push-state")
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let line = try await Self.orphan("'\(Chromium.testingTools)/push-standin' '\(state)'")
        #expect(line.hasPrefix("listening "), "\(line)")
        let gone = await until(10) { Self.running(state).isEmpty }
        #expect(gone, "the push stand-in outlived its test: \(Self.running(state))")
    }
}

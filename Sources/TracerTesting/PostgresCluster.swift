import Foundation
import TracerStorePostgres

/// A PostgreSQL server of a test's own (never the machine's): `initdb` in a temporary
/// directory as an unprivileged user, on a Unix socket there and on a free loopback port.
/// `Tools/testing/pg-cluster` runs it in a session of its own and watches this process: when
/// the test ends, however it ends (SIGKILL included), the server is stopped and its directory
/// removed.
public final class PostgresCluster: @unchecked Sendable {
    /// The directory holding the data, the socket and the logs.
    public let directory: String
    /// The loopback port it listens on (also the name of its socket, `.s.PGSQL.PORT`).
    public let port: Int
    private let watchdog: Process
    private var watchdogPID: Int32 = 0

    /// The repository's root, for `Tools/testing/pg-cluster`.
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    public init() throws {
        // Stores on it open in this process too: a test that makes a cluster of its own, run
        // alone, must not depend on another having enabled the backend first.
        PostgresBackend.enable()
        let base = (NSTemporaryDirectory() as NSString).appendingPathComponent(
            "tracer-pg-\(UUID().uuidString.prefix(8))"
        )
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        directory = base
        port = try Self.freePort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setsid")
        process.arguments = [
            Self.root.appendingPathComponent("Tools/testing/pg-cluster").path, base, "\(port)",
            "\(getpid())",
        ]
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        watchdog = process
        // "ready" once the server takes connections; end of file if it failed.
        let words = out.fileHandleForReading.firstLine().split(whereSeparator: \.isWhitespace)
        guard words.first == "ready", words.count > 1, let pid = Int32(words[1]) else {
            process.waitUntilExit()
            let why = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw Failure(message: "the test's PostgreSQL did not start: \(why)")
        }
        // setsid forks when it leads a process group (as a spawned process does): the watchdog
        // is its child, named by the pid it printed (and no child of this process to wait for).
        watchdogPID = pid
    }

    /// A libpq URI for the test database over the Unix socket.
    public var uri: String { "postgres://tracer@/tracer?host=\(directory)&port=\(port)" }

    /// A libpq URI for the test database over TCP on loopback.
    public var tcpURI: String { "postgres://tracer@127.0.0.1:\(port)/tracer" }

    private func file(_ name: String) -> String { (directory as NSString).appendingPathComponent(name) }

    /// Whether the server takes connections.
    public var isUp: Bool { FileManager.default.fileExists(atPath: file("up")) }

    /// Crashes the server (immediate shutdown, as `pg_ctl stop -m immediate`) and returns once
    /// it is down; its data stays for `restart`.
    public func crash() throws {
        _ = FileManager.default.createFile(atPath: file("pause"), contents: nil)
        let deadline = Date(timeIntervalSinceNow: 30)
        while isUp || !Self.serverGone(directory) {
            guard Date() < deadline else { throw Failure(message: "the test's PostgreSQL did not stop") }
            usleep(20_000)
        }
    }

    /// Starts the crashed server again on the same data (crash recovery first) and returns once
    /// it takes connections.
    public func restart() throws {
        try? FileManager.default.removeItem(atPath: file("pause"))
        let deadline = Date(timeIntervalSinceNow: 60)
        while !isUp {
            guard Date() < deadline else { throw Failure(message: "the test's PostgreSQL did not start again") }
            usleep(20_000)
        }
    }

    /// No server process holds the socket any more.
    private static func serverGone(_ directory: String) -> Bool {
        !FileManager.default.fileExists(atPath: (directory as NSString).appendingPathComponent("data/postmaster.pid"))
    }

    /// Stops the server at once and removes its directory (also done when this process ends).
    public func stop() {
        guard watchdogPID > 0 else { return }
        // Asked by a file: the watchdog inherited a signal mask that blocks SIGTERM.
        _ = FileManager.default.createFile(
            atPath: (directory as NSString).appendingPathComponent("stop"),
            contents: nil
        )
        let deadline = Date(timeIntervalSinceNow: 30)
        // Done when the watchdog has gone, having removed the directory.
        while kill(watchdogPID, 0) == 0, Date() < deadline { usleep(20_000) }
        watchdogPID = 0
    }

    deinit { stop() }

    struct Failure: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(message: "socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw Failure(message: "bind: \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

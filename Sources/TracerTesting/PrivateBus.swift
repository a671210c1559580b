import Foundation
import TracerDBus

/// A private `dbus-daemon` on a socket in a temporary directory: never the machine's own buses.
public final class PrivateBus: @unchecked Sendable {
    /// The bus's address (`unix:path=…`).
    public let address: String
    private let process = Process()
    private let directory = TemporaryDirectory("tracer-bus")

    public init() throws {
        let socket = directory.file("bus")
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = ["--session", "--nofork", "--print-address=1", "--address=unix:path=\(socket)"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The daemon prints its address once it listens.
        var line = Data()
        while !line.contains(10) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix("unix:") else {
            throw DBusError(name: "tracer.Test", message: "dbus-daemon did not start")
        }
        address = text
    }

    /// A new connection to this bus.
    public func connect() throws -> DBusConnection { try DBusConnection(address: address) }

    /// Waits until `name` has an owner on the bus (up to `timeout` seconds).
    public func waitForName(_ name: String, timeout: Double = 10) throws {
        let bus = try connect()
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            let reply = try bus.call(
                destination: "org.freedesktop.DBus",
                path: "/org/freedesktop/DBus",
                interface: "org.freedesktop.DBus",
                method: "NameHasOwner",
                [.string(name)]
            )
            if reply.first?.bool == true { return }
            usleep(20_000)
        }
        throw DBusError(name: "tracer.Test", message: "\(name) did not appear on the private bus")
    }

    deinit {
        // dbus-daemon does not end on SIGTERM; it holds nothing worth a graceful exit here.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// python3-dbusmock's bluez5 template, as `org.bluez` on a private bus: a BlueZ stand-in whose
/// adapters and devices tests add through its `org.bluez.Mock` interface.
public final class BlueZMock: @unchecked Sendable {
    public let bus: PrivateBus
    private let process = Process()

    public init(bus: PrivateBus) throws {
        self.bus = bus
        // Debian's python3 has dbusmock; a python3 earlier on PATH may not.
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-m", "dbusmock", "--system", "--template", "bluez5"]
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus.address
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try bus.waitForName("org.bluez")
    }

    /// Calls the mock's control interface.
    @discardableResult
    public func control(_ method: String, _ arguments: [DBusValue]) throws -> [DBusValue] {
        try bus.connect().call(
            destination: "org.bluez",
            path: "/",
            interface: "org.bluez.Mock",
            method: method,
            arguments
        )
    }

    deinit {
        // The mock's GLib loop does not end on SIGTERM either.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

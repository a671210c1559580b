import Foundation
import TracerDBus

/// A private `dbus-daemon` on a socket in a temporary directory: never the machine's own buses.
public final class PrivateBus: @unchecked Sendable {
    /// The bus's address (`unix:path=…`).
    public let address: String
    private var process: Process
    private let directory = TemporaryDirectory("tracer-bus")
    private let socket: String

    public init() throws {
        socket = directory.file("bus")
        process = try Self.start(socket)
        // Without the guid the daemon printed, so that the address stays good across a restart
        // (as the system bus's does).
        address = "unix:path=\(socket)"
    }

    private static func start(_ socket: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: PrivateBus.reaperPath)
        process.arguments = [
            "/usr/bin/dbus-daemon", "--session", "--nofork", "--print-address=1", "--address=unix:path=\(socket)",
        ]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The daemon prints its address once it listens.
        guard out.fileHandleForReading.firstLine().hasPrefix("unix:") else {
            throw DBusError(name: "tracer.Test", message: "dbus-daemon did not start")
        }
        return process
    }

    /// Kills the bus (every connection to it is lost) and starts a new one at the same address.
    public func restart(after pause: Double = 0) throws {
        stop()
        try? FileManager.default.removeItem(atPath: socket)
        if pause > 0 { usleep(UInt32(pause * 1_000_000)) }
        process = try Self.start(socket)
    }

    /// A new connection to this bus.
    public func connect() throws -> DBusConnection { try DBusConnection(address: address) }

    /// Whether `name` has an owner on the bus now.
    public func hasOwner(_ name: String) throws -> Bool {
        let reply = try connect().call(
            destination: "org.freedesktop.DBus",
            path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus",
            method: "NameHasOwner",
            [.string(name)]
        )
        return reply.first?.bool == true
    }

    /// Waits until `name` has an owner on the bus (up to `timeout` seconds).
    public func waitForName(_ name: String, timeout: Double = 30) throws {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            if try hasOwner(name) { return }
            usleep(20_000)
        }
        throw DBusError(name: "tracer.Test", message: "\(name) did not appear on the private bus")
    }

    private func stop() {
        // The reaper ends the daemon at once (SIGKILL: it holds nothing worth a graceful exit).
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    deinit { stop() }

    /// `Tools/testing/reaper`: runs a stand-in so that it never outlives the test process (a test
    /// killed, or crashed, took its private buses and mocks with it only when they got there).
    public static let reaperPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Tools/testing/reaper").path
}

/// A BlueZ stand-in as `org.bluez` on a private bus: python3-dbusmock with the bluez5 template,
/// or tracer's own `Tools/testing/bluez-standin.py` on top of it (correct ManufacturerData types, iBeacon
/// devices, adverts streamed from inside the mock, power and stall switches).
public final class BlueZMock: @unchecked Sendable {
    public enum Template: Sendable {
        case bluez5
        case standIn
    }

    public let bus: PrivateBus
    private let process = Process()

    /// tracer's stand-in template, found from this file's place in the checkout.
    public static var standInPath: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Tools/testing/bluez-standin.py").path
    }

    public init(bus: PrivateBus, template: Template = .bluez5) throws {
        self.bus = bus
        // Debian's python3 has dbusmock; a python3 earlier on PATH may not.
        process.executableURL = URL(fileURLWithPath: PrivateBus.reaperPath)
        let name =
            switch template {
            case .bluez5: "bluez5"
            case .standIn: Self.standInPath
            }
        process.arguments = ["/usr/bin/python3", "-m", "dbusmock", "--system", "--template", name]
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
    public func control(_ method: String, _ arguments: [DBusValue] = []) throws -> [DBusValue] {
        try bus.connect().call(
            destination: "org.bluez",
            path: "/",
            interface: "org.bluez.Mock",
            method: method,
            arguments
        )
    }

    /// The methods called on an object of the mock (dbusmock's call log), by name, oldest first.
    public func calls(on path: String) throws -> [String] {
        let reply = try bus.connect().call(
            destination: "org.bluez",
            path: path,
            interface: "org.freedesktop.DBus.Mock",
            method: "GetCalls"
        )
        guard case .array(_, let rows)? = reply.first else { return [] }
        return rows.compactMap { row in
            guard case .structure(let fields) = row, fields.count == 3 else { return nil }
            return fields[1].string
        }
    }

    /// The objects the mock holds now (GetManagedObjects' paths).
    public func objectPaths() throws -> Set<String> {
        let reply = try bus.connect().call(
            destination: "org.bluez",
            path: "/",
            interface: "org.freedesktop.DBus.ObjectManager",
            method: "GetManagedObjects"
        )
        return Set(reply.first?.dictionary?.keys ?? [:].keys)
    }

    /// Ends the mock at once, as a crashed bluetoothd would (the reaper SIGKILLs it).
    public func kill() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    deinit { kill() }
}

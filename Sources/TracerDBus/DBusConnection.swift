import CTracerDBus
import Foundation

/// A D-Bus failure: the D-Bus error name, its message, and the call it came from.
public struct DBusError: Error, Sendable, CustomStringConvertible {
    /// The D-Bus error name, e.g. `org.freedesktop.DBus.Error.ServiceUnknown`.
    public var name: String
    public var message: String
    /// `destination path interface.method`, when a call failed.
    public var call: String?

    public init(name: String, message: String, call: String? = nil) {
        self.name = name
        self.message = message
        self.call = call
    }

    public var description: String {
        "\(name): \(message)" + (call.map { " (calling \($0))" } ?? "")
    }
}

/// A private connection to a message bus, owned by this object (closed when it is released).
///
/// libdbus is made thread-safe before the first connection, so calls may come from any thread.
/// Unchecked: it owns a C pointer, which Swift cannot see is thread-safe (libdbus is, above).
public final class DBusConnection: @unchecked Sendable {
    let handle: OpaquePointer
    /// Signals the filter took while dispatching, for `receive`.
    let inbox = Inbox()
    /// The objects it exports (`export`).
    let exports = Exports()
    private static let threadsReady: Bool = dbus_threads_init_default() != 0

    /// Connects to the bus at `address` (`unix:path=…`) and registers on it.
    public init(address: String) throws {
        _ = Self.threadsReady
        var error = CTracerDBus.DBusError()
        dbus_error_init(&error)
        guard let connection = dbus_connection_open_private(address, &error) else {
            throw Self.take(&error, call: "connect \(address)")
        }
        dbus_connection_set_exit_on_disconnect(connection, 0)
        guard dbus_bus_register(connection, &error) != 0 else {
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            throw Self.take(&error, call: "register on \(address)")
        }
        handle = connection
        // Every incoming message passes the filter when it is dispatched: replies to calls
        // are matched to their callers first, so signals are all that reach it.
        _ = dbus_connection_add_filter(connection, inboxFilter, Unmanaged.passUnretained(inbox).toOpaque(), nil)
        _ = dbus_connection_add_filter(connection, exportsFilter, Unmanaged.passUnretained(exports).toOpaque(), nil)
    }

    /// The system bus (libdbus honours `DBUS_SYSTEM_BUS_ADDRESS`).
    public static func system() throws -> DBusConnection {
        if let address = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"], !address.isEmpty {
            return try DBusConnection(address: address)
        }
        return try DBusConnection(address: "unix:path=/run/dbus/system_bus_socket")
    }

    deinit {
        dbus_connection_remove_filter(handle, inboxFilter, Unmanaged.passUnretained(inbox).toOpaque())
        dbus_connection_remove_filter(handle, exportsFilter, Unmanaged.passUnretained(exports).toOpaque())
        dbus_connection_close(handle)
        dbus_connection_unref(handle)
    }

    /// This connection's unique name on the bus (`:1.42`).
    public var uniqueName: String {
        dbus_bus_get_unique_name(handle).map { String(cString: $0) } ?? ""
    }

    /// Whether the connection is still up.
    public var isConnected: Bool { dbus_connection_get_is_connected(handle) != 0 }

    /// Calls a method and waits for its reply (at most `timeout`); returns the reply's values.
    public func call(
        destination: String,
        path: String,
        interface: String,
        method: String,
        _ arguments: [DBusValue] = [],
        timeout: Duration = .seconds(5)
    ) throws -> [DBusValue] {
        let (message, what) = try Self.methodCall(destination, path, interface, method, arguments)
        defer { dbus_message_unref(message) }
        var error = CTracerDBus.DBusError()
        dbus_error_init(&error)
        let milliseconds = Self.milliseconds(timeout)
        guard let reply = dbus_connection_send_with_reply_and_block(handle, message, milliseconds, &error) else {
            throw Self.take(&error, call: what)
        }
        defer { dbus_message_unref(reply) }
        return Marshal.values(of: reply)
    }

    /// A method call's message with its arguments (the caller unrefs it), and how errors name it.
    static func methodCall(
        _ destination: String,
        _ path: String,
        _ interface: String,
        _ method: String,
        _ arguments: [DBusValue]
    ) throws -> (OpaquePointer, String) {
        let what = "\(destination) \(path) \(interface).\(method)"
        guard dbus_validate_path(path, nil) != 0 else {
            throw DBusError(
                name: "org.freedesktop.DBus.Error.InvalidArgs",
                message: "'\(path)' is not an object path",
                call: what
            )
        }
        guard let message = dbus_message_new_method_call(destination, path, interface, method) else {
            throw DBusError(name: "org.freedesktop.DBus.Error.NoMemory", message: "cannot make the message", call: what)
        }
        var iterator = DBusMessageIter()
        dbus_message_iter_init_append(message, &iterator)
        do {
            for argument in arguments { try Marshal.append(argument, to: &iterator, call: what) }
        } catch {
            dbus_message_unref(message)
            throw error
        }
        return (message, what)
    }

    /// libdbus's timeouts are milliseconds.
    static func milliseconds(_ timeout: Duration) -> Int32 {
        let (seconds, attoseconds) = timeout.components
        return Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }

    static func take(_ error: inout CTracerDBus.DBusError, call: String) -> DBusError {
        defer { dbus_error_free(&error) }
        guard dbus_error_is_set(&error) != 0 else {
            return DBusError(name: "org.freedesktop.DBus.Error.Failed", message: "failed", call: call)
        }
        return DBusError(
            name: error.name.map { String(cString: $0) } ?? "",
            message: error.message.map { String(cString: $0) } ?? "",
            call: call
        )
    }
}

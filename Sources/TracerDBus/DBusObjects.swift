import CTracerDBus
import Foundation
import Synchronization

/// A method call to an object this connection exports.
public struct DBusMethodCall: Sendable {
    public var sender: String
    public var path: String
    public var interface: String
    public var member: String
    public var arguments: [DBusValue]
}

/// What answers a method call: the reply's values, or an error sent back to the caller.
public typealias DBusMethodHandler = @Sendable (DBusMethodCall) -> Result<[DBusValue], DBusError>

/// The objects a connection exports, by path (BlueZ calls an advertisement's
/// `org.freedesktop.DBus.Properties.GetAll` and `org.bluez.LEAdvertisement1.Release` on its
/// owner).
final class Exports: Sendable {
    let handlers = Mutex<[String: DBusMethodHandler]>([:])
}

/// libdbus's filter for method calls to exported paths: answered here, when dispatched.
let exportsFilter: DBusHandleMessageFunction = { connection, message, userData in
    guard let connection, let message, let userData,
        dbus_message_get_type(message) == CTracerDBus_MESSAGE_TYPE_METHOD_CALL
    else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    let exports = Unmanaged<Exports>.fromOpaque(userData).takeUnretainedValue()
    func text(_ p: UnsafePointer<CChar>?) -> String { p.map { String(cString: $0) } ?? "" }
    let path = text(dbus_message_get_path(message))
    guard let handler = exports.handlers.withLock({ $0[path] }) else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    let call = DBusMethodCall(
        sender: text(dbus_message_get_sender(message)),
        path: path,
        interface: text(dbus_message_get_interface(message)),
        member: text(dbus_message_get_member(message)),
        arguments: Marshal.values(of: message)
    )
    var reply: OpaquePointer?
    switch handler(call) {
    case .success(let values):
        reply = dbus_message_new_method_return(message)
        if let reply {
            var iterator = DBusMessageIter()
            dbus_message_iter_init_append(reply, &iterator)
            do {
                for value in values { try Marshal.append(value, to: &iterator, call: "\(path) \(call.member)") }
            } catch {
                dbus_message_unref(reply)
                return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
            }
        }
    case .failure(let error):
        reply = dbus_message_new_error(message, error.name, error.message)
    }
    if let reply {
        _ = dbus_connection_send(connection, reply, nil)
        dbus_message_unref(reply)
    }
    return DBUS_HANDLER_RESULT_HANDLED
}

extension DBusConnection {
    /// Answers method calls to `path` with `handler`, on the thread that dispatches (`receive`,
    /// `callDispatching`), until `unexport`.
    public func export(_ path: String, _ handler: @escaping DBusMethodHandler) {
        exports.handlers.withLock { $0[path] = handler }
    }

    public func unexport(_ path: String) {
        _ = exports.handlers.withLock { $0.removeValue(forKey: path) }
    }

    /// Calls a method and waits for its reply while answering calls to this connection's objects:
    /// BlueZ's `RegisterAdvertisement` asks the caller's advertisement for its properties before it
    /// replies, which a blocking call would leave unanswered until both time out.
    public func callDispatching(
        destination: String,
        path: String,
        interface: String,
        method: String,
        _ arguments: [DBusValue] = [],
        timeout: Duration = .seconds(10)
    ) throws -> [DBusValue] {
        let (message, what) = try Self.methodCall(destination, path, interface, method, arguments)
        defer { dbus_message_unref(message) }
        let milliseconds = Self.milliseconds(timeout)
        var pending: OpaquePointer?
        guard dbus_connection_send_with_reply(handle, message, &pending, milliseconds) != 0, let pending else {
            throw DBusError(name: "org.freedesktop.DBus.Error.Disconnected", message: "not connected", call: what)
        }
        defer { dbus_pending_call_unref(pending) }
        while dbus_pending_call_get_completed(pending) == 0 {
            guard dbus_connection_read_write_dispatch(handle, 50) != 0 else {
                throw DBusError(
                    name: "org.freedesktop.DBus.Error.Disconnected",
                    message: "the bus went away",
                    call: what
                )
            }
        }
        guard let reply = dbus_pending_call_steal_reply(pending) else {
            throw DBusError(name: "org.freedesktop.DBus.Error.NoReply", message: "no reply", call: what)
        }
        defer { dbus_message_unref(reply) }
        var error = CTracerDBus.DBusError()
        dbus_error_init(&error)
        if dbus_set_error_from_message(&error, reply) != 0 { throw Self.take(&error, call: what) }
        return Marshal.values(of: reply)
    }
}

import CTracerDBus

/// libdbus's own marshalling, beside tracer's (`Wire`): what the tests hold `Wire` to, and how a
/// test emits a signal.
extension Marshal {
    /// A signal's message as libdbus writes it on the wire.
    package static func signalBytes(
        path: String,
        interface: String,
        member: String,
        _ arguments: [DBusValue]
    ) throws
        -> [UInt8]
    {
        let message = try signal(path: path, interface: interface, member: member, arguments)
        defer { dbus_message_unref(message) }
        dbus_message_set_serial(message, 7)
        var bytes: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        guard dbus_message_marshal(message, &bytes, &length) != 0, let bytes else {
            throw DBusError(name: "org.freedesktop.DBus.Error.NoMemory", message: "cannot marshal")
        }
        defer { dbus_free(bytes) }
        return UnsafeRawBufferPointer(start: bytes, count: Int(length)).map { $0 }
    }

    /// A message's arguments as libdbus reads them from its wire bytes; nil when libdbus finds
    /// the bytes are not a valid message.
    package static func libdbusValues(_ bytes: [UInt8]) -> [DBusValue]? {
        var error = CTracerDBus.DBusError()
        dbus_error_init(&error)
        let message = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { dbus_message_demarshal($0.baseAddress, Int32($0.count), &error) }
        }
        defer { dbus_error_free(&error) }
        guard let message else { return nil }
        defer { dbus_message_unref(message) }
        return values(of: message)
    }

    static func signal(
        path: String,
        interface: String,
        member: String,
        _ arguments: [DBusValue]
    ) throws
        -> OpaquePointer
    {
        let what = "signal \(path) \(interface).\(member)"
        guard dbus_validate_path(path, nil) != 0, let message = dbus_message_new_signal(path, interface, member) else {
            throw DBusError(
                name: "org.freedesktop.DBus.Error.InvalidArgs",
                message: "cannot make the signal",
                call: what
            )
        }
        var iterator = DBusMessageIter()
        dbus_message_iter_init_append(message, &iterator)
        do {
            for argument in arguments { try append(argument, to: &iterator, call: what) }
        } catch {
            dbus_message_unref(message)
            throw error
        }
        return message
    }
}

extension DBusConnection {
    /// Sends a signal from this connection (and waits until it is written).
    package func emit(path: String, interface: String, member: String, _ arguments: [DBusValue]) throws {
        let message = try Marshal.signal(path: path, interface: interface, member: member, arguments)
        defer { dbus_message_unref(message) }
        guard dbus_connection_send(handle, message, nil) != 0 else {
            throw DBusError(name: "org.freedesktop.DBus.Error.NoMemory", message: "cannot send", call: member)
        }
        dbus_connection_flush(handle)
    }
}

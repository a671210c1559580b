import CTracerDBus
import Foundation
import Synchronization

/// A signal that arrived on a connection.
public struct DBusSignal: Sendable, Equatable {
    /// The sender's unique name (`:1.7`); the bus itself is `org.freedesktop.DBus`.
    public var sender: String
    public var path: String
    public var interface: String
    public var member: String
    public var arguments: [DBusValue]

    public init(sender: String, path: String, interface: String, member: String, arguments: [DBusValue]) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }

    /// The signal libdbus delivers to itself when the connection is lost.
    public var isDisconnected: Bool {
        path == "/org/freedesktop/DBus/Local" && member == "Disconnected"
    }
}

/// Signals the dispatch filter collected, waiting for `receive`.
/// Unchecked: `receive` waits on a condition variable (NSCondition), which `Mutex` has not.
final class Inbox: @unchecked Sendable {
    private let lock = NSLock()
    private var signals: [DBusSignal] = []

    func append(_ signal: DBusSignal) {
        lock.lock()
        signals.append(signal)
        lock.unlock()
    }

    func take() -> [DBusSignal] {
        lock.lock()
        defer { lock.unlock() }
        let out = signals
        signals.removeAll(keepingCapacity: true)
        return out
    }
}

/// libdbus's filter: keeps signals, leaves everything else to libdbus (which answers method
/// calls to this connection with UnknownMethod).
let inboxFilter: DBusHandleMessageFunction = { _, message, userData in
    guard let message, let userData,
        dbus_message_get_type(message) == CTracerDBus_MESSAGE_TYPE_SIGNAL
    else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    let inbox = Unmanaged<Inbox>.fromOpaque(userData).takeUnretainedValue()
    func text(_ p: UnsafePointer<CChar>?) -> String { p.map { String(cString: $0) } ?? "" }
    inbox.append(
        DBusSignal(
            sender: text(dbus_message_get_sender(message)),
            path: text(dbus_message_get_path(message)),
            interface: text(dbus_message_get_interface(message)),
            member: text(dbus_message_get_member(message)),
            arguments: Marshal.values(of: message)
        )
    )
    return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
}

extension DBusConnection {
    /// Asks the bus to route signals matching `rule` here, e.g.
    /// `type='signal',sender='org.bluez',interface='org.freedesktop.DBus.Properties'`.
    public func addMatch(_ rule: String) throws {
        var error = CTracerDBus.DBusError()
        dbus_error_init(&error)
        dbus_bus_add_match(handle, rule, &error)
        if dbus_error_is_set(&error) != 0 { throw Self.take(&error, call: "AddMatch \(rule)") }
    }

    /// Signals that have arrived, waiting up to `timeout` when none has yet; nil once the
    /// connection is lost and everything before the loss has been taken.
    ///
    /// Messages are read and dispatched on the calling thread: replies to calls made from other
    /// threads still reach their callers, so one thread may receive while others call.
    public func receive(timeout: Duration) -> [DBusSignal]? {
        dispatchAll()
        var signals = inbox.take()
        if signals.isEmpty {
            _ = dbus_connection_read_write(handle, Self.milliseconds(timeout))
            dispatchAll()
            signals = inbox.take()
        }
        if let lost = signals.firstIndex(where: \.isDisconnected) {
            signals.removeSubrange(lost...)
            return signals.isEmpty ? nil : signals
        }
        if signals.isEmpty, !isConnected { return nil }
        return signals
    }

    private func dispatchAll() {
        while dbus_connection_dispatch(handle) == DBUS_DISPATCH_DATA_REMAINS {}
    }

    /// Signals matching `rules`, read on a thread of their own and handed to Swift concurrency.
    /// The stream ends when the connection is lost or the consumer stops.
    public func signals(matching rules: [String]) throws -> AsyncStream<DBusSignal> {
        for rule in rules { try addMatch(rule) }
        let (stream, continuation) = AsyncStream<DBusSignal>.makeStream()
        let stopped = Flag()
        continuation.onTermination = { _ in stopped.set() }
        let thread = Thread { [self] in
            while !stopped.isSet {
                guard let signals = receive(timeout: .milliseconds(50)) else { break }
                for signal in signals { continuation.yield(signal) }
            }
            continuation.finish()
        }
        thread.name = "tracer.dbus"
        thread.start()
        return stream
    }
}

/// A one-way flag shared between threads.
public final class Flag: Sendable {
    private let value = Atomic(false)
    public init() {}
    public func set() { value.store(true, ordering: .releasing) }
    public var isSet: Bool { value.load(ordering: .acquiring) }
}

import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A bus connection of its own that only receives signals, read from the socket by tracer's own
/// wire code (`Wire`) rather than libdbus: the BlueZ session's advert stream.
///
/// Why not libdbus here: a kiosk hears each badge up to ten times a second, and libdbus's read,
/// dispatch and validating iterators were a third of the daemon's CPU per advert; libdbus alone
/// already took 0.77 × what bleak's whole scanner takes (BENCHMARKS.md, "Beside bleak"). Calls
/// (BlueZ's methods, the advertiser's exported objects) stay on `DBusConnection`.
///
/// It authenticates as its user (EXTERNAL), says Hello, adds its match rules and waits for
/// each to be accepted, then reads many messages a system call. Method calls addressed to it
/// are not answered (nothing calls it; libdbus would answer UnknownMethod).
public final class DBusSignalStream: @unchecked Sendable {
    private let socket: Int32
    private var buffer: [UInt8] = []
    private var consumed = 0
    /// Signals that came while a call waited for its reply, as their bytes, for `receive`.
    private var pending: [[UInt8]] = []
    private var lost = false
    private var chunk = [UInt8](repeating: 0, count: 64 << 10)
    private let strings = WireStrings()
    /// This connection's unique name on the bus (`:1.42`).
    public private(set) var uniqueName = ""

    /// Connects to the bus at `address` (`unix:path=…` or `unix:abstract=…`, as D-Bus writes
    /// them; the first that connects of several separated by `;`) and asks it for the signals
    /// `rules` match.
    public init(address: String, rules: [String], timeout: Duration = .seconds(5)) throws {
        socket = try Self.connect(address)
        do {
            let deadline = ContinuousClock.now + timeout
            try authenticate(deadline: deadline)
            var serial: UInt32 = 1
            let hello = try call(
                serial: serial,
                "org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus",
                "Hello",
                [],
                deadline: deadline
            )
            uniqueName = hello.first?.string ?? ""
            for rule in rules {
                serial += 1
                _ = try call(
                    serial: serial,
                    "org.freedesktop.DBus",
                    "/org/freedesktop/DBus",
                    "org.freedesktop.DBus",
                    "AddMatch",
                    [rule],
                    deadline: deadline
                )
            }
        } catch {
            close(socket)
            throw error
        }
    }

    /// The system bus (`DBUS_SYSTEM_BUS_ADDRESS`, else the standard socket).
    public static func system(rules: [String]) throws -> DBusSignalStream {
        let address = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"].flatMap { $0.isEmpty ? nil : $0 }
        return try DBusSignalStream(address: address ?? "unix:path=/run/dbus/system_bus_socket", rules: rules)
    }

    deinit { close(socket) }

    /// Signals that have arrived, waiting up to `timeout` when none has yet; nil once the
    /// connection is lost (or the bus sent what is not D-Bus) and everything before has been taken.
    public func receive(timeout: Duration) -> [DBusSignal]? {
        var signals: [DBusSignal] = []
        let open = receive(timeout: timeout) { signals.append($0) }
        return open || !signals.isEmpty ? signals : nil
    }

    /// Hands each signal that has arrived to `each`, waiting up to `timeout` when none has yet;
    /// false once the connection is lost and everything before has been handed over.
    ///
    /// One by one, as they are read, rather than in an array: a round's array of a few dozen
    /// signals was a large allocation each round, and glibc consolidated its small free chunks
    /// for it every time (5% of the daemon's time).
    public func receive(timeout: Duration, _ each: (DBusSignal) -> Void) -> Bool {
        receive(timeout: timeout) { (signal: WireSignal) in each(try signal.signal()) }
    }

    /// `receive`, each signal as it was read (`WireSignal`): a hot path reads the bodies it
    /// knows itself. An error `each` throws is a malformed message: the stream ends, as it does
    /// for one the stream cannot read.
    package func receive(timeout: Duration, wire each: (WireSignal) throws -> Void) -> Bool {
        if !pending.isEmpty {
            let messages = pending
            pending = []
            do {
                for message in messages {
                    try message.withUnsafeBytes { try each(WireSignal($0, strings: strings)) }
                }
            } catch {
                lost = true
            }
            return !lost
        }
        if !lost, wait(until: ContinuousClock.now + timeout) { readAvailable(each) }
        return !lost
    }

    // MARK: - The socket

    private static func connect(_ address: String) throws -> Int32 {
        var failures: [String] = []
        for entry in address.split(separator: ";") {
            guard entry.hasPrefix("unix:") else {
                failures.append("\(entry): tracer reads signals over a Unix socket only")
                continue
            }
            var path: String?
            var abstract = false
            for pair in entry.dropFirst(5).split(separator: ",") {
                let kv = pair.split(separator: "=", maxSplits: 1).map(String.init)
                guard kv.count == 2 else { continue }
                if kv[0] == "path" { path = Self.unescape(kv[1]) }
                if kv[0] == "abstract" { (path, abstract) = (Self.unescape(kv[1]), true) }
            }
            guard let path else {
                failures.append("\(entry): no path")
                continue
            }
            let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else {
                throw DBusError(
                    name: "org.freedesktop.DBus.Error.NoServer",
                    message: String(cString: strerror(errno)),
                    call: "connect \(address)"
                )
            }
            var socketAddress = sockaddr_un()
            socketAddress.sun_family = sa_family_t(AF_UNIX)
            let bytes = (abstract ? [0] : []) + Array(path.utf8)
            let capacity = MemoryLayout.size(ofValue: socketAddress.sun_path)
            guard bytes.count < capacity else {
                close(fd)
                failures.append("\(entry): the path is too long")
                continue
            }
            withUnsafeMutableBytes(of: &socketAddress.sun_path) { raw in
                for (k, b) in bytes.enumerated() { raw[k] = b }
            }
            let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
            let connected = withUnsafePointer(to: &socketAddress) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
            }
            if connected == 0 { return fd }
            failures.append("\(entry): \(String(cString: strerror(errno)))")
            close(fd)
        }
        throw DBusError(
            name: "org.freedesktop.DBus.Error.NoServer",
            message: failures.joined(separator: "; "),
            call: "connect \(address)"
        )
    }

    /// `%xx` escapes in an address's values.
    private static func unescape(_ value: String) -> String {
        var out: [UInt8] = []
        var bytes = Array(value.utf8)[...]
        while let b = bytes.popFirst() {
            if b == UInt8(ascii: "%"), bytes.count >= 2,
                let v = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16)
            {
                out.append(v)
                bytes = bytes.dropFirst(2)
            } else {
                out.append(b)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes {
                Glibc.send(socket, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL))
            }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw lostError("send") }
            sent += n
        }
    }

    private func lostError(_ what: String) -> DBusError {
        DBusError(name: "org.freedesktop.DBus.Error.Disconnected", message: "the bus closed the connection", call: what)
    }

    /// Waits until the socket is readable (true) or the deadline passes.
    private func wait(until deadline: ContinuousClock.Instant) -> Bool {
        while true {
            let milliseconds = max(0, DBusConnection.milliseconds(deadline - ContinuousClock.now))
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, milliseconds)
            if ready < 0, errno == EINTR { continue }
            return ready > 0
        }
    }

    /// Reads what the socket holds and parses every whole message in it; signals go to `each`.
    private func readAvailable(_ each: (WireSignal) throws -> Void) {
        let n = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
        if n < 0, errno == EINTR || errno == EAGAIN { return }
        guard n > 0 else {
            lost = true
            return
        }
        if consumed == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            consumed = 0
        }
        buffer.append(contentsOf: chunk[0..<n])
        do {
            try parseMessages(each)
        } catch {
            lost = true  // the bus is not speaking D-Bus: the session reconnects
        }
        if consumed > 0, consumed >= buffer.count / 2 {
            buffer.removeSubrange(0..<consumed)
            consumed = 0
        }
    }

    private var replies: [UInt32: Result<[DBusValue], DBusError>] = [:]

    private func parseMessages(_ each: (WireSignal) throws -> Void) throws {
        try buffer.withUnsafeBytes { all in
            while true {
                let rest = UnsafeRawBufferPointer(rebasing: all[consumed...])
                guard let length = try Wire.length(rest), length <= rest.count else { return }
                let message = UnsafeRawBufferPointer(rebasing: rest[0..<length])
                let header = try Wire.header(message, strings: strings)
                switch Wire.MessageType(rawValue: header.type) {
                case .signal:
                    try each(WireSignal(header: header, message: message, strings: strings))
                case .methodReturn:
                    if let serial = header.replySerial { replies[serial] = .success(try Wire.body(message, header)) }
                case .error:
                    if let serial = header.replySerial {
                        let text = (try? Wire.body(message, header))?.first?.string ?? ""
                        replies[serial] = .failure(DBusError(name: header.errorName, message: text))
                    }
                default:
                    break
                }
                consumed += length
            }
        }
    }

    // MARK: - Setting up

    private func authenticate(deadline: ContinuousClock.Instant) throws {
        let uid = String(getuid())
        let hex = uid.utf8.map { String(format: "%02x", $0) }.joined()
        try send([0] + Array("AUTH EXTERNAL \(hex)\r\n".utf8))
        var line: [UInt8] = []
        while !(line.count >= 2 && line.suffix(2) == [13, 10]) {
            guard line.count < 4096, wait(until: deadline) else { throw authError("no answer to AUTH") }
            var byte: UInt8 = 0
            let n = recv(socket, &byte, 1, 0)
            if n < 0, errno == EINTR { continue }
            guard n == 1 else { throw lostError("AUTH EXTERNAL") }
            line.append(byte)
        }
        let answer = String(decoding: line.dropLast(2), as: UTF8.self)
        guard answer.hasPrefix("OK ") else { throw authError("the bus answered '\(answer)'") }
        try send(Array("BEGIN\r\n".utf8))
    }

    private func authError(_ why: String) -> DBusError {
        DBusError(name: "org.freedesktop.DBus.Error.AuthFailed", message: why, call: "AUTH EXTERNAL")
    }

    /// Sends a call and reads until its reply; signals read meanwhile are kept for `receive`.
    private func call(
        serial: UInt32,
        _ destination: String,
        _ path: String,
        _ interface: String,
        _ member: String,
        _ strings: [String],
        deadline: ContinuousClock.Instant
    ) throws -> [DBusValue] {
        let what = "\(destination) \(path) \(interface).\(member)" + (strings.first.map { " \($0)" } ?? "")
        try send(
            Wire.methodCall(
                serial: serial,
                destination: destination,
                path: path,
                interface: interface,
                member: member,
                strings: strings
            )
        )
        while replies[serial] == nil {
            guard !lost else { throw lostError(what) }
            guard wait(until: deadline) else {
                throw DBusError(name: "org.freedesktop.DBus.Error.NoReply", message: "no reply in time", call: what)
            }
            readAvailable { pending.append(Array($0.message)) }  // signals before the reply wait for `receive`
        }
        switch replies.removeValue(forKey: serial)! {
        case .success(let values): return values
        case .failure(var error):
            error.call = what
            throw error
        }
    }
}

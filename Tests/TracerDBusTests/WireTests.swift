import Foundation
import Testing
import TracerDBus
import TracerTesting

#if canImport(Glibc)
import Glibc
#endif

/// tracer's own D-Bus wire code (`Wire`, `DBusSignalStream`) held to libdbus's.
@Suite struct WireTests {
    /// Every type tracer reads, in the shapes BlueZ sends them (and the awkward ones: empty
    /// arrays whose elements align to 8, variants of variants, structures in arrays).
    static let values: [DBusValue] = [
        .string("org.bluez.Device1"),
        .properties([
            "RSSI": .int16(-61), "TxPower": .int16(-59), "Paired": .bool(false),
            "ManufacturerData": .dictionary(
                key: "q",
                value: "v",
                [.init(.uint16(0x004C), .variant(.array(element: "y", (0..<23).map { .byte(UInt8($0)) })))]
            ),
        ]),
        .array(element: "s", [.string("Connected"), .string("")]),
        .byte(255), .bool(true), .int16(Int16.min), .uint16(65535), .int32(-2), .uint32(4_000_000_000),
        .int64(Int64.min), .uint64(UInt64.max), .double(-0.5), .objectPath("/org/bluez/hci0/dev_C3_11_9A_22_07_5E"),
        .signature("a{oa{sa{sv}}}"), .string("kiosk-lab é"),
        .array(element: "(xs)", []), .array(element: "y", []),
        .array(element: "(ys)", [.structure([.byte(1), .string("a")]), .structure([.byte(2), .string("bc")])]),
        .variant(.variant(.uint64(1))),
        .dictionary(
            key: "o",
            value: "a{sa{sv}}",
            [
                .init(
                    .objectPath("/org/bluez/hci0"),
                    .dictionary(
                        key: "s",
                        value: "a{sv}",
                        [.init(.string("org.bluez.Adapter1"), .properties(["Powered": .bool(true)]))]
                    )
                )
            ]
        ),
    ]

    @Test func readsWhatLibdbusWrites() throws {
        for count in 1...Self.values.count {
            let arguments = Array(Self.values.prefix(count))
            let bytes = try Marshal.signalBytes(
                path: "/org/bluez/hci0/dev_C3_11_9A_22_07_5E",
                interface: "org.freedesktop.DBus.Properties",
                member: "PropertiesChanged",
                arguments
            )
            try bytes.withUnsafeBytes { raw in
                #expect(try Wire.length(raw) == bytes.count)
                let header = try Wire.header(raw)
                #expect(header.type == Wire.MessageType.signal.rawValue)
                #expect(header.serial == 7)
                #expect(header.path == "/org/bluez/hci0/dev_C3_11_9A_22_07_5E")
                #expect(header.interface == "org.freedesktop.DBus.Properties")
                #expect(header.member == "PropertiesChanged")
                let read = try Wire.body(raw, header)
                #expect(read == arguments)
                #expect(read == Marshal.libdbusValues(bytes))
            }
        }
    }

    /// A big-endian message (D-Bus allows either byte order; a bus relays the sender's), made
    /// by hand and accepted by libdbus, reads as libdbus reads it.
    @Test func readsBigEndianMessages() throws {
        var w = TestWriter()
        w.bytes = [UInt8(ascii: "B"), 4, 0, 1]
        w.u32(0)
        w.u32(9)
        w.u32(0)
        w.field(1, "o", "/org/bluez/hci0/dev_AA")
        w.field(2, "s", "org.freedesktop.DBus.Properties")
        w.field(3, "s", "PropertiesChanged")
        w.field(8, "g", "sa{sv}nt")
        w.set(UInt32(w.bytes.count - 16), at: 12)
        w.align(8)
        let body = w.bytes.count
        w.string("org.bluez.Device1")
        w.align(4)
        let lengthAt = w.bytes.count
        w.u32(0)  // the dictionary's length, set below
        w.align(8)
        let entries = w.bytes.count
        w.string("RSSI")
        w.signature("n")
        w.align(2)
        w.bytes += [0xFF, 0xC3]  // -61
        w.align(8)
        w.string("TxPower")
        w.signature("q")
        w.align(2)
        w.bytes += [0x01, 0x02]
        w.set(UInt32(w.bytes.count - entries), at: lengthAt)
        w.align(2)
        w.bytes += [0x80, 0x00]  // Int16.min
        w.align(8)
        w.bytes += [0, 0, 0, 0, 0, 0, 0x01, 0x00]  // 256
        w.set(UInt32(w.bytes.count - body), at: 4)
        let expected: [DBusValue] = [
            .string("org.bluez.Device1"),
            .dictionary(
                key: "s",
                value: "v",
                [.init(.string("RSSI"), .variant(.int16(-61))), .init(.string("TxPower"), .variant(.uint16(0x0102)))]
            ),
            .int16(Int16.min), .uint64(256),
        ]
        #expect(Marshal.libdbusValues(w.bytes) == expected)
        try w.bytes.withUnsafeBytes { raw in
            let header = try Wire.header(raw)
            #expect(!header.littleEndian && header.path == "/org/bluez/hci0/dev_AA")
            #expect(try Wire.body(raw, header) == expected)
        }
    }

    /// Cut short or with bytes changed at random, a message is read or refused, never a crash:
    /// and what is read from a message libdbus refuses is never taken for the original.
    @Test func malformedMessagesAreRefusedNotCrashedOn() throws {
        let bytes = try Marshal.signalBytes(
            path: "/org/bluez/hci0/dev_C3_11_9A_22_07_5E",
            interface: "org.freedesktop.DBus.Properties",
            member: "PropertiesChanged",
            Self.values
        )
        for cut in 0..<bytes.count {
            let short = Array(bytes.prefix(cut))
            let length = try? short.withUnsafeBytes { try Wire.length($0) }
            #expect(length.flatMap { $0 }.map { $0 > cut } ?? true, "a message cut at \(cut) taken for whole")
        }
        var generator = SystemRandomNumberGenerator()
        var refused = 0
        for _ in 0..<3000 {
            var changed = bytes
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                changed[Int.random(in: 0..<changed.count, using: &generator)] = UInt8.random(
                    in: 0...255,
                    using: &generator
                )
            }
            let read: [DBusValue]? = changed.withUnsafeBytes { raw in
                guard let length = try? Wire.length(raw), length == raw.count else { return nil }
                guard let header = try? Wire.header(raw) else { return nil }
                return try? Wire.body(raw, header)
            }
            if read == nil { refused += 1 }
        }
        #expect(refused > 0)
    }

    /// The stream on a private bus: its rules are the bus's, signals come whole and in order
    /// (many a read), a rule the bus refuses says which, and a bus gone ends it.
    @Test func streamReceivesWhatItsRulesMatch() throws {
        let bus = try PrivateBus()
        let rule = "type='signal',interface='org.tracer.Test'"
        let stream = try DBusSignalStream(address: bus.address, rules: [rule])
        #expect(stream.uniqueName.hasPrefix(":"))
        let sender = try bus.connect()
        let sent = (0..<500).map { k in
            [DBusValue.string("org.bluez.Device1"), .properties(["RSSI": .int16(Int16(-40 - k % 50))])]
        }
        for arguments in sent {
            try sender.emit(path: "/org/bluez/hci0/dev_AA", interface: "org.tracer.Test", member: "Advert", arguments)
        }
        try sender.emit(path: "/x", interface: "org.tracer.Other", member: "NotMatched", [])
        var received: [DBusSignal] = []
        let deadline = ContinuousClock.now + .seconds(20)
        while received.count < sent.count, ContinuousClock.now < deadline {
            received += (stream.receive(timeout: .milliseconds(100)) ?? []).filter { $0.interface == "org.tracer.Test" }
        }
        #expect(received.map(\.arguments) == sent)
        #expect(received.allSatisfy { $0.sender == sender.uniqueName && $0.path == "/org/bluez/hci0/dev_AA" })

        #expect {
            try DBusSignalStream(address: bus.address, rules: ["type='signal',nonsense"])
        } throws: { error in
            (error as? DBusError)?.name == "org.freedesktop.DBus.Error.MatchRuleInvalid"
                && "\(error)".contains("nonsense")
        }
        #expect(throws: DBusError.self) { try DBusSignalStream(address: "unix:path=/nonexistent/bus", rules: []) }
        #expect(throws: DBusError.self) { try DBusSignalStream(address: "tcp:host=localhost,port=1", rules: []) }

        try bus.restart()
        var ended = false
        let until = ContinuousClock.now + .seconds(20)
        while !ended, ContinuousClock.now < until {
            ended = stream.receive(timeout: .milliseconds(100)) == nil
        }
        #expect(ended)
    }

    /// Messages cut across reads anywhere (here a byte at a time, and in pieces of 7) are put
    /// back together; a bus that then sends what is not D-Bus ends the stream, never the process.
    @Test(arguments: [1, 7])
    func messagesCutAcrossReadsAndGarbageAfterThem(pieces: Int) throws {
        let payload = try (0..<20).flatMap(Self.rssiSignal) + Self.notDBus
        let bus = try FakeBus(sending: payload, pieces: pieces, then: false)
        let stream = try DBusSignalStream(address: bus.address, rules: ["type='signal'"])
        #expect(stream.uniqueName == ":1.1")
        let (received, open) = Self.untilTheEnd(stream)
        #expect(!open, "the stream went on after a message that is not D-Bus")
        #expect(received.map(\.arguments) == (0..<20).map(Self.rssiArguments))
        #expect(received.map(\.path) == (0..<20).map { "/org/bluez/hci0/dev_\($0)" })
    }

    /// Signals that arrive while the stream waits for a call's answer (here, before its match
    /// rule's) are kept and handed over first, in order, read as any other.
    @Test func signalsBeforeACallsAnswerComeFirst() throws {
        let bus = try FakeBus(
            sending: try Self.rssiSignal(2) + Self.notDBus,
            pieces: 64,
            then: false,
            early: try Self.rssiSignal(0) + Self.rssiSignal(1)
        )
        let stream = try DBusSignalStream(address: bus.address, rules: ["type='signal'"])
        let (received, open) = Self.untilTheEnd(stream)
        #expect(!open, "the stream went on after a message that is not D-Bus")
        #expect(received.map(\.path) == (0..<3).map { "/org/bluez/hci0/dev_\($0)" })
        #expect(received.map { $0.arguments.last?.dictionary?["RSSI"]?.integer } == [-50, -51, -52])
    }

    /// Device `k`'s RSSI changed, as BlueZ says it.
    static func rssiArguments(_ k: Int) -> [DBusValue] {
        [.string("org.bluez.Device1"), .properties(["RSSI": .int16(Int16(-50 - k))])]
    }

    static func rssiSignal(_ k: Int) throws -> [UInt8] {
        try Marshal.signalBytes(
            path: "/org/bluez/hci0/dev_\(k)",
            interface: "org.freedesktop.DBus.Properties",
            member: "PropertiesChanged",
            rssiArguments(k)
        )
    }

    /// Bytes a bus that is not speaking D-Bus might send.
    static let notDBus = Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8)

    /// Every signal the stream hands over until it ends (or 30 s pass), and whether it is still open.
    static func untilTheEnd(_ stream: DBusSignalStream) -> (received: [DBusSignal], open: Bool) {
        var received: [DBusSignal] = []
        var open = true
        let deadline = ContinuousClock.now + .seconds(30)
        while open, ContinuousClock.now < deadline {
            open = stream.receive(timeout: .milliseconds(100)) { received.append($0) }
        }
        return (received, open)
    }

    /// Shared strings are the strings read, whichever shared slot they land in.
    @Test func sharedStringsAreTheStringsRead() {
        let strings = WireStrings()
        let names = (0..<3000).map {
            "/org/bluez/hci0/dev_\($0 * 7919 % 4093)_" + String(repeating: "é", count: $0 % 5)
        }
        for _ in 0..<2 {
            for name in names.shuffled() {
                let read = Array(name.utf8).withUnsafeBytes { strings.string($0) }
                #expect(read == name)
            }
        }
    }
}

/// Bytes of messages the tests write by hand, in either byte order.
struct TestWriter {
    var little = false
    var bytes: [UInt8] = []
    mutating func align(_ n: Int) { while bytes.count % n != 0 { bytes.append(0) } }
    mutating func u32(_ v: UInt32) {
        align(4)
        withUnsafeBytes(of: little ? v.littleEndian : v.bigEndian) { bytes.append(contentsOf: $0) }
    }
    mutating func set(_ v: UInt32, at offset: Int) {
        withUnsafeBytes(of: little ? v.littleEndian : v.bigEndian) { for k in 0..<4 { bytes[offset + k] = $0[k] } }
    }
    mutating func string(_ s: String) {
        u32(UInt32(s.utf8.count))
        bytes += Array(s.utf8) + [0]
    }
    mutating func signature(_ s: String) { bytes += [UInt8(s.utf8.count)] + Array(s.utf8) + [0] }
    mutating func fieldU32(_ code: UInt8, _ value: UInt32) {
        align(8)
        bytes.append(code)
        signature("u")
        u32(value)
    }
    mutating func field(_ code: UInt8, _ type: String, _ value: String) {
        align(8)
        bytes.append(code)
        signature(type)
        if type == "g" { signature(value) } else { string(value) }
    }
}

/// A bus that is not dbus-daemon: it accepts one connection, answers its handshake and its
/// calls, then sends what the test gives it, in pieces of the test's size.
final class FakeBus: @unchecked Sendable {
    let directory = TemporaryDirectory("tracer-fakebus")
    let address: String
    private let listener: Int32
    private let thread: Thread

    /// `early`: sent before the answer to the AddMatch, as a bus may route a signal while a call waits.
    init(sending payload: [UInt8], pieces: Int, then close: Bool, early: [UInt8] = []) throws {
        let path = directory.file("bus")
        address = "unix:path=\(path)"
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var a = sockaddr_un()
        a.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &a.sun_path) { raw in for (k, b) in path.utf8.enumerated() { raw[k] = b } }
        let bound = withUnsafePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, listen(listener, 1) == 0 else {
            throw DBusError(name: "tracer.Test", message: "cannot listen")
        }
        thread = Thread {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }
            defer { if close { Glibc.close(fd) } }
            func readUntil(_ end: String) {
                var got: [UInt8] = []
                var byte: UInt8 = 0
                while recv(fd, &byte, 1, 0) == 1 {
                    got.append(byte)
                    if got.suffix(end.utf8.count).elementsEqual(end.utf8) { return }
                }
            }
            readUntil("\r\n")  // the NUL and AUTH EXTERNAL
            _ = "OK 0123456789abcdef0123456789abcdef\r\n".withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
            readUntil("BEGIN\r\n")
            // Hello (serial 1) and one AddMatch (serial 2): each answered as it comes.
            for serial: UInt32 in [1, 2] {
                var header = [UInt8](repeating: 0, count: 16)
                guard recv(fd, &header, 16, Int32(MSG_WAITALL)) == 16 else { return }
                let rest = header.withUnsafeBytes { (try? Wire.length($0)) ?? nil } ?? 16
                var skip = [UInt8](repeating: 0, count: rest - 16)
                _ = recv(fd, &skip, skip.count, Int32(MSG_WAITALL))
                if serial == 2, !early.isEmpty {
                    _ = early.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                }
                let reply = FakeBus.methodReturn(to: serial, string: serial == 1 ? ":1.1" : nil)
                _ = reply.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
            var sent = 0
            while sent < payload.count {
                let n = min(pieces, payload.count - sent)
                _ = payload.withUnsafeBytes { send(fd, $0.baseAddress! + sent, n, Int32(MSG_NOSIGNAL)) }
                sent += n
                usleep(200)
            }
            var byte: UInt8 = 0
            if !close { while recv(fd, &byte, 1, 0) > 0 {} }  // until the stream lets go
        }
        thread.start()
    }

    deinit { Glibc.close(listener) }

    static func methodReturn(to serial: UInt32, string: String?) -> [UInt8] {
        var w = TestWriter(little: true)
        w.bytes = [UInt8(ascii: "l"), 2, 0, 1]
        w.u32(0)
        w.u32(100 + serial)
        w.u32(0)
        w.fieldU32(5, serial)
        if string != nil { w.field(8, "g", "s") }
        w.set(UInt32(w.bytes.count - 16), at: 12)
        w.align(8)
        let body = w.bytes.count
        if let string { w.string(string) }
        w.set(UInt32(w.bytes.count - body), at: 4)
        return w.bytes
    }
}

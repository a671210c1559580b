import Foundation

/// D-Bus's wire format, read (both byte orders) and written (little-endian) by tracer itself:
/// the signal stream's path (`DBusSignalStream`), where libdbus's validating iterators were a
/// third of the daemon's time per advert (BENCHMARKS.md, "Beside bleak").
///
/// Reading is bounds-checked throughout: a malformed message is a `WireError`, never a crash.
package enum Wire {
    /// The specification's limit on a message's length.
    package static let maximumLength = 128 << 20
    /// How deep containers may nest (the specification allows 32 arrays and 32 structures).
    static let maximumDepth = 64

    package enum MessageType: UInt8 {
        case methodCall = 1
        case methodReturn = 2
        case error = 3
        case signal = 4
    }

    /// A message's header: its type, serial and header fields.
    package struct Header {
        package var type: UInt8 = 0
        package var flags: UInt8 = 0
        package var serial: UInt32 = 0
        package var path = ""
        package var interface = ""
        package var member = ""
        package var errorName = ""
        package var replySerial: UInt32?
        package var destination = ""
        package var sender = ""
        package var signature = ""
        /// Where the body's signature's bytes are in the message.
        var signatureAt = 0
        /// Where the body starts in the message's bytes.
        package var bodyStart = 0
        package var littleEndian = true
    }

    /// The length of the message at the start of `bytes`, once its fixed part (16 bytes) is
    /// there; nil before.
    package static func length(_ bytes: UnsafeRawBufferPointer) throws -> Int? {
        guard bytes.count >= 16 else { return nil }
        let little: Bool
        switch bytes[0] {
        case UInt8(ascii: "l"): little = true
        case UInt8(ascii: "B"): little = false
        default: throw WireError("a message starts with byte \(bytes[0]), not an endianness mark")
        }
        guard bytes[3] == 1 else { throw WireError("a message of protocol version \(bytes[3])") }
        let body = Int(WireReader.load(UInt32.self, bytes, 4, little))
        let fields = Int(WireReader.load(UInt32.self, bytes, 12, little))
        guard body <= maximumLength, fields <= maximumLength else { throw WireError("a message of over 128 MiB") }
        let total = ((16 + fields + 7) & ~7) + body
        guard total <= maximumLength else { throw WireError("a message of over 128 MiB") }
        return total
    }

    /// Each header field's type code, by the field's code (1 to 8).
    static let fieldTypes: [UInt8] = [0] + "osssussg".utf8.map { $0 }

    /// The header of one whole message (`length` bytes).
    package static func header(_ message: UnsafeRawBufferPointer, strings: WireStrings? = nil) throws -> Header {
        var header = Header()
        header.littleEndian = message[0] == UInt8(ascii: "l")
        header.type = message[1]
        header.flags = message[2]
        var reader = WireReader(message, offset: 8, littleEndian: header.littleEndian, strings: strings)
        header.serial = try reader.u32()
        let fieldsEnd = try reader.arrayEnd(alignment: 8)
        while reader.offset < fieldsEnd {
            try reader.align(8)
            let code = try reader.u8()
            let signature = try reader.signatureBytes()
            // The fields every signal has, of the type the specification gives them, read
            // without a value made of them (a signal's header was 7% of the daemon's time).
            if signature.count == 1, (1...8).contains(code), signature[0] == Self.fieldTypes[Int(code)] {
                switch code {
                case 1: header.path = try reader.string()
                case 2: header.interface = try reader.string()
                case 3: header.member = try reader.string()
                case 4: header.errorName = try reader.string()
                case 5: header.replySerial = try reader.u32()
                case 6: header.destination = try reader.string()
                case 7: header.sender = try reader.string()
                default:
                    header.signature = try reader.signature()
                    header.signatureAt = reader.offset - header.signature.utf8.count - 1
                }
                continue
            }
            var index = 0
            let value = try reader.value(signature, &index, depth: 1)
            guard index == signature.count else {
                throw WireError("a header field's variant holds more than one value")
            }
            // A known field of another type is malformed (9, file descriptors, tracer never
            // takes); fields a later version adds are skipped.
            if (1...9).contains(code) { throw WireError("header field \(code) holds a \(value.signature)") }
        }
        guard reader.offset == fieldsEnd else { throw WireError("the header fields overrun their array") }
        try reader.align(8)
        header.bodyStart = reader.offset
        guard header.serial != 0 else { throw WireError("a message with serial 0") }
        return header
    }

    /// Every value of a message's body, as its signature says.
    package static func body(
        _ message: UnsafeRawBufferPointer,
        _ header: Header,
        strings: WireStrings? = nil
    ) throws
        -> [DBusValue]
    {
        var reader = WireReader(message, offset: header.bodyStart, littleEndian: header.littleEndian, strings: strings)
        let at = header.signatureAt
        let signature = UnsafeRawBufferPointer(rebasing: message[at..<at + header.signature.utf8.count])
        var index = 0
        var values: [DBusValue] = []
        values.reserveCapacity(4)
        while index < signature.count {
            values.append(try reader.value(signature, &index, depth: 0))
        }
        guard reader.offset == message.count else { throw WireError("the body is longer than its signature says") }
        return values
    }

    /// A method call of string arguments, little-endian (Hello and AddMatch are all the signal
    /// stream sends).
    package static func methodCall(
        serial: UInt32,
        destination: String,
        path: String,
        interface: String,
        member: String,
        strings: [String]
    ) -> [UInt8] {
        var w = WireWriter()
        w.bytes = [UInt8(ascii: "l"), MessageType.methodCall.rawValue, 0, 1]
        w.u32(0)  // the body's length, set below
        w.u32(serial)
        w.u32(0)  // the header fields' length, set below
        func field(_ code: UInt8, _ type: Character, _ text: String) {
            w.align(8)
            w.bytes.append(code)
            w.signature(String(type))
            if type == "g" { w.signature(text) } else { w.string(text) }
        }
        field(1, "o", path)
        field(2, "s", interface)
        field(3, "s", member)
        field(6, "s", destination)
        if !strings.isEmpty { field(8, "g", String(repeating: "s", count: strings.count)) }
        w.set(UInt32(w.bytes.count - 16), at: 12)
        w.align(8)
        let bodyStart = w.bytes.count
        for s in strings { w.string(s) }
        w.set(UInt32(w.bytes.count - bodyStart), at: 4)
        return w.bytes
    }
}

/// One signal as it was read, its body not yet made values: a hot path reads the body itself
/// (`body()`), anything else asks for `arguments()`, the values `Wire.body` gives. Its bytes are
/// the stream's buffer: valid only while the signal is being handed over, never kept.
package struct WireSignal {
    package let header: Wire.Header
    package let message: UnsafeRawBufferPointer
    let strings: WireStrings?

    init(header: Wire.Header, message: UnsafeRawBufferPointer, strings: WireStrings?) {
        self.header = header
        self.message = message
        self.strings = strings
    }

    /// One whole message's bytes, its header read.
    package init(_ message: UnsafeRawBufferPointer, strings: WireStrings? = nil) throws {
        self.init(header: try Wire.header(message, strings: strings), message: message, strings: strings)
    }

    /// A reader at the body's first byte.
    package func body() -> WireReader {
        WireReader(message, offset: header.bodyStart, littleEndian: header.littleEndian, strings: strings)
    }

    /// Every value of the body.
    package func arguments() throws -> [DBusValue] { try Wire.body(message, header, strings: strings) }

    /// The signal, its body made values.
    package func signal() throws -> DBusSignal {
        DBusSignal(
            sender: header.sender,
            path: header.path,
            interface: header.interface,
            member: header.member,
            arguments: try arguments()
        )
    }
}

package struct WireError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = "malformed D-Bus message: " + description }
}

/// A cursor over one message's bytes; alignment is from the message's start.
package struct WireReader {
    let bytes: UnsafeRawBufferPointer
    package var offset: Int
    let littleEndian: Bool

    let strings: WireStrings?

    package init(_ bytes: UnsafeRawBufferPointer, offset: Int, littleEndian: Bool, strings: WireStrings? = nil) {
        self.bytes = bytes
        self.offset = offset
        self.littleEndian = littleEndian
        self.strings = strings
    }

    @inline(__always)
    static func load<T: FixedWidthInteger>(_: T.Type, _ bytes: UnsafeRawBufferPointer, _ at: Int, _ little: Bool) -> T {
        let raw = bytes.loadUnaligned(fromByteOffset: at, as: T.self)
        return little ? T(littleEndian: raw) : T(bigEndian: raw)
    }

    @inline(__always)
    package mutating func align(_ n: Int) throws {
        let aligned = (offset + n - 1) & ~(n - 1)
        guard aligned <= bytes.count else { throw WireError("a value runs past the message's end") }
        offset = aligned
    }

    @inline(__always)
    mutating func fixed<T: FixedWidthInteger>(_: T.Type) throws -> T {
        let size = MemoryLayout<T>.size
        try align(size)
        guard offset + size <= bytes.count else { throw WireError("a value runs past the message's end") }
        defer { offset += size }
        return Self.load(T.self, bytes, offset, littleEndian)
    }

    package mutating func u8() throws -> UInt8 { try fixed(UInt8.self) }
    package mutating func u16() throws -> UInt16 { try fixed(UInt16.self) }
    package mutating func int16() throws -> Int16 { try fixed(Int16.self) }
    package mutating func u32() throws -> UInt32 { try fixed(UInt32.self) }

    package mutating func bool() throws -> Bool {
        let v = try u32()
        guard v <= 1 else { throw WireError("a boolean of \(v)") }
        return v == 1
    }

    /// Whether every byte of the message has been read.
    package var atEnd: Bool { offset == bytes.count }

    /// A string's bytes where they are in the message (no copy, no `String` made).
    package mutating func stringBytes() throws -> UnsafeRawBufferPointer {
        let count = Int(try u32())
        return try textBytes(count)
    }

    /// An `ay`'s bytes, copied out.
    package mutating func byteArray() throws -> [UInt8] {
        let end = try arrayEnd(alignment: 1)
        defer { offset = end }
        return Array(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]))
    }

    /// The value of `signature`, which must be one complete type (a variant's).
    package mutating func value(of signature: UnsafeRawBufferPointer, depth: Int) throws -> DBusValue {
        var i = 0
        let v = try value(signature, &i, depth: depth)
        guard i == signature.count else { throw WireError("a variant's signature holds more than one type") }
        return v
    }

    /// A string or object path: its length, its bytes, a NUL.
    package mutating func string() throws -> String {
        let count = Int(try u32())
        return try text(count)
    }

    package mutating func signature() throws -> String {
        let count = Int(try u8())
        return try text(count)
    }

    /// A signature's bytes where they are in the message (no copy).
    package mutating func signatureBytes() throws -> UnsafeRawBufferPointer {
        let count = Int(try u8())
        let raw = try textBytes(count)
        return raw
    }

    private mutating func textBytes(_ count: Int) throws -> UnsafeRawBufferPointer {
        guard count < bytes.count, offset + count < bytes.count, bytes[offset + count] == 0 else {
            throw WireError("a string runs past the message's end or lacks its NUL")
        }
        defer { offset += count + 1 }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
    }

    private mutating func text(_ count: Int) throws -> String {
        let raw = try textBytes(count)
        return strings?.string(raw) ?? String(decoding: raw, as: UTF8.self)
    }

    /// Reads an array's length and aligns to its first element; returns where it ends.
    package mutating func arrayEnd(alignment: Int) throws -> Int {
        let length = Int(try u32())
        guard length <= 64 << 20 else { throw WireError("an array of over 64 MiB") }
        try align(alignment)
        let end = offset + length
        guard end <= bytes.count else { throw WireError("an array runs past the message's end") }
        return end
    }

    /// The value of the single complete type at `sig[i]`; `i` moves past it.
    package mutating func value(_ sig: UnsafeRawBufferPointer, _ i: inout Int, depth: Int) throws -> DBusValue {
        guard depth <= Wire.maximumDepth else { throw WireError("containers nested too deep") }
        guard i < sig.count else { throw WireError("a signature ends inside a type") }
        let code = sig[i]
        i += 1
        switch code {
        case UInt8(ascii: "y"): return .byte(try u8())
        case UInt8(ascii: "b"): return .bool(try bool())
        case UInt8(ascii: "n"): return .int16(try fixed(Int16.self))
        case UInt8(ascii: "q"): return .uint16(try fixed(UInt16.self))
        case UInt8(ascii: "i"): return .int32(try fixed(Int32.self))
        case UInt8(ascii: "u"), UInt8(ascii: "h"): return .uint32(try u32())
        case UInt8(ascii: "x"): return .int64(try fixed(Int64.self))
        case UInt8(ascii: "t"): return .uint64(try fixed(UInt64.self))
        case UInt8(ascii: "d"): return .double(Double(bitPattern: try fixed(UInt64.self)))
        case UInt8(ascii: "s"): return .string(try string())
        case UInt8(ascii: "o"): return .objectPath(try string())
        case UInt8(ascii: "g"): return .signature(try signature())
        case UInt8(ascii: "v"):
            return .variant(try value(of: try signatureBytes(), depth: depth + 1))
        case UInt8(ascii: "("):
            try align(8)
            var fields: [DBusValue] = []
            while i < sig.count, sig[i] != UInt8(ascii: ")") { fields.append(try value(sig, &i, depth: depth + 1)) }
            guard i < sig.count, !fields.isEmpty else { throw WireError("a structure's signature is not closed") }
            i += 1
            return .structure(fields)
        case UInt8(ascii: "a"):
            guard i < sig.count else { throw WireError("an array's signature has no element type") }
            if sig[i] == UInt8(ascii: "{") {
                let keyAt = i + 1
                var j = keyAt
                guard j < sig.count, Self.isBasic(sig[j]) else {
                    throw WireError("a dictionary's key is not a basic type")
                }
                j += 1
                let valueAt = j
                try Self.skip(sig, &j, depth: depth + 1)
                guard j < sig.count, sig[j] == UInt8(ascii: "}") else {
                    throw WireError("a dictionary entry's signature is not closed")
                }
                let end = try arrayEnd(alignment: 8)
                var entries: [DBusValue.DictEntry] = []
                while offset < end {
                    try align(8)
                    var k = keyAt
                    let key = try value(sig, &k, depth: depth + 2)
                    var v = valueAt
                    let element = try value(sig, &v, depth: depth + 2)
                    entries.append(.init(key, element))
                }
                guard offset == end else { throw WireError("a dictionary overruns its length") }
                i = j + 1
                return .dictionary(key: text(sig, keyAt..<valueAt), value: text(sig, valueAt..<j), entries)
            }
            let elementAt = i
            var j = i
            try Self.skip(sig, &j, depth: depth + 1)
            let end = try arrayEnd(alignment: Self.alignment(sig[elementAt]))
            var elements: [DBusValue] = []
            if end > offset { elements.reserveCapacity(min(end - offset, 64)) }
            while offset < end {
                var e = elementAt
                elements.append(try value(sig, &e, depth: depth + 1))
            }
            guard offset == end else { throw WireError("an array overruns its length") }
            i = j
            return .array(element: text(sig, elementAt..<j), elements)
        default:
            throw WireError("unknown type code '\(Character(Unicode.Scalar(code)))' in a signature")
        }
    }

    /// A part of a signature, as text.
    private func text(_ sig: UnsafeRawBufferPointer, _ range: Range<Int>) -> String {
        let raw = UnsafeRawBufferPointer(rebasing: sig[range])
        return strings?.string(raw) ?? String(decoding: raw, as: UTF8.self)
    }

    static func isBasic(_ code: UInt8) -> Bool {
        switch code {
        case UInt8(ascii: "y"), UInt8(ascii: "b"), UInt8(ascii: "n"), UInt8(ascii: "q"), UInt8(ascii: "i"),
            UInt8(ascii: "u"), UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"), UInt8(ascii: "s"),
            UInt8(ascii: "o"), UInt8(ascii: "g"), UInt8(ascii: "h"):
            true
        default: false
        }
    }

    static func alignment(_ code: UInt8) -> Int {
        switch code {
        case UInt8(ascii: "n"), UInt8(ascii: "q"): 2
        case UInt8(ascii: "b"), UInt8(ascii: "i"), UInt8(ascii: "u"), UInt8(ascii: "h"), UInt8(ascii: "s"),
            UInt8(ascii: "o"), UInt8(ascii: "a"):
            4
        case UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"), UInt8(ascii: "("), UInt8(ascii: "{"): 8
        default: 1
        }
    }

    /// Moves `i` past one complete type.
    static func skip(_ sig: UnsafeRawBufferPointer, _ i: inout Int, depth: Int) throws {
        guard depth <= Wire.maximumDepth else { throw WireError("containers nested too deep") }
        guard i < sig.count else { throw WireError("a signature ends inside a type") }
        let code = sig[i]
        i += 1
        switch code {
        case UInt8(ascii: "a"):
            if i < sig.count, sig[i] == UInt8(ascii: "{") {
                i += 1
                try skip(sig, &i, depth: depth + 1)
                try skip(sig, &i, depth: depth + 1)
                guard i < sig.count, sig[i] == UInt8(ascii: "}") else {
                    throw WireError("a dictionary entry's signature is not closed")
                }
                i += 1
            } else {
                try skip(sig, &i, depth: depth + 1)
            }
        case UInt8(ascii: "("):
            var fields = 0
            while i < sig.count, sig[i] != UInt8(ascii: ")") {
                try skip(sig, &i, depth: depth + 1)
                fields += 1
            }
            guard i < sig.count, fields > 0 else { throw WireError("a structure's signature is not closed") }
            i += 1
        case let c where isBasic(c) || c == UInt8(ascii: "v"):
            break
        default:
            throw WireError("unknown type code '\(Character(Unicode.Scalar(code)))' in a signature")
        }
    }
}

/// Little-endian bytes of a message being written.
struct WireWriter {
    var bytes: [UInt8] = []

    mutating func align(_ n: Int) {
        while bytes.count % n != 0 { bytes.append(0) }
    }

    mutating func u32(_ v: UInt32) {
        align(4)
        withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func set(_ v: UInt32, at offset: Int) {
        withUnsafeBytes(of: v.littleEndian) { raw in
            for k in 0..<4 { bytes[offset + k] = raw[k] }
        }
    }

    mutating func string(_ s: String) {
        u32(UInt32(s.utf8.count))
        bytes.append(contentsOf: s.utf8)
        bytes.append(0)
    }

    mutating func signature(_ s: String) {
        bytes.append(UInt8(s.utf8.count))
        bytes.append(contentsOf: s.utf8)
        bytes.append(0)
    }
}

/// Strings a stream meets again and again (object paths, interface and member names, property
/// names), each made once and shared: a `PropertiesChanged` carries four longer than a String
/// holds inline, and making them was the most of what reading one cost after the system call.
/// Direct-mapped by a hash of the bytes; a slot taken by another string is replaced.
package final class WireStrings {
    private var slots = [String?](repeating: nil, count: 1024)

    package init() {}

    package func string(_ bytes: UnsafeRawBufferPointer) -> String {
        // Up to 15 bytes a String holds inline: nothing allocated to save.
        guard bytes.count > 15 else { return String(decoding: bytes, as: UTF8.self) }
        // The hash of its length and its first and last eight bytes: a device's path differs
        // from another's in its last bytes (its address), and a byte-by-byte hash of every
        // string of every message cost more than the allocations it saved.
        let first = bytes.loadUnaligned(as: UInt64.self)
        let last = bytes.loadUnaligned(fromByteOffset: bytes.count - 8, as: UInt64.self)
        let mixed = (first ^ (last &* 0x9E37_79B9_7F4A_7C15) ^ UInt64(bytes.count)) &* 0xFF51_AFD7_ED55_8CCD
        let slot = Int(truncatingIfNeeded: mixed >> 54)  // the top 10 bits: 1,024 slots
        if let kept = slots[slot] {
            let same = kept.utf8.withContiguousStorageIfAvailable {
                $0.count == bytes.count && memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0
            }
            if same == true { return kept }
        }
        let made = String(decoding: bytes, as: UTF8.self)
        slots[slot] = made
        return made
    }
}

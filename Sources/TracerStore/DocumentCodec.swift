import Foundation

/// The stored form of a document (schema 2): compact, typed binary, decoded without parsing.
///
/// Written by hand rather than with a serialization package: it must decode straight into
/// `Value`s, and the measurement that chose it was the decoding itself. A 5-minute window query
/// spent 69% of its time in the JSON parser (timestamps parsed from text, dictionaries grown
/// field by field, strings scanned for escapes); this form gives each map's size up front,
/// timestamps and numbers as their bits, and strings by length (BENCHMARKS.md, "The store").
///
///     document := 0xD2 count(varint) entry*          entry := key(varint length, UTF-8) value
///     value    := 0x00 null | 0x01 false | 0x02 true
///               | 0x03 integer (zigzag varint)   | 0x04 double (8 bytes, little-endian bits)
///               | 0x05 timestamp (zigzag varint microseconds)
///               | 0x06 string (varint length, UTF-8) | 0x07 bytes (varint length, bytes)
///               | 0x08 array (varint count, values)   | 0x09 map (varint count, entries)
///
/// Schema 1 stored JSON text; `decode` still reads it (its first byte is `{`), so a row the
/// upgrade has not reached, or a copy made by hand, stays readable.
enum DocumentCodec {
    static let documentTag: UInt8 = 0xD2

    private enum Tag: UInt8 {
        case null = 0
        case bool0
        case bool1
        case integer
        case double
        case timestamp
        case string
        case bytes
        case array
        case map
    }

    // MARK: Encoding

    static func encode(_ fields: DocumentData) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(320)
        out.append(documentTag)
        writeMap(fields, to: &out)
        return out
    }

    private static func writeMap(_ fields: [String: Value], to out: inout [UInt8]) {
        writeVarint(UInt64(fields.count), to: &out)
        for (key, value) in fields {
            writeString(key, to: &out)
            write(value, to: &out)
        }
    }

    private static func write(_ value: Value, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(Tag.null.rawValue)
        case .bool(let b): out.append(b ? Tag.bool1.rawValue : Tag.bool0.rawValue)
        case .integer(let i):
            out.append(Tag.integer.rawValue)
            writeVarint(zigzag(i), to: &out)
        case .double(let d):
            out.append(Tag.double.rawValue)
            var bits = d.bitPattern.littleEndian
            withUnsafeBytes(of: &bits) { out.append(contentsOf: $0) }
        case .timestamp(let t):
            out.append(Tag.timestamp.rawValue)
            writeVarint(zigzag(t.microseconds), to: &out)
        case .string(let s):
            out.append(Tag.string.rawValue)
            writeString(s, to: &out)
        case .bytes(let b):
            out.append(Tag.bytes.rawValue)
            writeVarint(UInt64(b.count), to: &out)
            out.append(contentsOf: b)
        case .array(let elements):
            out.append(Tag.array.rawValue)
            writeVarint(UInt64(elements.count), to: &out)
            for e in elements { write(e, to: &out) }
        case .map(let fields):
            out.append(Tag.map.rawValue)
            writeMap(fields, to: &out)
        case .sentinel:
            // Writes resolve every sentinel before they store a document (WriteRules).
            preconditionFailure("a sentinel reached the stored form")
        }
    }

    private static func writeString(_ s: String, to out: inout [UInt8]) {
        var s = s
        s.withUTF8 { utf8 in
            writeVarint(UInt64(utf8.count), to: &out)
            out.append(contentsOf: utf8)
        }
    }

    private static func writeVarint(_ v: UInt64, to out: inout [UInt8]) {
        var v = v
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    private static func zigzag(_ i: Int64) -> UInt64 { UInt64(bitPattern: (i << 1) ^ (i >> 63)) }
    private static func unzigzag(_ u: UInt64) -> Int64 { Int64(bitPattern: u >> 1) ^ -Int64(bitPattern: u & 1) }

    // MARK: Decoding

    /// A stored document's fields: the binary form, or schema 1's JSON text.
    static func decode(_ buffer: UnsafeBufferPointer<UInt8>, path: DocumentPath) throws -> DocumentData {
        guard let first = buffer.first else { throw unreadable(path) }
        if first == UInt8(ascii: "{") {
            guard case .map(let fields) = try JSON.parse(buffer: buffer) else { throw unreadable(path) }
            return fields
        }
        guard first == documentTag else { throw unreadable(path) }
        var reader = Reader(bytes: buffer, index: 1)
        guard let fields = reader.map(depth: 0), reader.index == buffer.count else { throw unreadable(path) }
        return fields
    }

    static func decode(_ bytes: [UInt8], path: DocumentPath) throws -> DocumentData {
        try bytes.withUnsafeBufferPointer { try decode($0, path: path) }
    }

    /// Whether `bytes` are one well-formed document in the binary form: checked when a document
    /// is read, so that decoding it later (lazily, `DocumentFields`) cannot fail.
    ///
    /// One loop with an explicit stack rather than the reader's recursion: it runs on every
    /// document a query reads, and the recursive walk was a fifth of a window query's time.
    static func isWellFormed(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard bytes.first == documentTag, let base = bytes.baseAddress else { return false }
        // Per open container: the values still to read in it, the top bit set when each comes
        // after a key. On the stack: a heap array per document cost more than the walk. (And no
        // closure captures the offset: a captured variable is checked for exclusive access at
        // run time on every use, which cost a window query a fifth of its time.)
        return withUnsafeTemporaryAllocation(of: UInt64.self, capacity: 64) { stack in
            walk(base, bytes.count, stack)
        }
    }

    private static func walk(
        _ base: UnsafePointer<UInt8>,
        _ end: Int,
        _ stack: UnsafeMutableBufferPointer<UInt64>
    )
        -> Bool
    {
        let keyed: UInt64 = 1 << 63
        var i = 1
        guard let top = varint(base, end, &i), top < keyed else { return false }
        stack[0] = top | keyed
        var depth = 1
        while depth > 0 {
            let last = stack[depth - 1]
            if last & ~keyed == 0 {
                depth -= 1
                continue
            }
            stack[depth - 1] = last &- 1
            if last & keyed != 0 {
                // A key: one length byte in practice.
                if i < end, base[i] < 0x80 {
                    i &+= 1 &+ Int(base[i])
                } else {
                    guard let k = varint(base, end, &i), k <= UInt64(end - i) else { return false }
                    i &+= Int(k)
                }
            }
            guard i < end else { return false }
            let tag = base[i]
            i &+= 1
            switch tag {
            case Tag.null.rawValue, Tag.bool0.rawValue, Tag.bool1.rawValue: continue
            case Tag.integer.rawValue, Tag.timestamp.rawValue:
                guard varint(base, end, &i) != nil else { return false }
            case Tag.double.rawValue:
                i &+= 8
            case Tag.string.rawValue, Tag.bytes.rawValue:
                guard let n = varint(base, end, &i), n <= UInt64(end - i) else { return false }
                i &+= Int(n)
            case Tag.array.rawValue, Tag.map.rawValue:
                guard let n = varint(base, end, &i), n <= UInt64(end - i) else { return false }
                if n > 0 {
                    // As deep as the decoder reads (values nest at most 63 deep), no deeper.
                    guard depth < 63 else { return false }
                    stack[depth] = n | (tag == Tag.map.rawValue ? keyed : 0)
                    depth &+= 1
                }
            default: return false
            }
            // Past the end (a key or a double longer than what is left) is caught here.
            if i > end { return false }
        }
        return i == end
    }

    /// A varint at `i` (moved past it), or nil when it runs past `end` or past 64 bits.
    @inline(__always)
    fileprivate static func varint(_ base: UnsafePointer<UInt8>, _ end: Int, _ i: inout Int) -> UInt64? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while i < end, shift < 64 {
            let b = base[i]
            i += 1
            result |= UInt64(b & 0x7F) << shift
            if b < 0x80 { return result }
            shift += 7
        }
        return nil
    }

    /// The value at a field path inside well-formed stored bytes, decoding only that value.
    static func value(in bytes: UnsafeBufferPointer<UInt8>, at segments: [String]) -> Value? {
        var reader = Reader(bytes: bytes, index: 1)
        var depth = 0
        while true {
            let segment = segments[depth]
            guard let n = reader.varint() else { return nil }
            var found = false
            for _ in 0..<n {
                guard let matches = reader.keyEquals(segment) else { return nil }
                if matches {
                    found = true
                    break
                }
                guard reader.skipValue(depth: depth + 1) else { return nil }
            }
            guard found else { return nil }
            if depth == segments.count - 1 { return reader.value(depth: depth + 1) }
            // A deeper segment: the value must be a map.
            guard reader.index < bytes.count, bytes[reader.index] == Tag.map.rawValue else { return nil }
            reader.index += 1
            depth += 1
        }
    }

    private static func unreadable(_ path: DocumentPath) -> StoreError {
        StoreError(.sqlite, "a stored document cannot be read (damaged, or not tracer's)", context: path.description)
    }

    /// Reads values; nil at the first byte that does not fit the form (never traps).
    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var index: Int

        @inline(__always)
        mutating func varint() -> UInt64? {
            // Most varints here (lengths, counts, small integers) are one byte.
            if index < bytes.count, bytes[index] < 0x80 {
                defer { index += 1 }
                return UInt64(bytes[index])
            }
            guard let base = bytes.baseAddress else { return nil }
            return DocumentCodec.varint(base, bytes.count, &index)
        }

        @inline(__always)
        mutating func length() -> Int? {
            guard let n = varint(), n <= UInt64(bytes.count - index) else { return nil }
            return Int(n)
        }

        mutating func string() -> String? {
            guard let n = length() else { return nil }
            let s = String(decoding: UnsafeBufferPointer(rebasing: bytes[index..<(index + n)]), as: UTF8.self)
            index += n
            return s
        }

        /// Reads a key and says whether it is `name` (nil: damaged). Swift compares strings by
        /// canonical equivalence, as the dictionary does: bytes decide only for ASCII names.
        mutating func keyEquals(_ name: String) -> Bool? {
            guard let n = length() else { return nil }
            let key = UnsafeBufferPointer(rebasing: bytes[index..<(index + n)])
            index += n
            var name = name
            return name.withUTF8 { utf8 in
                if utf8.count == n, memcmp(utf8.baseAddress!, key.baseAddress!, n) == 0 { return true }
                if _allASCII(utf8) { return false }
                return String(decoding: key, as: UTF8.self) == String(decoding: utf8, as: UTF8.self)
            }
        }

        private func _allASCII(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
            utf8.allSatisfy { $0 < 0x80 }
        }

        mutating func skipMap(depth: Int) -> Bool {
            guard let n = varint(), n <= UInt64(bytes.count - index) / 2 else { return false }
            for _ in 0..<n {
                guard let k = length() else { return false }
                index += k
                guard skipValue(depth: depth + 1) else { return false }
            }
            return true
        }

        /// Steps over one value without decoding it; false when it is damaged.
        mutating func skipValue(depth: Int) -> Bool {
            guard index < bytes.count, depth < 64, let tag = Tag(rawValue: bytes[index]) else { return false }
            index += 1
            switch tag {
            case .null, .bool0, .bool1: return true
            case .integer, .timestamp: return varint() != nil
            case .double:
                guard index + 8 <= bytes.count else { return false }
                index += 8
                return true
            case .string:
                // Validated like the decoder would read it: any bytes decode (repaired), so the
                // length is all that can be wrong.
                guard let n = length() else { return false }
                index += n
                return true
            case .bytes:
                guard let n = length() else { return false }
                index += n
                return true
            case .array:
                guard let n = varint(), n <= UInt64(bytes.count - index) else { return false }
                for _ in 0..<n where !skipValue(depth: depth + 1) { return false }
                return true
            case .map: return skipMap(depth: depth)
            }
        }

        mutating func map(depth: Int) -> [String: Value]? {
            // Each entry takes at least two bytes: a count beyond that is damage, not a size.
            guard let n = varint(), n <= UInt64(bytes.count - index) / 2 else { return nil }
            var fields = [String: Value](minimumCapacity: Int(n))
            for _ in 0..<n {
                guard let key = string(), let value = value(depth: depth + 1) else { return nil }
                fields[key] = value
            }
            return fields
        }

        mutating func value(depth: Int) -> Value? {
            guard index < bytes.count, depth < 64, let tag = Tag(rawValue: bytes[index]) else { return nil }
            index += 1
            switch tag {
            case .null: return .null
            case .bool0: return .bool(false)
            case .bool1: return .bool(true)
            case .integer: return varint().map { .integer(DocumentCodec.unzigzag($0)) }
            case .double:
                guard index + 8 <= bytes.count else { return nil }
                var bits: UInt64 = 0
                for k in 0..<8 { bits |= UInt64(bytes[index + k]) << (8 * UInt64(k)) }
                index += 8
                return .double(Double(bitPattern: bits))
            case .timestamp:
                return varint().map { .timestamp(Timestamp(microseconds: DocumentCodec.unzigzag($0))) }
            case .string: return string().map { .string($0) }
            case .bytes:
                guard let n = length() else { return nil }
                defer { index += n }
                return .bytes(Array(bytes[index..<(index + n)]))
            case .array:
                guard let n = varint(), n <= UInt64(bytes.count - index) else { return nil }
                var elements: [Value] = []
                elements.reserveCapacity(Int(n))
                for _ in 0..<n {
                    guard let e = value(depth: depth + 1) else { return nil }
                    elements.append(e)
                }
                return .array(elements)
            case .map: return map(depth: depth).map { .map($0) }
            }
        }
    }
}

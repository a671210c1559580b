import Foundation

/// An order-preserving byte encoding of values: `Value.compare(a, b)` equals the byte-wise
/// comparison of their keys. Each encoding is self-delimiting, so keys concatenate into composite
/// index keys, and inverting a component's bytes reverses its order (descending index fields).
///
/// Index entries are stored under these keys, so SQLite's BLOB comparison (memcmp) gives
/// Firestore's order with only bound parameters in the SQL.
enum IndexKey {
    // Type tags, in Firestore's type order. 0x00 ends arrays and maps; 0xFF is never a first byte,
    // so `prefix + [0xFF]` bounds every key that starts with `prefix`.
    static let null: UInt8 = 0x05
    static let bool: UInt8 = 0x10
    static let number: UInt8 = 0x20
    static let timestamp: UInt8 = 0x30
    static let string: UInt8 = 0x40
    static let bytes: UInt8 = 0x50
    static let array: UInt8 = 0x60
    static let map: UInt8 = 0x70
    static let end: UInt8 = 0x00
    static let entry: UInt8 = 0x01
    static let top: UInt8 = 0xFF

    /// The first tag of a type order, for open-ended range bounds.
    static func tag(forTypeOrder order: Int) -> UInt8 {
        [null, bool, number, timestamp, string, bytes, array, map, top][order]
    }

    static func append(_ value: Value, to out: inout [UInt8]) {
        switch value {
        case .null:
            out.append(null)
        case .bool(let b):
            out.append(bool)
            out.append(b ? 1 : 0)
        case .integer(let i):
            out.append(number)
            out.append(1)
            // Exact integers beyond 2^53: the nearest double, then the integer's distance from it.
            let d = Double(i)
            let rest: Int64 =
                d >= 9_223_372_036_854_775_808.0 ? i &+ Int64.min : i - Int64(d)
            appendDouble(d, to: &out)
            appendInt64(rest, to: &out)
        case .double(let d):
            out.append(number)
            if d.isNaN {
                out.append(0)
            } else {
                out.append(1)
                appendDouble(d == 0 ? 0 : d, to: &out)
                appendInt64(0, to: &out)
            }
        case .timestamp(let t):
            out.append(timestamp)
            appendInt64(t.microseconds, to: &out)
        case .string(let s):
            out.append(string)
            appendEscaped(s.utf8, to: &out)
        case .bytes(let b):
            out.append(bytes)
            appendEscaped(b, to: &out)
        case .array(let elements):
            out.append(array)
            for e in elements { append(e, to: &out) }
            out.append(end)
        case .map(let fields):
            out.append(map)
            for k in fields.keys.sorted(by: utf8Less) {
                out.append(entry)  // above `end`, so a map that runs out of keys sorts first
                appendEscaped(k.utf8, to: &out)
                append(fields[k]!, to: &out)
            }
            out.append(end)
        case .sentinel:
            out.append(top)
        }
    }

    /// Appends a component, inverting its bytes for descending order.
    static func append(_ value: Value, descending: Bool, to out: inout [UInt8]) {
        let start = out.count
        append(value, to: &out)
        if descending {
            for i in start..<out.count { out[i] = ~out[i] }
        }
    }

    /// A document's name for the implicit `__name__` order: its path segment by segment.
    static func appendName(_ segments: some Sequence<String>, descending: Bool, to out: inout [UInt8]) {
        let start = out.count
        out.append(string)
        for s in segments { appendEscaped(s.utf8, to: &out) }
        out.append(end)
        if descending {
            for i in start..<out.count { out[i] = ~out[i] }
        }
    }

    static func key(_ value: Value) -> [UInt8] {
        var out: [UInt8] = []
        append(value, to: &out)
        return out
    }

    private static func appendDouble(_ d: Double, to out: inout [UInt8]) {
        let bits = d.bitPattern
        let ordered = bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
        appendBigEndian(ordered, to: &out)
    }

    private static func appendInt64(_ i: Int64, to out: inout [UInt8]) {
        appendBigEndian(UInt64(bitPattern: i) ^ (1 << 63), to: &out)
    }

    private static func appendBigEndian(_ v: UInt64, to out: inout [UInt8]) {
        var shift = 56
        while shift >= 0 {
            out.append(UInt8(truncatingIfNeeded: v >> UInt64(shift)))
            shift -= 8
        }
    }

    /// Bytes with 0x00 escaped as 0x00 0xFF and ended by 0x00 0x01: prefix-free, order kept.
    /// Bytes with no zero among them (nearly every key) are copied whole: appended one by one,
    /// they were a tenth of a document's write in Swift (`perf`, BENCHMARKS.md "A plan kept per
    /// query shape").
    private static func appendEscaped(_ bytes: some Sequence<UInt8>, to out: inout [UInt8]) {
        let whole = bytes.withContiguousStorageIfAvailable { b -> Bool in
            guard let base = b.baseAddress else { return true }
            if memchr(base, 0, b.count) != nil { return false }
            out.append(contentsOf: b)
            return true
        }
        if whole != true {
            for b in bytes {
                out.append(b)
                if b == 0 { out.append(0xFF) }
            }
        }
        out.append(0)
        out.append(1)
    }
}

extension IndexKey {
    /// The document name at the end of an index entry's key. `components` says, for each value
    /// before the name, whether it is stored inverted (descending); `nameDescending` likewise.
    static func name(in key: [UInt8], skipping components: [Bool], nameDescending: Bool) -> [String]? {
        var i = 0
        for inverted in components {
            guard let next = skip(key, at: i, inverted: inverted) else { return nil }
            i = next
        }
        func byte(_ j: Int) -> UInt8? { j < key.count ? (nameDescending ? ~key[j] : key[j]) : nil }
        guard byte(i) == string else { return nil }
        i += 1
        var segments: [String] = []
        // Segments until the final `end` byte, each escaped and closed by 00 01.
        while i < key.count - 1 {
            // The common case, read in place: ascending, and no escaped NUL before the 00 01.
            if !nameDescending {
                var j = i
                while j + 1 < key.count, key[j] != 0 { j += 1 }
                if j + 1 < key.count, key[j + 1] == 1 {
                    segments.append(key.withUnsafeBufferPointer { String(decoding: $0[i..<j], as: UTF8.self) })
                    i = j + 2
                    continue
                }
            }
            var segment: [UInt8] = []
            while true {
                guard let b = byte(i) else { return nil }
                if b == 0 {
                    guard let n = byte(i + 1) else { return nil }
                    i += 2
                    if n == 1 { break }
                    segment.append(0)  // 00 FF: an escaped NUL
                } else {
                    segment.append(b)
                    i += 1
                }
            }
            segments.append(String(decoding: segment, as: UTF8.self))
        }
        return byte(i) == end ? segments : nil
    }

    /// The offset just past the encoded value that starts at `i`.
    static func skip(_ key: [UInt8], at i: Int, inverted: Bool) -> Int? {
        func byte(_ j: Int) -> UInt8? { j < key.count ? (inverted ? ~key[j] : key[j]) : nil }
        func skipEscaped(_ start: Int) -> Int? {
            var j = start
            while let b = byte(j) {
                if b == 0 {
                    guard let n = byte(j + 1) else { return nil }
                    if n == 1 { return j + 2 }
                    j += 2
                } else {
                    j += 1
                }
            }
            return nil
        }
        guard let tag = byte(i) else { return nil }
        switch tag {
        case null: return i + 1
        case bool: return i + 2
        case number: return byte(i + 1) == 0 ? i + 2 : i + 18
        case timestamp: return i + 9
        case string, bytes: return skipEscaped(i + 1)
        case array:
            var j = i + 1
            while let b = byte(j), b != end {
                guard let next = skip(key, at: j, inverted: inverted) else { return nil }
                j = next
            }
            return j + 1
        case map:
            var j = i + 1
            while let b = byte(j), b != end {
                guard b == entry, let afterKey = skipEscaped(j + 1),
                    let next = skip(key, at: afterKey, inverted: inverted)
                else { return nil }
                j = next
            }
            return j + 1
        default: return nil
        }
    }
}

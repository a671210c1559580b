import Foundation

/// JSON text to and from values.
///
/// Plain JSON maps onto values directly (numbers without a fraction or exponent are integers).
/// Types JSON lacks travel as one-key objects with Firestore's reserved `__name__` form, which no
/// stored field may use: `{"__time__": "2026-11-22T10:00:00.000000Z"}`, `{"__bytes__": "base64"}`,
/// `{"__double__": "NaN"}`. Writes also accept the sentinels `{"__serverTimestamp__": true}`,
/// `{"__increment__": 1}`, `{"__arrayUnion__": [...]}`, `{"__arrayRemove__": [...]}` and
/// `{"__delete__": true}`.
public enum JSON {
    /// Parses JSON text into a value; `allowSentinels` lets write sentinels through.
    public static func parse(_ text: String, allowSentinels: Bool = false) throws(StoreError) -> Value {
        var bytes = Array(text.utf8)
        return try parse(bytes: &bytes, allowSentinels: allowSentinels)
    }

    /// Parses UTF-8 JSON bytes into a value.
    public static func parse(bytes: inout [UInt8], allowSentinels: Bool = false) throws(StoreError) -> Value {
        try bytes.withUnsafeBufferPointer { (buffer) throws(StoreError) -> Value in
            try parse(buffer: buffer, allowSentinels: allowSentinels)
        }
    }

    static func parse(buffer: UnsafeBufferPointer<UInt8>, allowSentinels: Bool = false) throws(StoreError) -> Value {
        var parser = Parser(bytes: buffer, allowSentinels: allowSentinels)
        parser.skipSpace()
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.index == buffer.count else { throw parser.error("unexpected text after the value") }
        return value
    }

    /// Parses a JSON object into document fields.
    public static func parseObject(_ text: String, allowSentinels: Bool = false) throws(StoreError) -> DocumentData {
        guard case .map(let fields) = try parse(text, allowSentinels: allowSentinels) else {
            throw StoreError(.invalidJSON, "expected a JSON object")
        }
        return fields
    }

    /// Serializes a value; keys are sorted so that equal values give equal text.
    public static func string(_ value: Value, pretty: Bool = false) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(value, to: &out, indent: pretty ? 0 : nil)
        return String(decoding: out, as: UTF8.self)
    }

    /// Serializes document fields as a JSON object.
    public static func string(_ fields: DocumentData, pretty: Bool = false) -> String {
        string(.map(fields), pretty: pretty)
    }

    static func bytes(_ fields: DocumentData) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(384)
        write(.map(fields), to: &out, indent: nil)
        return out
    }

    static func write(_ value: Value, to out: inout [UInt8], indent: Int?) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .integer(let i): out.append(contentsOf: String(i).utf8)
        case .double(let d):
            if d.isFinite {
                out.append(contentsOf: d.description.utf8)  // shortest round-trip form, "1.0" keeps its kind
            } else {
                let name = d.isNaN ? "NaN" : (d > 0 ? "Infinity" : "-Infinity")
                write(.map(["__double__": .string(name)]), to: &out, indent: indent)
            }
        case .timestamp(let t):
            out.append(contentsOf: #"{"__time__":"#.utf8)
            if indent != nil { out.append(UInt8(ascii: " ")) }
            out.append(UInt8(ascii: "\""))
            t.appendISO8601(to: &out)
            out.append(contentsOf: #""}"#.utf8)
        case .string(let s): writeString(s, to: &out)
        case .bytes(let b):
            write(.map(["__bytes__": .string(Data(b).base64EncodedString())]), to: &out, indent: indent)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (i, e) in elements.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                newline(indent.map { $0 + 1 }, &out)
                write(e, to: &out, indent: indent.map { $0 + 1 })
            }
            if !elements.isEmpty { newline(indent, &out) }
            out.append(UInt8(ascii: "]"))
        case .map(let fields):
            out.append(UInt8(ascii: "{"))
            for (i, key) in fields.keys.sorted().enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                newline(indent.map { $0 + 1 }, &out)
                writeString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                if indent != nil { out.append(UInt8(ascii: " ")) }
                write(fields[key]!, to: &out, indent: indent.map { $0 + 1 })
            }
            if !fields.isEmpty { newline(indent, &out) }
            out.append(UInt8(ascii: "}"))
        case .sentinel(let s):
            let tagged: Value =
                switch s {
                case .serverTimestamp: ["__serverTimestamp__": true]
                case .increment(let n): ["__increment__": n]
                case .arrayUnion(let e): ["__arrayUnion__": .array(e)]
                case .arrayRemove(let e): ["__arrayRemove__": .array(e)]
                case .delete: ["__delete__": true]
                }
            write(tagged, to: &out, indent: indent)
        }
    }

    private static func newline(_ indent: Int?, _ out: inout [UInt8]) {
        guard let indent else { return }
        out.append(UInt8(ascii: "\n"))
        out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent * 2))
    }

    private static let hex = Array("0123456789abcdef".utf8)

    static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): out.append(contentsOf: [92, 34])
            case UInt8(ascii: "\\"): out.append(contentsOf: [92, 92])
            case UInt8(ascii: "\n"): out.append(contentsOf: [92, 110])
            case UInt8(ascii: "\r"): out.append(contentsOf: [92, 114])
            case UInt8(ascii: "\t"): out.append(contentsOf: [92, 116])
            case 0..<0x20:
                out.append(contentsOf: [92, 117, 48, 48, hex[Int(b >> 4)], hex[Int(b & 15)]])
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

private struct Parser {
    let bytes: UnsafeBufferPointer<UInt8>
    let allowSentinels: Bool
    var index = 0

    init(bytes: UnsafeBufferPointer<UInt8>, allowSentinels: Bool) {
        self.bytes = bytes
        self.allowSentinels = allowSentinels
    }

    func error(_ message: String) -> StoreError {
        StoreError(.invalidJSON, "invalid JSON: \(message)", context: "at byte \(index)")
    }

    mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func value(depth: Int) throws(StoreError) -> Value {
        guard depth < 128 else { throw error("nested more than 128 levels") }
        guard index < bytes.count else { throw error("unexpected end") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["):
            index += 1
            var elements: [Value] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            while true {
                skipSpace()
                elements.append(try value(depth: depth + 1))
                skipSpace()
                guard index < bytes.count else { throw error("unterminated array") }
                let c = bytes[index]
                index += 1
                if c == UInt8(ascii: "]") { return .array(elements) }
                guard c == UInt8(ascii: ",") else { throw error("expected , or ] in array") }
            }
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw error("unexpected character '\(Character(Unicode.Scalar(bytes[index])))'")
        }
    }

    mutating func literal(_ word: StaticString, _ value: Value) throws(StoreError) -> Value {
        let w = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        guard index + w.count <= bytes.count, bytes[index..<index + w.count].elementsEqual(w) else {
            throw error("unknown literal")
        }
        index += w.count
        return value
    }

    mutating func number() throws(StoreError) -> Value {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        let digitsStart = index
        while index < bytes.count {
            let c = bytes[index]
            if c >= 48 && c <= 57 {
                index += 1
            } else if c == UInt8(ascii: ".") || c == UInt8(ascii: "e") || c == UInt8(ascii: "E")
                || c == UInt8(ascii: "+") || c == UInt8(ascii: "-")
            {
                isInteger = false
                index += 1
            } else {
                break
            }
        }
        guard index > digitsStart else { throw error("bad number") }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        if isInteger, let i = Int64(text) { return .integer(i) }
        guard let d = Double(text), d.isFinite else { throw error("bad number '\(text)'") }
        return .double(d)
    }

    mutating func string() throws(StoreError) -> String {
        index += 1  // opening quote
        let start = index
        // Fast path: no escapes. ASCII (every key and most values) needs no validation.
        var ascii = true
        while index < bytes.count {
            let c = bytes[index]
            if c == UInt8(ascii: "\"") {
                let s =
                    ascii
                    ? String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                    : try utf8(bytes[start..<index])
                index += 1
                return s
            }
            if c == UInt8(ascii: "\\") { break }
            if c < 0x20 { throw error("control character in string") }
            if c >= 0x80 { ascii = false }
            index += 1
        }
        var out = Array(bytes[start..<index])
        while index < bytes.count {
            let c = bytes[index]
            index += 1
            switch c {
            case UInt8(ascii: "\""):
                return try utf8(out)
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { throw error("unterminated escape") }
                let e = bytes[index]
                index += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                case UInt8(ascii: "b"): out.append(8)
                case UInt8(ascii: "f"): out.append(12)
                case UInt8(ascii: "n"): out.append(10)
                case UInt8(ascii: "r"): out.append(13)
                case UInt8(ascii: "t"): out.append(9)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard index + 1 < bytes.count, bytes[index] == 92, bytes[index + 1] == 117 else {
                            throw error("lone surrogate")
                        }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw error("bad surrogate pair") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw error("bad \\u escape") }
                    out.append(contentsOf: Array(String(Character(u)).utf8))
                default: throw error("bad escape")
                }
            default:
                if c < 0x20 { throw error("control character in string") }
                out.append(c)
            }
        }
        throw error("unterminated string")
    }

    /// The bytes as a string, refused unless they are valid UTF-8 (`String(decoding:)` would put
    /// U+FFFD in place of what is not, and a key or an id would change on the way in).
    func utf8(_ b: some Collection<UInt8>) throws(StoreError) -> String {
        // The contiguous bytes (every caller's) go through the fast validation.
        let s: String? =
            if let contiguous = b.withContiguousStorageIfAvailable({ String(validating: $0, as: UTF8.self) }) {
                contiguous
            } else {
                String(validating: b, as: UTF8.self)
            }
        guard let s else { throw error("a string is not valid UTF-8") }
        return s
    }

    mutating func hex4() throws(StoreError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("short \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            index += 1
            let d: UInt8
            switch c {
            case 48...57: d = c - 48
            case 65...70: d = c - 55
            case 97...102: d = c - 87
            default: throw error("bad hex digit")
            }
            v = v << 4 | UInt32(d)
        }
        return v
    }

    mutating func object(depth: Int) throws(StoreError) -> Value {
        index += 1
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .map([:])
        }
        // The members first, then the dictionary at its size (growing it member by member
        // rehashed it at 2, 4 and 8, a fifth of a kiosk batch's parse: perf on `tracer-bench
        // campus parse`), and a tagged value's one member needs none.
        var members: [(String, Value)] = []
        members.reserveCapacity(16)
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a key") }
            let key = try string()
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected :") }
            index += 1
            skipSpace()
            members.append((key, try value(depth: depth + 1)))
            skipSpace()
            guard index < bytes.count else { throw error("unterminated object") }
            let c = bytes[index]
            index += 1
            if c == UInt8(ascii: "}") { break }
            guard c == UInt8(ascii: ",") else { throw error("expected , or } in object") }
        }
        // One key of the form __x__ (repeated or not: the last one counts) is a tagged value.
        if let (key, inner) = members.last, key.hasPrefix("__"), key.hasSuffix("__"),
            members.allSatisfy({ $0.0 == key })
        {
            return try tagged(key, inner)
        }
        var fields = [String: Value](minimumCapacity: members.count)
        for (key, value) in members { fields[key] = value }  // a repeated key: the last one
        return .map(fields)
    }

    func tagged(_ key: String, _ inner: Value) throws(StoreError) -> Value {
        switch (key, inner) {
        case ("__time__", .string(let s)):
            guard let t = Timestamp(parsing: s) else {
                throw error("bad __time__ '\(s.prefix(40))': RFC 3339 between years 0001 and 9999 is needed")
            }
            return .timestamp(t)
        case ("__time__", .integer), ("__time__", .double):
            guard let t = Timestamp(checkedSeconds: inner.doubleValue!) else {
                throw error("bad __time__ \(inner.doubleValue!): Unix seconds between years 0001 and 9999 are needed")
            }
            return .timestamp(t)
        case ("__bytes__", .string(let s)):
            guard let d = Data(base64Encoded: s) else { throw error("bad __bytes__ base64") }
            return .bytes(Array(d))
        case ("__double__", .string(let s)):
            switch s {
            case "NaN": return .double(.nan)
            case "Infinity": return .double(.infinity)
            case "-Infinity": return .double(-.infinity)
            default: throw error("bad __double__ '\(s)'")
            }
        case ("__serverTimestamp__", _), ("__increment__", _), ("__arrayUnion__", _), ("__arrayRemove__", _),
            ("__delete__", _):
            guard allowSentinels else { throw error("\(key) is only accepted in writes") }
            switch (key, inner) {
            case ("__serverTimestamp__", .bool(true)): return .serverTimestamp
            case ("__delete__", .bool(true)): return .delete
            case ("__increment__", .integer), ("__increment__", .double): return .sentinel(.increment(inner))
            case ("__arrayUnion__", .array(let e)): return .arrayUnion(e)
            case ("__arrayRemove__", .array(let e)): return .arrayRemove(e)
            default: throw error("bad argument to \(key)")
            }
        default:
            // Left as a map: validation rejects reserved field names with a clear message.
            return .map([key: inner])
        }
    }
}

/// CBOR (RFC 8949), as much as a signed health certificate needs: decoding its COSE structure
/// and its payload, and encoding the COSE `Sig_structure` that is signed.
///
/// Written here: no CBOR library is in the package graph (swift-asn1 is DER only), and what is
/// needed is small: definite lengths only (a certificate never uses indefinite ones, RFC 8392's
/// deterministic encoding), with bounds on nesting and on every length, since the input is
/// whatever a QR code says.
public indirect enum CBOR: Sendable, Equatable {
    case unsigned(UInt64)
    /// -1 - n, kept as n.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBOR])
    case map([(CBOR, CBOR)])
    case tagged(UInt64, CBOR)
    case bool(Bool)
    case null
    case undefined
    case float(Double)

    public static func == (a: CBOR, b: CBOR) -> Bool {
        switch (a, b) {
        case (.unsigned(let x), .unsigned(let y)), (.negative(let x), .negative(let y)): x == y
        case (.bytes(let x), .bytes(let y)): x == y
        case (.text(let x), .text(let y)): x == y
        case (.array(let x), .array(let y)): x == y
        case (.map(let x), .map(let y)): x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.tagged(let t, let x), .tagged(let u, let y)): t == u && x == y
        case (.bool(let x), .bool(let y)): x == y
        case (.null, .null), (.undefined, .undefined): true
        case (.float(let x), .float(let y)): x == y
        default: false
        }
    }

    /// An integer key or value, when it is one that fits.
    public var int: Int64? {
        switch self {
        case .unsigned(let n): n <= UInt64(Int64.max) ? Int64(n) : nil
        case .negative(let n): n < UInt64(Int64.max) ? -1 - Int64(n) : nil
        default: nil
        }
    }

    public var string: String? { if case .text(let s) = self { s } else { nil } }
    public var data: [UInt8]? { if case .bytes(let b) = self { b } else { nil } }

    /// A number as a Double (an integer or a float), for times.
    public var number: Double? {
        switch self {
        case .float(let d): d
        default: int.map(Double.init)
        }
    }

    /// The value under `key` in a map (an integer or a text key).
    public subscript(_ key: Int64) -> CBOR? {
        guard case .map(let pairs) = self else { return nil }
        return pairs.first { $0.0.int == key }?.1
    }

    public subscript(_ key: String) -> CBOR? {
        guard case .map(let pairs) = self else { return nil }
        return pairs.first { $0.0.string == key }?.1
    }

    /// The value without its tags.
    public var untagged: CBOR {
        if case .tagged(_, let inner) = self { return inner.untagged }
        return self
    }
}

/// Why bytes are not the CBOR expected.
public struct CBORError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension CBOR {
    /// Decodes one item that must fill `bytes` exactly.
    public static func decode(_ bytes: [UInt8], maxDepth: Int = 16) throws(CBORError) -> CBOR {
        var reader = Reader(bytes: bytes, maxDepth: maxDepth)
        let value = try reader.item(depth: 0)
        guard reader.at == bytes.count else {
            throw CBORError("\(bytes.count - reader.at) bytes left over after the CBOR item")
        }
        return value
    }

    struct Reader {
        let bytes: [UInt8]
        let maxDepth: Int
        var at = 0

        init(bytes: [UInt8], maxDepth: Int) {
            self.bytes = bytes
            self.maxDepth = maxDepth
        }

        mutating func byte() throws(CBORError) -> UInt8 {
            guard at < bytes.count else { throw CBORError("the CBOR ends in the middle of an item") }
            defer { at += 1 }
            return bytes[at]
        }

        mutating func take(_ n: UInt64) throws(CBORError) -> [UInt8] {
            guard n <= UInt64(bytes.count - at) else {
                throw CBORError("a CBOR length of \(n) runs past the end (\(bytes.count - at) bytes left)")
            }
            defer { at += Int(n) }
            return Array(bytes[at..<at + Int(n)])
        }

        /// The argument of an initial byte: its low five bits, or the 1, 2, 4 or 8 bytes after it.
        mutating func argument(_ info: UInt8) throws(CBORError) -> UInt64 {
            switch info {
            case 0..<24: return UInt64(info)
            case 24, 25, 26, 27:
                var n: UInt64 = 0
                for b in try take(1 << (info - 24)) { n = n << 8 | UInt64(b) }
                return n
            default: throw CBORError("indefinite or reserved CBOR lengths are not accepted (additional info \(info))")
            }
        }

        mutating func item(depth: Int) throws(CBORError) -> CBOR {
            guard depth <= maxDepth else { throw CBORError("the CBOR nests deeper than \(maxDepth) levels") }
            let initial = try byte()
            let major = initial >> 5
            let info = initial & 0x1F
            if major == 7 {
                switch info {
                case 20: return .bool(false)
                case 21: return .bool(true)
                case 22: return .null
                case 23: return .undefined
                case 25: return .float(Double(Self.half(UInt16(try argument(info)))))
                case 26: return .float(Double(Float(bitPattern: UInt32(try argument(info)))))
                case 27: return .float(Double(bitPattern: try argument(info)))
                default: throw CBORError("an unsupported CBOR simple value (\(info))")
                }
            }
            let n = try argument(info)
            switch major {
            case 0: return .unsigned(n)
            case 1: return .negative(n)
            case 2: return .bytes(try take(n))
            case 3:
                guard let s = String(validating: try take(n), as: UTF8.self) else {
                    throw CBORError("a CBOR text string is not UTF-8")
                }
                return .text(s)
            case 4:
                // Each item takes at least a byte: a count beyond what is left is a lie.
                guard n <= UInt64(bytes.count - at) else {
                    throw CBORError("a CBOR array of \(n) items runs past the end")
                }
                var items: [CBOR] = []
                for _ in 0..<n { items.append(try item(depth: depth + 1)) }
                return .array(items)
            case 5:
                guard n <= UInt64(bytes.count - at) / 2 else {
                    throw CBORError("a CBOR map of \(n) pairs runs past the end")
                }
                var pairs: [(CBOR, CBOR)] = []
                for _ in 0..<n { pairs.append((try item(depth: depth + 1), try item(depth: depth + 1))) }
                return .map(pairs)
            default:
                return .tagged(n, try item(depth: depth + 1))
            }
        }

        /// An IEEE 754 half-precision float.
        static func half(_ h: UInt16) -> Float {
            let sign: Float = h & 0x8000 != 0 ? -1 : 1
            let exponent = Int((h >> 10) & 0x1F)
            let fraction = Float(h & 0x3FF)
            switch exponent {
            case 0: return sign * fraction * Float(pow2: -24)
            case 31: return fraction == 0 ? sign * .infinity : .nan
            default: return sign * (1 + fraction / 1024) * Float(pow2: exponent - 15)
            }
        }
    }

    /// The encoding of this item (definite lengths, shortest arguments): what the COSE
    /// `Sig_structure` is signed as.
    public var encoded: [UInt8] {
        func head(_ major: UInt8, _ n: UInt64) -> [UInt8] {
            switch n {
            case 0..<24: return [major << 5 | UInt8(n)]
            case 24..<0x100: return [major << 5 | 24, UInt8(n)]
            case 0x100..<0x1_0000: return [major << 5 | 25, UInt8(n >> 8), UInt8(n & 0xFF)]
            case 0x1_0000..<0x1_0000_0000:
                return [major << 5 | 26] + (0..<4).reversed().map { UInt8(n >> ($0 * 8) & 0xFF) }
            default: return [major << 5 | 27] + (0..<8).reversed().map { UInt8(n >> ($0 * 8) & 0xFF) }
            }
        }
        switch self {
        case .unsigned(let n): return head(0, n)
        case .negative(let n): return head(1, n)
        case .bytes(let b): return head(2, UInt64(b.count)) + b
        case .text(let s): return head(3, UInt64(s.utf8.count)) + Array(s.utf8)
        case .array(let items): return head(4, UInt64(items.count)) + items.flatMap(\.encoded)
        case .map(let pairs): return head(5, UInt64(pairs.count)) + pairs.flatMap { $0.0.encoded + $0.1.encoded }
        case .tagged(let t, let inner): return head(6, t) + inner.encoded
        case .bool(let b): return [b ? 0xF5 : 0xF4]
        case .null: return [0xF6]
        case .undefined: return [0xF7]
        case .float(let d): return [0xFB] + (0..<8).reversed().map { UInt8(d.bitPattern >> ($0 * 8) & 0xFF) }
        }
    }
}

extension Float {
    fileprivate init(pow2 e: Int) { self = Float(sign: .plus, exponent: e, significand: 1) }
}

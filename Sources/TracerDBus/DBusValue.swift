import CTracerDBus

/// A D-Bus value with its type: every type BlueZ's API uses here (`a{oa{sa{sv}}}`, `a{qv}`,
/// `ay`, `n`, `q`, `b`, `s`, `o`, `as`, `a{sv}`), and the rest of the basic ones.
///
/// Only a variant is boxed (`indirect`): the containers hold arrays, which are on the heap
/// already, and every value boxed made a `PropertiesChanged` of one RSSI eight allocations.
public enum DBusValue: Sendable, Hashable {
    case byte(UInt8)
    case bool(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// Elements of one type, given by its signature (so that an empty array still has one).
    case array(element: String, [DBusValue])
    /// A dictionary: `a{KV}`, entries in order.
    case dictionary(key: String, value: String, [DictEntry])
    indirect case variant(DBusValue)
    case structure([DBusValue])

    public struct DictEntry: Sendable, Hashable {
        public var key: DBusValue
        public var value: DBusValue

        public init(_ key: DBusValue, _ value: DBusValue) {
            self.key = key
            self.value = value
        }
    }

    /// The value's D-Bus type signature.
    public var signature: String {
        switch self {
        case .byte: "y"
        case .bool: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .array(let element, _): "a" + element
        case .dictionary(let k, let v, _): "a{" + k + v + "}"
        case .variant: "v"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        }
    }

    /// `a{sv}` from a Swift dictionary, keys sorted.
    public static func properties(_ values: [String: DBusValue]) -> DBusValue {
        .dictionary(key: "s", value: "v", values.keys.sorted().map { DictEntry(.string($0), .variant(values[$0]!)) })
    }

    /// The value inside a variant (or the value itself).
    public var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }

    /// The entries of a dictionary with string or object-path keys, by key.
    public var dictionary: [String: DBusValue]? {
        guard case .dictionary(_, _, let entries) = self else { return nil }
        var out: [String: DBusValue] = [:]
        for e in entries {
            switch e.key {
            case .string(let k), .objectPath(let k): out[k] = e.value
            default: return nil
            }
        }
        return out
    }

    /// Bytes, for `ay`.
    public var bytes: [UInt8]? {
        guard case .array("y", let elements) = self else { return nil }
        return elements.compactMap { if case .byte(let b) = $0 { b } else { nil } }
    }

    public var string: String? {
        switch self {
        case .string(let s), .objectPath(let s), .signature(let s): s
        case .variant(let v): v.string
        default: nil
        }
    }

    /// Any integer type, as Int.
    public var integer: Int? {
        switch self {
        case .byte(let v): Int(v)
        case .int16(let v): Int(v)
        case .uint16(let v): Int(v)
        case .int32(let v): Int(v)
        case .uint32(let v): Int(v)
        case .int64(let v): Int(v)
        case .uint64(let v): Int(exactly: v)
        case .variant(let v): v.integer
        default: nil
        }
    }

    public var bool: Bool? {
        switch self {
        case .bool(let b): b
        case .variant(let v): v.bool
        default: nil
        }
    }
}

/// The fields of a document: names to values.
public typealias DocumentData = [String: Value]

/// A value in a document, with Firestore's types.
///
/// Sentinels (`serverTimestamp`, `increment`, …) are accepted by writes only: they are resolved
/// against the stored document inside the write and never stored or returned.
public enum Value: Sendable, Hashable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case timestamp(Timestamp)
    case string(String)
    case bytes([UInt8])
    case array([Value])
    case map([String: Value])
    /// A write-only instruction, resolved when the write is applied.
    indirect case sentinel(Sentinel)

    /// The value of a field path inside this value, if it is a map that has it.
    public subscript(path: FieldPath) -> Value? {
        var current = self
        for segment in path.segments {
            guard case .map(let fields) = current, let next = fields[segment] else { return nil }
            current = next
        }
        return current
    }

    /// The number as a double, for integers and doubles.
    public var doubleValue: Double? {
        switch self {
        case .integer(let i): Double(i)
        case .double(let d): d
        default: nil
        }
    }

    /// The string, for strings.
    public var stringValue: String? {
        if case .string(let s) = self { s } else { nil }
    }

    /// The timestamp, for timestamps.
    public var timestampValue: Timestamp? {
        if case .timestamp(let t) = self { t } else { nil }
    }

    /// The elements, for arrays.
    public var arrayValue: [Value]? {
        if case .array(let a) = self { a } else { nil }
    }

    /// The fields, for maps.
    public var mapValue: [String: Value]? {
        if case .map(let m) = self { m } else { nil }
    }
}

/// A write instruction that takes its meaning from the stored document.
public enum Sentinel: Sendable, Hashable {
    /// The commit time of the write, taken from the store's clock.
    case serverTimestamp
    /// Adds to a number (a missing or non-numeric field counts as 0).
    indirect case increment(Value)
    /// Appends each element that is not already present.
    case arrayUnion([Value])
    /// Removes every instance of each element.
    case arrayRemove([Value])
    /// Removes the field (in `update` and merging `set`).
    case delete

    var name: String {
        switch self {
        case .serverTimestamp: "serverTimestamp"
        case .increment: "increment"
        case .arrayUnion: "arrayUnion"
        case .arrayRemove: "arrayRemove"
        case .delete: "delete"
        }
    }
}

extension Value {
    /// The write-time server timestamp sentinel.
    public static let serverTimestamp = Value.sentinel(.serverTimestamp)
    /// The field-deletion sentinel.
    public static let delete = Value.sentinel(.delete)
    /// Adds `n` to a numeric field.
    public static func increment(_ n: Int64) -> Value { .sentinel(.increment(.integer(n))) }
    /// Adds `n` to a numeric field.
    public static func increment(_ n: Double) -> Value { .sentinel(.increment(.double(n))) }
    /// Appends the elements not already present.
    public static func arrayUnion(_ elements: [Value]) -> Value { .sentinel(.arrayUnion(elements)) }
    /// Removes every instance of the elements.
    public static func arrayRemove(_ elements: [Value]) -> Value { .sentinel(.arrayRemove(elements)) }
}

extension Value: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: Value...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, Value)...) {
        self = .map(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

import Foundation
import TracerStore

/// The API's bodies (the generated `Components.Schemas` types) as JSON: encoded into the store's
/// `Value`s and written by the store's own JSON writer (keys sorted, one line), the same writer
/// the hot routes' bodies go through.
///
/// Why not `JSONEncoder`: the generated types encode an optional with `encodeIfPresent`, so a
/// required property that is nil (`"site": null`) is left out, which the document forbids
/// (apple/swift-openapi-generator#934). This encoder is the one small wrapper around that: a
/// type's `CodingKeys` that conform to `NullWhenNil` name the keys written as null when nil;
/// every other nil is left out, as the generator means. A test holds the lists to the document
/// (every required property that may be null, and only those).
public enum APIJSON {
    /// `body` as the store's values.
    public static func value(_ body: some Encodable) throws -> Value {
        let root = Node()
        try body.encode(to: ValueEncoder(node: root, codingPath: []))
        return root.value
    }

    /// `body` as JSON text.
    public static func string(_ body: some Encodable) throws -> String { JSON.string(try value(body)) }

    /// `body` as JSON bytes.
    public static func bytes(_ body: some Encodable) throws -> [UInt8] { Array(try string(body).utf8) }

    /// An answer's body as one of the generated types; nil when it is not that.
    public static func decode<T: Decodable>(_ type: T.Type, from body: [UInt8]) -> T? {
        try? JSONDecoder().decode(type, from: Data(body))
    }
}

/// A generated type's keys that are required and may be null: written as null when nil.
public protocol NullWhenNil: CodingKey {
    static var nullWhenNil: Set<String> { get }
}

/// A value being built: a scalar, a map or an array of nodes (containers hand out references).
private final class Node {
    enum Content {
        case empty
        case scalar(Value)
        case map([String: Node])
        case array([Node])
    }

    var content = Content.empty

    var value: Value {
        switch content {
        case .empty: .map([:])
        case .scalar(let v): v
        case .map(let fields): .map(fields.mapValues(\.value))
        case .array(let items): .array(items.map(\.value))
        }
    }

    func child(_ key: String) -> Node {
        let node = Node()
        if case .map(var fields) = content {
            content = .empty  // keeps `fields` uniquely referenced while it changes
            fields[key] = node
            content = .map(fields)
        } else {
            content = .map([key: node])
        }
        return node
    }

    func append() -> Node {
        let node = Node()
        if case .array(var items) = content {
            content = .empty
            items.append(node)
            content = .array(items)
        } else {
            content = .array([node])
        }
        return node
    }
}

private struct ValueEncoder: Encoder {
    let node: Node
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        // A second container at the same place adds to the first (a body beside another's keys).
        if case .map = node.content {} else { node.content = .map([:]) }
        return KeyedEncodingContainer(Keyed<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .array = node.content {} else { node.content = .array([]) }
        return Unkeyed(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { Single(node: node, codingPath: codingPath) }
}

/// Scalars as the store's values (every container's `encode` of a scalar comes here);
/// anything else through its own `encode(to:)`.
private func encode(_ value: some Encodable, into node: Node, at path: [any CodingKey]) throws {
    switch value {
    case let v as String: node.content = .scalar(.string(v))
    case let v as Bool: node.content = .scalar(.bool(v))
    case let v as Double: node.content = .scalar(.double(v))
    case let v as Float: node.content = .scalar(.double(Double(v)))
    case let v as any FixedWidthInteger: node.content = .scalar(.integer(Int64(clamping: v)))
    default: try value.encode(to: ValueEncoder(node: node, codingPath: path))
    }
}

private struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: Node
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws { node.child(key.stringValue).content = .scalar(.null) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try put(value, key) }

    private func put(_ value: some Encodable, _ key: Key) throws {
        try TracerAPI.encode(value, into: node.child(key.stringValue), at: codingPath + [key])
    }

    mutating func encode(_ value: Bool, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: String, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try put(value, key) }

    /// Every `encodeIfPresent` comes here: nil is left out unless the key is one written as null.
    private mutating func present<T: Encodable>(_ value: T?, _ key: Key) throws {
        if let value {
            try encode(value, forKey: key)
        } else if let keys = Key.self as? any NullWhenNil.Type, keys.nullWhenNil.contains(key.stringValue) {
            try encodeNil(forKey: key)
        }
    }

    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { try present(value, key) }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { try present(value, key) }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { try present(value, key) }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { try present(value, key) }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { try present(value, key) }
    mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws { try present(value, key) }
    mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws { try present(value, key) }
    mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { try present(value, key) }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { try present(value, key) }
    mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws { try present(value, key) }
    mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws { try present(value, key) }
    mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws { try present(value, key) }
    mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws { try present(value, key) }
    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws { try present(value, key) }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws { try present(value, key) }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type,
        forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        ValueEncoder(node: node.child(key.stringValue), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        ValueEncoder(node: node.child(key.stringValue), codingPath: codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { ValueEncoder(node: node, codingPath: codingPath) }
    mutating func superEncoder(forKey key: Key) -> any Encoder {
        ValueEncoder(node: node.child(key.stringValue), codingPath: codingPath + [key])
    }
}

private struct Unkeyed: UnkeyedEncodingContainer {
    let node: Node
    let codingPath: [any CodingKey]

    var count: Int {
        if case .array(let items) = node.content { return items.count }
        return 0
    }

    mutating func encodeNil() throws { node.append().content = .scalar(.null) }
    mutating func encode<T: Encodable>(_ value: T) throws { try put(value) }

    private func put(_ value: some Encodable) throws {
        try TracerAPI.encode(value, into: node.append(), at: codingPath)
    }

    mutating func encode(_ value: Bool) throws { try put(value) }
    mutating func encode(_ value: String) throws { try put(value) }
    mutating func encode(_ value: Double) throws { try put(value) }
    mutating func encode(_ value: Float) throws { try put(value) }
    mutating func encode(_ value: Int) throws { try put(value) }
    mutating func encode(_ value: Int8) throws { try put(value) }
    mutating func encode(_ value: Int16) throws { try put(value) }
    mutating func encode(_ value: Int32) throws { try put(value) }
    mutating func encode(_ value: Int64) throws { try put(value) }
    mutating func encode(_ value: UInt) throws { try put(value) }
    mutating func encode(_ value: UInt8) throws { try put(value) }
    mutating func encode(_ value: UInt16) throws { try put(value) }
    mutating func encode(_ value: UInt32) throws { try put(value) }
    mutating func encode(_ value: UInt64) throws { try put(value) }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<
        NestedKey
    > {
        ValueEncoder(node: node.append(), codingPath: codingPath).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        ValueEncoder(node: node.append(), codingPath: codingPath).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { ValueEncoder(node: node.append(), codingPath: codingPath) }
}

private struct Single: SingleValueEncodingContainer {
    let node: Node
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { node.content = .scalar(.null) }
    mutating func encode<T: Encodable>(_ value: T) throws { try put(value) }

    private func put(_ value: some Encodable) throws { try TracerAPI.encode(value, into: node, at: codingPath) }

    mutating func encode(_ value: Bool) throws { try put(value) }
    mutating func encode(_ value: String) throws { try put(value) }
    mutating func encode(_ value: Double) throws { try put(value) }
    mutating func encode(_ value: Float) throws { try put(value) }
    mutating func encode(_ value: Int) throws { try put(value) }
    mutating func encode(_ value: Int8) throws { try put(value) }
    mutating func encode(_ value: Int16) throws { try put(value) }
    mutating func encode(_ value: Int32) throws { try put(value) }
    mutating func encode(_ value: Int64) throws { try put(value) }
    mutating func encode(_ value: UInt) throws { try put(value) }
    mutating func encode(_ value: UInt8) throws { try put(value) }
    mutating func encode(_ value: UInt16) throws { try put(value) }
    mutating func encode(_ value: UInt32) throws { try put(value) }
    mutating func encode(_ value: UInt64) throws { try put(value) }
}

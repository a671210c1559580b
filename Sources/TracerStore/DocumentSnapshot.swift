import Synchronization

/// A document as read at one moment: its data, or nothing when it does not exist.
public struct DocumentSnapshot: Sendable, Equatable {
    /// Where the document lives.
    public let path: DocumentPath
    /// When the document was first written.
    public let createTime: Timestamp?
    /// When the document was last written.
    public let updateTime: Timestamp?
    /// The fields, as read; nil when the document does not exist.
    let fields: DocumentFields?

    /// The fields; nil when the document does not exist.
    public var data: DocumentData? { fields?.all }

    /// Whether the document exists.
    public var exists: Bool { fields != nil }

    /// The document's id.
    public var id: String { path.id }

    /// The value at a field path (only that value is decoded, until `data` is read).
    public subscript(field: FieldPath) -> Value? {
        guard let fields else { return nil }
        if field.isDocumentID { return .string(path.description) }
        return fields.value(at: field)
    }

    init(path: DocumentPath, stored: StoredDocument?) {
        self.path = path
        self.fields = stored.map { DocumentFields(decoded: $0.data) }
        self.createTime = stored.map { Timestamp(microseconds: $0.created) }
        self.updateTime = stored.map { Timestamp(microseconds: $0.updated) }
    }

    init(path: DocumentPath, fields: DocumentFields, created: Int64, updated: Int64) {
        self.path = path
        self.fields = fields
        self.createTime = Timestamp(microseconds: created)
        self.updateTime = Timestamp(microseconds: updated)
    }

    /// A snapshot from parts, for tests and fixtures.
    public init(path: DocumentPath, data: DocumentData?, createTime: Timestamp? = nil, updateTime: Timestamp? = nil) {
        self.path = path
        self.fields = data.map { DocumentFields(decoded: $0) }
        self.createTime = createTime
        self.updateTime = updateTime
    }

    public static func == (lhs: DocumentSnapshot, rhs: DocumentSnapshot) -> Bool {
        lhs.path == rhs.path && lhs.createTime == rhs.createTime && lhs.updateTime == rhs.updateTime
            && lhs.data == rhs.data
    }
}

/// A read document's fields: decoded on first use from its stored bytes (checked well-formed
/// when read), or given whole. A query's filters read a field or two of each candidate; most
/// callers read a few fields of each result; building every document's dictionary up front cost
/// a 5-minute window query most of its time (BENCHMARKS.md, "The store").
final class DocumentFields: Sendable {
    private struct State {
        var decoded: DocumentData?
        /// The last field looked up in the bytes: a query's filters and order read the same one.
        var last: (field: FieldPath, value: Value?)?
    }

    private let encoded: [UInt8]
    private let state: Mutex<State>

    init(decoded: DocumentData) {
        self.encoded = []
        self.state = Mutex(State(decoded: decoded))
    }

    /// From stored bytes, checked well formed (an error naming the document if they are not).
    /// Schema 1's JSON text is decoded at once.
    static func read(_ bytes: UnsafeBufferPointer<UInt8>, path: DocumentPath) throws -> DocumentFields {
        if bytes.first == DocumentCodec.documentTag {
            guard DocumentCodec.isWellFormed(bytes) else {
                // The decoder names what is wrong, and where.
                _ = try DocumentCodec.decode(bytes, path: path)
                throw StoreError(.sqlite, "a stored document cannot be read", context: path.description)
            }
            return DocumentFields(encoded: Array(bytes))
        }
        return DocumentFields(decoded: try DocumentCodec.decode(bytes, path: path))
    }

    private init(encoded: [UInt8]) {
        self.encoded = encoded
        self.state = Mutex(State())
    }

    var all: DocumentData {
        state.withLock { state in
            if let cached = state.decoded { return cached }
            // Checked well-formed when read: decoding cannot fail.
            let fields =
                (try? encoded.withUnsafeBufferPointer { try DocumentCodec.decode($0, path: .placeholder) }) ?? [:]
            state.decoded = fields
            return fields
        }
    }

    func value(at field: FieldPath) -> Value? {
        state.withLock { state in
            if let fields = state.decoded { return Value.map(fields)[field] }
            if let last = state.last, last.field == field { return last.value }
            let value = encoded.withUnsafeBufferPointer { DocumentCodec.value(in: $0, at: field.segments) }
            state.last = (field, value)
            return value
        }
    }
}

extension DocumentPath {
    static let placeholder = DocumentPath(validated: ["_", "_"])
}

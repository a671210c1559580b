/// A document as read at one moment: its data, or nothing when it does not exist.
public struct DocumentSnapshot: Sendable, Equatable {
    /// Where the document lives.
    public let path: DocumentPath
    /// The fields; nil when the document does not exist.
    public let data: DocumentData?
    /// When the document was first written.
    public let createTime: Timestamp?
    /// When the document was last written.
    public let updateTime: Timestamp?

    /// Whether the document exists.
    public var exists: Bool { data != nil }

    /// The document's id.
    public var id: String { path.id }

    /// The value at a field path.
    public subscript(field: FieldPath) -> Value? {
        guard let data else { return nil }
        if field.isDocumentID { return .string(path.description) }
        return Value.map(data)[field]
    }

    init(path: DocumentPath, stored: StoredDocument?) {
        self.path = path
        self.data = stored?.data
        self.createTime = stored.map { Timestamp(microseconds: $0.created) }
        self.updateTime = stored.map { Timestamp(microseconds: $0.updated) }
    }

    /// A snapshot from parts, for tests and fixtures.
    public init(path: DocumentPath, data: DocumentData?, createTime: Timestamp? = nil, updateTime: Timestamp? = nil) {
        self.path = path
        self.data = data
        self.createTime = createTime
        self.updateTime = updateTime
    }
}

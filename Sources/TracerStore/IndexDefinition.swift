/// A composite index that queries on a collection (or collection group) can use.
///
/// As in Firestore, an index holds only documents that have every one of its fields, and a
/// query uses it only when its filters and orders name every field of the index.
public struct IndexDefinition: Sendable, Hashable, CustomStringConvertible {
    /// Whether the index serves queries on one collection or on the whole collection group.
    public enum Scope: Int64, Sendable {
        case collection = 0
        case collectionGroup = 1
    }

    /// One field of the index and its direction.
    public struct Field: Sendable, Hashable {
        public var path: FieldPath
        public var descending: Bool

        public init(_ path: FieldPath, descending: Bool = false) {
            self.path = path
            self.descending = descending
        }
    }

    /// The collection id the index covers (`interactions`).
    public var collectionID: String
    public var scope: Scope
    public var fields: [Field]

    /// An index on a collection id's documents.
    public init(collectionID: String, scope: Scope = .collection, fields: [Field]) {
        self.collectionID = collectionID
        self.scope = scope
        self.fields = fields
    }

    /// An index on ascending fields.
    public init(collectionID: String, scope: Scope = .collection, _ fields: FieldPath...) {
        self.init(collectionID: collectionID, scope: scope, fields: fields.map { Field($0) })
    }

    var fieldsText: String {
        fields.map { "\($0.path) \($0.descending ? "desc" : "asc")" }.joined(separator: ", ")
    }

    /// `interactions (deviceId asc, start asc) [collection]`
    public var description: String {
        "\(collectionID) (\(fieldsText)) [\(scope == .collection ? "collection" : "group")]"
    }

    func validate() throws {
        guard !fields.isEmpty else {
            throw StoreError(.invalidQuery, "an index needs at least one field", context: description)
        }
        try PathRules.check(segment: collectionID, in: collectionID)
        if Set(fields.map(\.path)).count != fields.count {
            throw StoreError(.invalidQuery, "an index names a field twice", context: description)
        }
    }

    static func parseFields(_ text: String) throws -> [Field] {
        try text.split(separator: ",").map { part in
            let words = part.split(separator: " ")
            guard words.count == 2 else { throw StoreError(.sqlite, "corrupt index definition", context: text) }
            return Field(try FieldPath(parsing: String(words[0])), descending: words[1] == "desc")
        }
    }
}

/// A declared index with its row id, and its key function.
struct StoredIndex: Sendable {
    var id: Int64
    var definition: IndexDefinition

    /// The entry key for a document, or nil when the document lacks one of the fields.
    func key(for path: DocumentPath, data: DocumentData) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        if definition.scope == .collection {
            IndexKey.append(.string(path.parentText), to: &out)
        }
        let root = Value.map(data)
        for field in definition.fields {
            guard let v = root[field.path] else { return nil }
            IndexKey.append(v, descending: field.descending, to: &out)
        }
        // As in Firestore, the document name takes the direction of the index's last field.
        let nameDescending = definition.fields.last?.descending ?? false
        if definition.scope == .collection {
            IndexKey.appendName([path.id], descending: nameDescending, to: &out)
        } else {
            IndexKey.appendName(path.segments, descending: nameDescending, to: &out)
        }
        return out
    }
}

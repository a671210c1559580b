/// An index entry read without its document: the indexed values, decoded from the key, and the
/// document's path.
public struct IndexEntry: Sendable, Equatable {
    /// The values of the index's fields, in the index's order.
    public var values: [Value]
    /// The document's path; nil when the read was asked not to decode names.
    public var path: DocumentPath?
}

extension DocumentStore {
    /// The entries of a declared collection index whose first field lies in `lower...upper`, in
    /// key order, read from the index alone (no document is loaded or decoded): a covering read
    /// for code that needs only the indexed fields. The index's fields must be ascending.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func indexEntries(
        _ definition: IndexDefinition,
        in collection: CollectionPath,
        from lower: Value,
        through upper: Value,
        paths: Bool = true
    ) throws -> [IndexEntry] {
        guard definition.scope == .collection, definition.fields.allSatisfy({ !$0.descending }),
            collection.id == definition.collectionID
        else {
            throw StoreError(
                .invalidQuery,
                "a covering read needs an ascending collection index",
                context: "\(definition)"
            )
        }
        var prefix: [UInt8] = []
        IndexKey.append(.string(collection.description), to: &prefix)
        // Keys start with the parent path, then the fields, then the document's id.
        return try coveringRead(definition, prefix: prefix, from: lower, through: upper, skippingParent: true) {
            key in
            guard paths else { return .some(nil) }
            let skipped = Array(repeating: false, count: definition.fields.count + 1)
            return IndexKey.name(in: key, skipping: skipped, nameDescending: false).map {
                DocumentPath(validated: collection.segments + $0)
            }
        }
    }

    /// The entries of a declared collection-group index whose first field equals `equal` and
    /// whose second lies in `lower...upper`, in key order, read from the index alone, each with
    /// its document's path: a covering read of one value's range (one device's windows, say).
    /// The index's fields must be ascending, and at least two.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func groupIndexEntries(
        _ definition: IndexDefinition,
        equal: Value,
        from lower: Value,
        through upper: Value
    ) throws -> [IndexEntry] {
        guard definition.scope == .collectionGroup, definition.fields.count >= 2,
            definition.fields.allSatisfy({ !$0.descending })
        else {
            throw StoreError(
                .invalidQuery,
                "a covering group read needs an ascending collection-group index of two fields or more",
                context: "\(definition)"
            )
        }
        var prefix: [UInt8] = []
        IndexKey.append(equal, to: &prefix)
        // Keys start with the fields, then the document's whole path.
        return try coveringRead(definition, prefix: prefix, from: lower, through: upper, skippingParent: false) {
            key in
            let skipped = Array(repeating: false, count: definition.fields.count)
            return IndexKey.name(in: key, skipping: skipped, nameDescending: false).map {
                DocumentPath(validated: $0)
            }
        }
    }

    /// The entries of a declared index whose keys start with `prefix`, then a value in
    /// `lower...upper`: each key's field values decoded, and its path by `path` (nil: the entry
    /// cannot be read; `.some(nil)`: not asked for).
    private func coveringRead(
        _ definition: IndexDefinition,
        prefix: [UInt8],
        from lower: Value,
        through upper: Value,
        skippingParent: Bool,
        path: ([UInt8]) -> DocumentPath??
    ) throws -> [IndexEntry] {
        try pool.read { db in
            guard
                let index = try catalog.indexes(for: definition.collectionID, db).first(where: {
                    $0.definition == definition
                })
            else {
                throw StoreError(.invalidQuery, "no such index is declared", context: "\(definition)")
            }
            var low = prefix
            IndexKey.append(lower, to: &low)
            var high = prefix
            IndexKey.append(upper, to: &high)
            high.append(0xFF)  // every continuation of the upper value (tags and names sort below)
            let s = try db.statement(
                "SELECT key FROM index_entries WHERE idx = ?1 AND key >= ?2 AND key < ?3 ORDER BY key"
            )
            defer { s.reset() }
            s.bind(1, index.id)
            s.bindBlob(2, low)
            s.bindBlob(3, high)
            var out: [IndexEntry] = []
            let fields = definition.fields.count
            while try s.step() {
                let key = s.blob(0)
                var i = 0
                if skippingParent {
                    guard let next = IndexKey.skip(key, at: 0, inverted: false) else { continue }
                    i = next
                }
                var values: [Value] = []
                values.reserveCapacity(fields)
                for _ in 0..<fields {
                    if let (value, next) = IndexKey.decode(key, at: i) {
                        values.append(value)
                        i = next
                    } else if let next = IndexKey.skip(key, at: i, inverted: false) {
                        // A value a covering read does not decode (a map, an array, bytes: what
                        // a kiosk or an old store may have planted) reads as null, for the
                        // caller to skip and count: one such document must not stop every read
                        // of the range.
                        values.append(.null)
                        i = next
                    } else {
                        break
                    }
                }
                guard values.count == fields, let entryPath = path(key) else {
                    throw StoreError(.sqlite, "an index entry cannot be read", context: "\(definition)")
                }
                out.append(IndexEntry(values: values, path: entryPath))
            }
            return out
        }
    }
}

extension IndexKey {
    /// The value encoded (ascending) at `i`, and the offset after it: null, booleans, numbers
    /// (as doubles, or integers when exact), timestamps and strings; nil for the rest.
    static func decode(_ key: [UInt8], at i: Int) -> (Value, Int)? {
        guard i < key.count else { return nil }
        func uint64(_ j: Int) -> UInt64? {
            guard j + 8 <= key.count else { return nil }
            var v: UInt64 = 0
            for k in j..<(j + 8) { v = v << 8 | UInt64(key[k]) }
            return v
        }
        switch key[i] {
        case null:
            return (.null, i + 1)
        case bool:
            guard i + 1 < key.count else { return nil }
            return (.bool(key[i + 1] != 0), i + 2)
        case number:
            guard i + 1 < key.count else { return nil }
            if key[i + 1] == 0 { return (.double(.nan), i + 2) }
            guard let ordered = uint64(i + 2), let restBits = uint64(i + 10) else { return nil }
            let bits = ordered & (1 << 63) != 0 ? ordered & ~(1 << 63) : ~ordered
            let d = Double(bitPattern: bits)
            let rest = Int64(bitPattern: restBits ^ (1 << 63))
            if rest == 0 { return (.double(d), i + 18) }
            // An integer a double cannot hold exactly (see `append`).
            if d >= 9_223_372_036_854_775_808.0 { return (.integer(rest &- Int64.min), i + 18) }
            return (.integer(Int64(d) &+ rest), i + 18)
        case timestamp:
            guard let raw = uint64(i + 1) else { return nil }
            return (.timestamp(Timestamp(microseconds: Int64(bitPattern: raw ^ (1 << 63)))), i + 9)
        case string:
            var bytes: [UInt8] = []
            var j = i + 1
            while j < key.count {
                let b = key[j]
                if b == 0 {
                    guard j + 1 < key.count else { return nil }
                    if key[j + 1] == 1 { return (.string(String(decoding: bytes, as: UTF8.self)), j + 2) }
                    bytes.append(0)
                    j += 2
                } else {
                    bytes.append(b)
                    j += 1
                }
            }
            return nil
        default:
            return nil
        }
    }
}

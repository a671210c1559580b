/// How writes turn a stored document and the caller's data into the new document.
enum WriteRules {
    static let maxDocumentBytes = 1_048_576
    static let maxDepth = 20

    /// A full `set`: the caller's data, sentinels resolved against the old document.
    static func set(
        _ data: DocumentData,
        old: DocumentData?,
        now: Timestamp,
        path: DocumentPath
    ) throws(StoreError)
        -> DocumentData
    {
        var field: [String] = []
        // The check says whether it met a sentinel: one walk over the data, not two (perf).
        guard try checkInput(.map(data), field: &field, path: path, allowDelete: false, inArray: false) else {
            return data
        }
        var result = DocumentData()
        for (key, value) in data {
            result[key] = resolve(value, old: old.flatMap { Value.map($0)[FieldPath(validated: [key])] }, now: now)
        }
        return result
    }

    /// Whether resolving the data needs the stored document (increments and array edits do;
    /// server timestamps do not).
    static func dependsOnStoredValues(_ data: DocumentData) -> Bool {
        data.values.contains(where: dependsOnStoredValues)
    }

    private static func dependsOnStoredValues(_ value: Value) -> Bool {
        switch value {
        case .sentinel(.serverTimestamp): false
        case .sentinel: true
        case .map(let m): m.values.contains(where: dependsOnStoredValues)
        default: false
        }
    }

    /// A merging `set`: every leaf of the caller's data replaces the old value at its path.
    static func merge(
        _ data: DocumentData,
        into old: DocumentData?,
        now: Timestamp,
        path: DocumentPath
    )
        throws(StoreError) -> DocumentData
    {
        try checkInput(.map(data), field: [], path: path, allowDelete: true)
        var result = old ?? [:]
        mergeFields(data, into: &result, oldRoot: old ?? [:], prefix: [], now: now)
        return result
    }

    private static func mergeFields(
        _ data: DocumentData,
        into result: inout DocumentData,
        oldRoot: DocumentData,
        prefix: [String],
        now: Timestamp
    ) {
        for (key, value) in data {
            let path = prefix + [key]
            if case .map(let inner) = value, !inner.isEmpty {
                mergeFields(inner, into: &result, oldRoot: oldRoot, prefix: path, now: now)
            } else {
                let old = Value.map(oldRoot)[FieldPath(validated: path)]
                assign(resolve(value, old: old, now: now), at: path[...], in: &result)
            }
        }
    }

    /// An `update`: each field path replaced whole, sentinels resolved.
    static func update(
        _ fields: [FieldPath: Value],
        old: DocumentData,
        now: Timestamp,
        path: DocumentPath
    )
        throws(StoreError) -> DocumentData
    {
        let paths = fields.keys.sorted { $0.segments.lexicographicallyPrecedes($1.segments) }
        for (a, b) in zip(paths, paths.dropFirst()) where a.isPrefix(of: b) {
            throw StoreError(
                .invalidFieldPath,
                "field paths '\(a)' and '\(b)' overlap in one update",
                context: path.description
            )
        }
        var result = old
        for fieldPath in paths {
            let value = fields[fieldPath]!
            if fieldPath.isDocumentID {
                throw StoreError(.invalidFieldPath, "__name__ cannot be written", context: path.description)
            }
            try checkInput(value, field: fieldPath.segments, path: path, allowDelete: true)
            let resolved = resolve(value, old: Value.map(old)[fieldPath], now: now)
            assign(resolved, at: fieldPath.segments[...], in: &result)
        }
        return result
    }

    /// Sets (or with nil removes) the value at a path, creating maps on the way.
    private static func assign(_ value: Value?, at path: ArraySlice<String>, in fields: inout DocumentData) {
        let key = path.first!
        if path.count == 1 {
            fields[key] = value
            return
        }
        var inner: DocumentData
        if case .map(let m)? = fields[key] {
            inner = m
        } else {
            if value == nil { return }  // deleting inside something that is not a map: nothing to do
            inner = [:]
        }
        fields[key] = nil  // drop the reference so the nested edit does not copy the map
        assign(value, at: path.dropFirst(), in: &inner)
        fields[key] = .map(inner)
    }

    /// A value with its sentinels applied; nil means "delete the field".
    static func resolve(_ value: Value, old: Value?, now: Timestamp) -> Value? {
        switch value {
        case .sentinel(.serverTimestamp): return .timestamp(now)
        case .sentinel(.delete): return nil
        case .sentinel(.increment(let n)):
            switch (old, n) {
            case (.integer(let a)?, .integer(let b)):
                let (sum, overflow) = a.addingReportingOverflow(b)
                return .integer(overflow ? (b > 0 ? Int64.max : Int64.min) : sum)
            case (.integer(let a)?, .double(let b)): return .double(Double(a) + b)
            case (.double(let a)?, _): return .double(a + (n.doubleValue ?? 0))
            default: return n
            }
        case .sentinel(.arrayUnion(let elements)):
            var array: [Value] = if case .array(let a)? = old { a } else { [] }
            for e in elements where !array.contains(where: { $0.isEquivalent(to: e) }) { array.append(e) }
            return .array(array)
        case .sentinel(.arrayRemove(let elements)):
            guard case .array(let a)? = old else { return .array([]) }
            return .array(a.filter { v in !elements.contains { $0.isEquivalent(to: v) } })
        case .map(let fields):
            var out = DocumentData()
            for (k, v) in fields {
                let oldInner: Value? = if case .map(let m)? = old { m[k] } else { nil }
                out[k] = resolve(v, old: oldInner, now: now)
            }
            return .map(out)
        default:
            return value
        }
    }

    /// Rejects what Firestore rejects in written data, naming the field.
    static func checkInput(
        _ value: Value,
        field: [String],
        path: DocumentPath,
        allowDelete: Bool,
        inArray: Bool = false
    )
        throws(StoreError)
    {
        var field = field
        try checkInput(value, field: &field, path: path, allowDelete: allowDelete, inArray: inArray)
    }

    /// The check, with the field's path as one array grown and shrunk along the way (perf: an
    /// array made for each field of each document written showed in a write's profile). True
    /// when the value holds a sentinel (none can be inside an array: that is refused).
    @discardableResult
    private static func checkInput(
        _ value: Value,
        field: inout [String],
        path: DocumentPath,
        allowDelete: Bool,
        inArray: Bool
    )
        throws(StoreError) -> Bool
    {
        func fail(_ why: String) -> StoreError {
            let where_ = field.isEmpty ? path.description : "\(path) field \(FieldPath(validated: field))"
            return StoreError(.invalidValue, why, context: where_)
        }
        if field.count > maxDepth { throw fail("values are nested more than \(maxDepth) levels") }
        var sentinel = false
        switch value {
        case .map(let fields):
            for (k, v) in fields {
                if k.isEmpty { throw fail("a field name is empty") }
                if PathRules.isReserved(k) { throw fail("field names of the form __x__ are reserved ('\(k)')") }
                if k.utf8.count > PathRules.maxIDBytes { throw fail("a field name is longer than 1,500 bytes") }
                field.append(k)
                defer { field.removeLast() }
                if try checkInput(v, field: &field, path: path, allowDelete: allowDelete && !inArray, inArray: inArray)
                {
                    sentinel = true
                }
            }
        case .array(let elements):
            for e in elements {
                if case .array = e { throw fail("an array may not directly contain an array") }
                if case .sentinel(let s) = e { throw fail("\(s.name) may not be used inside an array") }
                try checkInput(e, field: &field, path: path, allowDelete: false, inArray: true)
            }
        case .sentinel(let s):
            if inArray { throw fail("\(s.name) may not be used inside an array") }
            sentinel = true
            switch s {
            case .delete where !allowDelete: throw fail("delete is only for update and merging set")
            case .increment(let n) where n.doubleValue == nil: throw fail("increment needs a number")
            case .arrayUnion(let e), .arrayRemove(let e):
                for v in e { try checkInput(v, field: &field, path: path, allowDelete: false, inArray: true) }
            default: break
            }
        case .double(let d) where d.isNaN || d.isInfinite:
            break
        default:
            break
        }
        return sentinel
    }

    /// Firestore's storage size of a document; the limit is 1 MiB.
    static func size(of data: DocumentData, path: DocumentPath) -> Int {
        nameSize(path) + data.reduce(32) { $0 + $1.key.utf8.count + 1 + size(of: $1.value) }
    }

    static func size(of value: Value) -> Int {
        switch value {
        case .null, .bool: 1
        case .integer, .double, .timestamp: 8
        case .string(let s): s.utf8.count + 1
        case .bytes(let b): b.count
        case .array(let a): a.reduce(0) { $0 + size(of: $1) }
        case .map(let m): m.reduce(0) { $0 + $1.key.utf8.count + 1 + size(of: $1.value) }
        case .sentinel: 8
        }
    }

    /// A document's stored form (`DocumentCodec`), refused if the document is over Firestore's
    /// 1 MiB. Firestore's size of any value is at most four times its stored form's length: an
    /// integer or a timestamp counts 8 and is stored in at least 2 bytes, a field name counts its
    /// length + 1 and is stored with a length of at least 1 byte, and nothing else counts more
    /// than it is stored in. So a document with `name + 32 + 4 × stored` within the limit is
    /// within it, and its size is worked out only when the stored form is long enough to matter:
    /// that walk was 5% of a write's Swift time (`perf record -g` on `tracer-bench store`), for
    /// documents of a few hundred bytes that can never reach 1 MiB. `WriteTests` hold the bound
    /// on random documents.
    static func stored(_ data: DocumentData, path: DocumentPath) throws(StoreError) -> [UInt8] {
        let encoded = DocumentCodec.encode(data)
        if nameSize(path) + 32 + 4 * encoded.count <= maxDocumentBytes { return encoded }
        let size = size(of: data, path: path)
        if size > maxDocumentBytes {
            throw StoreError(
                .tooLarge,
                "the document is \(size) bytes, over the 1 MiB limit",
                context: path.description
            )
        }
        return encoded
    }

    static func nameSize(_ path: DocumentPath) -> Int { path.segments.reduce(16) { $0 + $1.utf8.count + 1 } }
}

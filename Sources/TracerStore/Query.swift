/// A query over one collection or a collection group, with Firestore's semantics.
///
/// ```swift
/// let recent = Query(collection: try CollectionPath("beacons/b-101/interactions"))
///     .where("start", .greaterThanOrEqual, .timestamp(since))
///     .order(by: "start")
///     .limit(100)
/// ```
public struct Query: Sendable, Hashable {
    /// What the query reads.
    public enum Source: Sendable, Hashable, CustomStringConvertible {
        /// One collection.
        case collection(CollectionPath)
        /// Every collection with this id, at any depth.
        case group(String)

        var collectionID: String {
            switch self {
            case .collection(let c): c.id
            case .group(let id): id
            }
        }

        public var description: String {
            switch self {
            case .collection(let c): c.description
            case .group(let id): "group \(id)"
            }
        }

        var scannedDescription: String {
            switch self {
            case .collection(let c): "collection \(c)"
            case .group(let id): "every collection named \(id)"
            }
        }
    }

    /// One sort key.
    public struct Order: Sendable, Hashable {
        public var field: FieldPath
        public var descending: Bool

        public init(_ field: FieldPath, descending: Bool = false) {
            self.field = field
            self.descending = descending
        }
    }

    /// A position in the query's order: values for its order fields, in order.
    public struct Cursor: Sendable, Hashable {
        public var values: [Value]
        /// `startAt`/`endAt` include documents at the position; `startAfter`/`endBefore` do not.
        public var inclusive: Bool

        public init(values: [Value], inclusive: Bool) {
            self.values = values
            self.inclusive = inclusive
        }
    }

    public var source: Source
    /// Filters that must all match.
    public var filters: [Filter] = []
    /// Explicit sort keys; Firestore's implicit ones are added when the query runs.
    public var orders: [Order] = []
    public var limit: Int?
    /// Whether `limit` keeps the last documents rather than the first.
    public var limitToLast = false
    public var start: Cursor?
    public var end: Cursor?

    /// All documents of a collection.
    public init(collection: CollectionPath) {
        self.source = .collection(collection)
    }

    /// All documents of every collection with this id (a collection-group query).
    public init(collectionGroup id: String) {
        self.source = .group(id)
    }

    /// Adds a filter on a field.
    public func `where`(_ field: FieldPath, _ op: Filter.Operator, _ value: Value) -> Query {
        self.where(.field(field, op, value))
    }

    /// Adds a filter (which may be an `or` of others).
    public func `where`(_ filter: Filter) -> Query {
        var q = self
        q.filters.append(filter)
        return q
    }

    /// Adds a sort key.
    public func order(by field: FieldPath, descending: Bool = false) -> Query {
        var q = self
        q.orders.append(Order(field, descending: descending))
        return q
    }

    /// Keeps the first `n` documents.
    public func limit(_ n: Int) -> Query {
        var q = self
        q.limit = n
        q.limitToLast = false
        return q
    }

    /// Keeps the last `n` documents (needs an order).
    public func limit(toLast n: Int) -> Query {
        var q = self
        q.limit = n
        q.limitToLast = true
        return q
    }

    /// Starts at documents whose order values are at or after `values`.
    public func start(at values: Value...) -> Query { with(start: Cursor(values: values, inclusive: true)) }
    /// Starts after documents whose order values equal `values`.
    public func start(after values: Value...) -> Query { with(start: Cursor(values: values, inclusive: false)) }
    /// Ends at documents whose order values are at `values`.
    public func end(at values: Value...) -> Query { with(end: Cursor(values: values, inclusive: true)) }
    /// Ends before documents whose order values equal `values`.
    public func end(before values: Value...) -> Query { with(end: Cursor(values: values, inclusive: false)) }

    private func with(start: Cursor? = nil, end: Cursor? = nil) -> Query {
        var q = self
        if let start { q.start = start }
        if let end { q.end = end }
        return q
    }
}

/// A condition on documents.
public indirect enum Filter: Sendable, Hashable {
    /// Firestore's comparison operators.
    public enum Operator: String, Sendable, CaseIterable {
        case equal = "=="
        case notEqual = "!="
        case lessThan = "<"
        case lessThanOrEqual = "<="
        case greaterThan = ">"
        case greaterThanOrEqual = ">="
        case `in` = "in"
        case notIn = "not-in"
        case arrayContains = "array-contains"
        case arrayContainsAny = "array-contains-any"

        /// `<`, `<=`, `>` or `>=`: a range an index scans.
        var isRange: Bool {
            switch self {
            case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual: true
            default: false
            }
        }

        var isInequality: Bool {
            switch self {
            case .notEqual, .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual, .notIn: true
            default: false
            }
        }
    }

    case field(FieldPath, Operator, Value)
    case and([Filter])
    case or([Filter])

    /// Whether a document matches. A filter on a field never matches a document without it
    /// (`!=` and `not-in` included); ranges match only values of the same type.
    public func matches(_ doc: DocumentSnapshot) -> Bool {
        switch self {
        case .and(let filters): return filters.allSatisfy { $0.matches(doc) }
        case .or(let filters): return filters.contains { $0.matches(doc) }
        case .field(let path, let op, let value):
            guard let x = doc[path] else { return false }
            switch op {
            case .equal: return x.isEquivalent(to: value)
            case .notEqual: return !x.isEquivalent(to: value)
            case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual:
                guard x.typeOrder == value.typeOrder else { return false }
                let c = Value.compare(x, value)
                switch op {
                case .lessThan: return c < 0
                case .lessThanOrEqual: return c <= 0
                case .greaterThan: return c > 0
                default: return c >= 0
                }
            case .in:
                guard case .array(let options) = value else { return false }
                return options.contains { x.isEquivalent(to: $0) }
            case .notIn:
                guard case .array(let options) = value, !options.contains(.null) else { return false }
                return !options.contains { x.isEquivalent(to: $0) }
            case .arrayContains:
                guard case .array(let elements) = x else { return false }
                return elements.contains { $0.isEquivalent(to: value) }
            case .arrayContainsAny:
                guard case .array(let elements) = x, case .array(let options) = value else { return false }
                return elements.contains { e in options.contains { e.isEquivalent(to: $0) } }
            }
        }
    }

    /// The field filters that every match must pass (those not under an `or`).
    var conjuncts: [(FieldPath, Operator, Value)] {
        switch self {
        case .field(let f, let op, let v): [(f, op, v)]
        case .and(let filters): filters.flatMap(\.conjuncts)
        case .or(let filters): filters.count == 1 ? filters[0].conjuncts : []
        }
    }

    var allFields: [(FieldPath, Operator, Value)] {
        switch self {
        case .field(let f, let op, let v): [(f, op, v)]
        case .and(let filters), .or(let filters): filters.flatMap(\.allFields)
        }
    }

    func validate() throws {
        switch self {
        case .and(let filters), .or(let filters):
            guard !filters.isEmpty else {
                throw StoreError(.invalidQuery, "an and/or filter needs at least one filter")
            }
            for f in filters { try f.validate() }
        case .field(let path, let op, let value):
            if case .sentinel(let s) = value {
                throw StoreError(.invalidQuery, "\(s.name) cannot be used in a filter", context: path.description)
            }
            switch op {
            case .in, .notIn, .arrayContainsAny:
                guard case .array(let options) = value, !options.isEmpty else {
                    throw StoreError(
                        .invalidQuery,
                        "'\(op.rawValue)' needs a non-empty array",
                        context: path.description
                    )
                }
                guard options.count <= 30 else {
                    throw StoreError(
                        .invalidQuery,
                        "'\(op.rawValue)' takes at most 30 values",
                        context: path.description
                    )
                }
            default: break
            }
        }
    }
}

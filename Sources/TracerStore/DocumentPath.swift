/// The path of a document: collection/document pairs, e.g. `beacons/b-101/interactions/Xy3`.
public struct DocumentPath: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The segments, alternating collection id and document id; always an even count.
    public let segments: [String]
    /// The parent collection's path as text, made once: every write and read binds it.
    let parentText: String

    /// Parses and validates a document path.
    public init(_ path: String) throws(StoreError) {
        let segments = try PathRules.split(path)
        guard segments.count % 2 == 0 else {
            throw StoreError(
                .invalidPath,
                "a document path needs an even number of segments, this one names a collection",
                context: path
            )
        }
        self.segments = segments
        self.parentText = segments.dropLast().joined(separator: "/")
    }

    init(validated segments: [String]) {
        self.segments = segments
        self.parentText = segments.dropLast().joined(separator: "/")
    }

    init(validated segments: [String], parentText: String) {
        self.segments = segments
        self.parentText = parentText
    }

    init(parentText: String, id: String) {
        var segments = PathRules.segments(Substring(parentText))
        segments.append(id)
        self.segments = segments
        self.parentText = parentText
    }

    public static func == (lhs: DocumentPath, rhs: DocumentPath) -> Bool { lhs.segments == rhs.segments }
    public func hash(into hasher: inout Hasher) { hasher.combine(segments) }

    /// The document's id, its last segment.
    public var id: String { segments[segments.count - 1] }

    /// The collection that holds the document.
    public var parent: CollectionPath { CollectionPath(validated: Array(segments.dropLast())) }

    /// The id of the collection that holds the document.
    public var collectionID: String { segments[segments.count - 2] }

    /// A subcollection of this document.
    public func collection(_ id: String) throws(StoreError) -> CollectionPath {
        try PathRules.check(segment: id, in: description + "/" + id)
        return CollectionPath(validated: segments + [id])
    }

    /// The path as text.
    public var description: String { segments.joined(separator: "/") }

    /// Firestore's order for document names: segment by segment.
    public static func < (lhs: DocumentPath, rhs: DocumentPath) -> Bool {
        for (l, r) in zip(lhs.segments, rhs.segments) where l != r {
            return utf8Less(l, r)
        }
        return lhs.segments.count < rhs.segments.count
    }
}

/// The path of a collection: `beacons`, or `beacons/b-101/interactions`.
public struct CollectionPath: Sendable, Hashable, CustomStringConvertible {
    /// The segments; always an odd count.
    public let segments: [String]

    /// Parses and validates a collection path.
    public init(_ path: String) throws(StoreError) {
        let segments = try PathRules.split(path)
        guard segments.count % 2 == 1 else {
            throw StoreError(
                .invalidPath,
                "a collection path needs an odd number of segments, this one names a document",
                context: path
            )
        }
        self.segments = segments
        self.description = segments.joined(separator: "/")
    }

    init(validated segments: [String]) {
        self.segments = segments
        self.description = segments.joined(separator: "/")
    }

    /// The collection id, its last segment.
    public var id: String { segments[segments.count - 1] }

    /// A document in this collection.
    public func document(_ id: String) throws(StoreError) -> DocumentPath {
        try PathRules.check(segment: id, in: description + "/" + id)
        return DocumentPath(validated: segments + [id])
    }

    /// A document with a new random 20-character id.
    public func newDocument() -> DocumentPath {
        DocumentPath(validated: segments + [DocumentID.random()])
    }

    /// The path as text: joined once, not at each use (a query names it to plan and to scan).
    public let description: String
}

/// Firestore's limits on paths and ids.
enum PathRules {
    static let maxIDBytes = 1500
    /// Firestore allows subcollections 100 deep: 100 collection/document pairs.
    static let maxSegments = 200

    static func split(_ path: String) throws(StoreError) -> [String] {
        var text = Substring(path)
        if text.hasPrefix("/") { text = text.dropFirst() }
        if text.hasSuffix("/") { text = text.dropLast() }
        guard !text.isEmpty else { throw StoreError(.invalidPath, "the path is empty", context: "'\(path)'") }
        let segments = Self.segments(text)
        guard segments.count <= maxSegments else {
            throw StoreError(
                .invalidPath,
                "the path is deeper than 100 collections (\(segments.count) segments)",
                context: String(path.prefix(80)) + "…"
            )
        }
        for s in segments { try check(segment: s, in: path) }
        return segments
    }

    /// A path's segments, empty ones kept. A path of ASCII (as every path tracer makes) is split
    /// by its bytes, where splitting by its characters (which a combining mark after a '/' would
    /// join to it) took half of a path's parse once each id's check was one pass (perf on
    /// `tracer-bench campus parse`); any other path by its characters, as it was stored.
    static func segments(_ text: Substring) -> [String] {
        guard text.utf8.allSatisfy({ $0 < 0x80 }) else {
            return text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        }
        return text.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map {
            String(Substring($0))
        }
    }

    /// Checks one id of a path. One pass over its bytes, and the error's context made only for
    /// an error: `contains("/")` went through Foundation's `NSString.range(of:)`, and the context
    /// counted the whole path's characters for every id, so that parsing a path of four segments
    /// took about 55,000 instructions (callgrind on `tracer-bench store`), and the server parsed
    /// a kiosk's batch in 1.6 × the time of its JSON alone; 1.2–1.3 × after, with the split below
    /// (`tracer-bench campus parse`, BENCHMARKS.md).
    static func check(segment: String, in path: @autoclosure () -> String) throws(StoreError) {
        func shown() -> String {
            let path = path()
            return path.count > 120 ? String(path.prefix(120)) + "…" : path
        }
        let bytes = segment.utf8.count
        var slash = false
        var control = false
        for b in segment.utf8 {
            if b == UInt8(ascii: "/") {
                slash = true
            } else if b < 0x20 || b == 0x7F {
                control = true
            }
        }
        if bytes == 0 { throw StoreError(.invalidPath, "the path has an empty segment", context: shown()) }
        if slash { throw StoreError(.invalidPath, "an id may not contain '/'", context: shown()) }
        // NUL ends a C string (and PostgreSQL's text refuses it); the other control characters
        // make ids nobody can type or print.
        if control {
            throw StoreError(
                .invalidPath,
                "an id may not contain control characters",
                context: shown().debugDescription
            )
        }
        if bytes <= 2, segment == "." || segment == ".." {
            throw StoreError(.invalidPath, "'\(segment)' is not a valid id", context: shown())
        }
        if bytes > maxIDBytes {
            throw StoreError(.invalidPath, "an id is longer than 1,500 bytes (\(bytes))", context: shown())
        }
        if isReserved(segment) {
            throw StoreError(.invalidPath, "ids of the form __x__ are reserved ('\(segment)')", context: shown())
        }
    }

    /// Firestore reserves `__.*__` for ids and field names.
    static func isReserved(_ name: String) -> Bool {
        name.utf8.count >= 4 && name.hasPrefix("__") && name.hasSuffix("__")
    }
}

/// Random document ids: 20 characters from [A-Za-z0-9], about 119 bits.
public enum DocumentID {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)

    /// A new random id.
    public static func random() -> String {
        var g = SystemRandomNumberGenerator()
        var bytes = [UInt8](repeating: 0, count: 20)
        for i in 0..<20 { bytes[i] = alphabet[Int(g.next(upperBound: UInt64(alphabet.count)))] }
        return String(decoding: bytes, as: UTF8.self)
    }
}

import Foundation

/// A path to a field inside a document: `beacon.major`, or `` `odd.name`.x `` with backticks around
/// segments that are not plain identifiers.
public struct FieldPath: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The field names from the outside in.
    public let segments: [String]

    /// The document's name, for ordering and filtering by path (`__name__`).
    public static let documentID = FieldPath(validated: ["__name__"])

    /// A field path from its segments, taken as they are (no quoting).
    public init(_ segments: [String]) throws(StoreError) {
        guard !segments.isEmpty, segments.allSatisfy({ !$0.isEmpty }) else {
            throw StoreError(
                .invalidFieldPath,
                "a field path needs non-empty names",
                context: segments.joined(separator: ".")
            )
        }
        self.segments = segments
    }

    init(validated segments: [String]) {
        self.segments = segments
    }

    /// Parses `a.b.c`, where a segment that is not `[A-Za-z_][A-Za-z0-9_]*` is written in backticks
    /// (a backtick or backslash inside is escaped with a backslash).
    public init(parsing text: String) throws(StoreError) {
        var segments: [String] = []
        var current = ""
        var quoted = false
        var wasQuoted = false
        var chars = text.makeIterator()
        func fail(_ why: String) -> StoreError {
            StoreError(.invalidFieldPath, "invalid field path: \(why)", context: text)
        }
        while let c = chars.next() {
            if quoted {
                if c == "\\" {
                    guard let n = chars.next() else { throw fail("a backslash ends the path") }
                    current.append(n)
                } else if c == "`" {
                    quoted = false
                } else {
                    current.append(c)
                }
            } else if c == "`" {
                guard current.isEmpty, !wasQuoted else { throw fail("a backtick in the middle of a name") }
                quoted = true
                wasQuoted = true
            } else if c == "." {
                guard !current.isEmpty else { throw fail("an empty name") }
                segments.append(current)
                current = ""
                wasQuoted = false
            } else {
                guard !wasQuoted else { throw fail("text after a closing backtick") }
                guard c.isASCII, c.isLetter || c.isNumber || c == "_" else {
                    throw fail("'\(c)' needs the name in backticks")
                }
                if current.isEmpty, c.isNumber { throw fail("a plain name may not start with a digit; use backticks") }
                current.append(c)
            }
        }
        guard !quoted else { throw fail("an unclosed backtick") }
        guard !current.isEmpty else { throw fail("an empty name") }
        segments.append(current)
        self.segments = segments
    }

    public init(stringLiteral value: String) {
        do { try self.init(parsing: value) } catch { preconditionFailure("invalid field path literal: \(error)") }
    }

    /// Whether this is `__name__`, the document's path. (Not `segments == ["__name__"]`, which
    /// builds an array at each call: a query asks it of every order several times.)
    public var isDocumentID: Bool { segments.count == 1 && segments[0] == "__name__" }

    /// The canonical text: plain names as they are, others in backticks.
    public var description: String {
        segments.map { s in
            let plain =
                s.first.map { !$0.isNumber } == true
                && s.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
            if plain { return s }
            return "`" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "`", with: "\\`") + "`"
        }.joined(separator: ".")
    }

    /// Whether `other` lies inside this path (or is it).
    func isPrefix(of other: FieldPath) -> Bool {
        other.segments.count >= segments.count && Array(other.segments.prefix(segments.count)) == segments
    }
}

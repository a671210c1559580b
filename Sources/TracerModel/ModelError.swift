import TracerStore

/// A stored document that does not have the shape its collection's model needs.
public struct ModelError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public enum Code: String, Sendable {
        /// A field the model needs is missing or of the wrong type.
        case missingField
        /// A field holds a value outside its set (a status, a role).
        case badValue
    }

    public var code: Code
    /// The document's path.
    public var path: String
    /// The field concerned.
    public var field: String
    public var message: String

    public init(_ code: Code, path: DocumentPath, field: String, _ message: String) {
        self.code = code
        self.path = path.description
        self.field = field
        self.message = message
    }

    public var description: String { "\(path): \(field): \(message)" }
}

/// Reading typed fields out of a stored document, each failure naming the document and field.
struct FieldReader {
    let path: DocumentPath
    let data: DocumentData

    init(_ snapshot: DocumentSnapshot) throws(ModelError) {
        guard let data = snapshot.data else {
            throw ModelError(.missingField, path: snapshot.path, field: "(document)", "the document does not exist")
        }
        self.path = snapshot.path
        self.data = data
    }

    func string(_ field: String) throws(ModelError) -> String {
        guard case .string(let s)? = data[field] else { throw missing(field, "a string") }
        return s
    }

    func time(_ field: String) throws(ModelError) -> Timestamp {
        guard let t = data[field]?.timestampValue else { throw missing(field, "a timestamp") }
        guard t.isInRange else {
            throw ModelError(.badValue, path: path, field: field, "the time lies outside years 0001 to 9999")
        }
        return t
    }

    func double(_ field: String) throws(ModelError) -> Double {
        guard let d = data[field]?.doubleValue else { throw missing(field, "a number") }
        return d
    }

    func optionalTime(_ field: String) -> Timestamp? { data[field]?.timestampValue.flatMap { $0.isInRange ? $0 : nil } }
    func optionalString(_ field: String) -> String? { data[field]?.stringValue }
    func optionalDouble(_ field: String) -> Double? { data[field]?.doubleValue }

    func integer(_ field: String, default value: Int = 0) -> Int {
        guard let d = data[field]?.doubleValue, d.isFinite else { return value }
        return Int(saturating: d)
    }

    func bool(_ field: String) -> Bool { data[field] == .bool(true) }

    func `enum`<E: RawRepresentable>(_ field: String, _: E.Type) throws(ModelError) -> E where E.RawValue == String {
        let raw = try string(field)
        guard let value = E(rawValue: raw) else {
            throw ModelError(.badValue, path: path, field: field, "'\(raw.prefix(40))' is not one of its values")
        }
        return value
    }

    func missing(_ field: String, _ kind: String) -> ModelError {
        ModelError(.missingField, path: path, field: field, "missing, or not \(kind)")
    }
}

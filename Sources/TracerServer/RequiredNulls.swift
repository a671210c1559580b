import Foundation
import TracerAPI
import TracerStore
import Yams

/// Where the API's document requires a key that may be null, for each operation's answers: the
/// generated types leave a nil optional out (apple/swift-openapi-generator#934), and the
/// generated server answers with them, so `AnswerMiddleware` puts these keys in as null where
/// they are missing. Found from the document itself ($refs, allOf and nullable wrappers
/// followed), once at start.
struct RequiredNulls: Sendable {
    /// By operation id, then by status code.
    let byOperation: [String: [Int: NullPlaces]]
    /// Every header the document declares in an answer (`ETag`, `Content-Disposition`, …).
    let headers: Set<String>

    func places(_ operationID: String, _ status: Int) -> NullPlaces? { byOperation[operationID]?[status] }

    /// From the document the server serves.
    static let served: RequiredNulls = {
        // The document is part of the binary; OpenAPITests reads it the same way.
        let text = String(decoding: PackageResources.openapi_yaml, as: UTF8.self)
        let root = (try? Yams.load(yaml: text)) as? [String: Any] ?? [:]
        return RequiredNulls(document: root)
    }()

    init(document root: [String: Any]) {
        let finder = Finder(root: root)
        var found: [String: [Int: NullPlaces]] = [:]
        var headers: Set<String> = []
        for (_, operations) in root["paths"] as? [String: [String: Any]] ?? [:] {
            for (_, operation) in operations {
                guard let operation = operation as? [String: Any], let id = operation["operationId"] as? String
                else { continue }
                for (status, answer) in operation["responses"] as? [String: Any] ?? [:] {
                    guard let code = Int(status), let answer = finder.resolved(answer as? [String: Any]) else {
                        continue
                    }
                    for name in (answer["headers"] as? [String: Any] ?? [:]).keys { headers.insert(name.lowercased()) }
                    guard let media = (answer["content"] as? [String: Any])?["application/json"] as? [String: Any],
                        let schema = media["schema"] as? [String: Any],
                        let places = finder.places(schema, depth: 0)
                    else { continue }
                    found[id, default: [:]][code] = places
                }
            }
        }
        byOperation = found
        self.headers = headers
    }

    /// Walks schemas through their references.
    private struct Finder {
        let root: [String: Any]

        /// `object` with its `$ref` followed (`#/components/…` only).
        func resolved(_ object: [String: Any]?) -> [String: Any]? {
            var object = object
            for _ in 0..<8 {
                guard let ref = object?["$ref"] as? String else { return object }
                guard ref.hasPrefix("#/") else { return nil }
                var node: Any? = root
                for part in ref.dropFirst(2).split(separator: "/") { node = (node as? [String: Any])?[String(part)] }
                object = node as? [String: Any]
            }
            return nil
        }

        /// Whether a property's schema takes null.
        func nullable(_ schema: [String: Any]) -> Bool {
            guard let schema = resolved(schema) else { return false }
            if let types = schema["type"] as? [String], types.contains("null") { return true }
            if schema["type"] as? String == "null" { return true }
            return ["oneOf", "anyOf"].contains { key in
                (schema[key] as? [[String: Any]])?.contains { nullable($0) } == true
            }
        }

        /// The keys to put in as null within values of `schema`; nil when there are none.
        func places(_ schema: [String: Any], depth: Int) -> NullPlaces? {
            guard depth < 24, let schema = resolved(schema) else { return nil }
            var keys: Set<String> = []
            var properties: [String: NullPlaces] = [:]
            var items: NullPlaces?
            var additional: NullPlaces?
            var parts = [schema]
            parts += (schema["allOf"] as? [[String: Any]] ?? []).compactMap(resolved)
            // A nullable wrapper (`anyOf: [X, null]`): X's places.
            for key in ["oneOf", "anyOf"] {
                let members = (schema[key] as? [[String: Any]] ?? []).filter { !isNull($0) }
                if members.count == 1, let member = resolved(members[0]) { parts.append(member) }
            }
            for part in parts {
                let required = Set(part["required"] as? [String] ?? [])
                for (key, property) in part["properties"] as? [String: [String: Any]] ?? [:] {
                    if required.contains(key), nullable(property) { keys.insert(key) }
                    if let inner = places(property, depth: depth + 1) { properties[key] = inner }
                }
                if let each = part["items"] as? [String: Any], let inner = places(each, depth: depth + 1) {
                    items = inner
                }
                if let each = part["additionalProperties"] as? [String: Any],
                    let inner = places(each, depth: depth + 1)
                {
                    additional = inner
                }
            }
            let found = NullPlaces(keys: keys, properties: properties, items: items, additional: additional)
            return found.isEmpty ? nil : found
        }

        func isNull(_ schema: [String: Any]) -> Bool { schema["type"] as? String == "null" }
    }
}

/// Within one value: the keys put in as null where missing, and the places inside its
/// properties, its items or its map's values.
final class NullPlaces: Sendable, CustomStringConvertible {
    let keys: Set<String>
    let properties: [String: NullPlaces]
    let items: NullPlaces?
    let additional: NullPlaces?

    init(keys: Set<String>, properties: [String: NullPlaces], items: NullPlaces?, additional: NullPlaces?) {
        self.keys = keys
        self.properties = properties
        self.items = items
        self.additional = additional
    }

    var isEmpty: Bool { keys.isEmpty && properties.isEmpty && items == nil && additional == nil }

    func apply(_ value: Value) -> Value {
        switch value {
        case .map(var fields):
            for key in keys where fields[key] == nil { fields[key] = .null }
            for (key, field) in fields {
                if let inner = properties[key] {
                    fields[key] = inner.apply(field)
                } else if let additional {
                    fields[key] = additional.apply(field)
                }
            }
            return .map(fields)
        case .array(let values):
            guard let items else { return value }
            return .array(values.map(items.apply))
        default:
            return value
        }
    }

    /// `keys` and the paths inside, as `NullsTests` compares them (`kiosks[].room`).
    var description: String { paths("").sorted().joined(separator: " ") }

    func paths(_ at: String) -> [String] {
        var out = keys.map { at + $0 }
        for (key, inner) in properties { out += inner.paths(at + key + ".") }
        if let items { out += items.paths(at.isEmpty ? "[]." : String(at.dropLast()) + "[].") }
        if let additional { out += additional.paths(at + "*.") }
        return out
    }
}

import Foundation
import Testing
import TracerAPI
@_spi(Blocking) import TracerStore
import Yams

@testable import TracerServer

/// The generated types leave out a nil optional (apple/swift-openapi-generator#934); the document
/// requires some keys that may be null. `APIJSON.nullable` names those keys, type by type, and
/// `APIJSON` writes them as null: the list must be the document's, no more and no fewer.
@Suite struct NullsTests {
    /// Every required property that may be null, by where the document defines it: a schema
    /// (`Health`), a path inside one (`Beacons.site.rooms[]`), or an operation's answer
    /// (`ownToken#200`).
    static func requiredNullable() throws -> [String: Set<String>] {
        let text = String(decoding: PackageResources.openapi_yaml, as: UTF8.self)
        let root = try #require(try Yams.load(yaml: text) as? [String: Any])
        var found: [String: Set<String>] = [:]
        func nullable(_ p: [String: Any]) -> Bool {
            if let types = p["type"] as? [String], types.contains("null") { return true }
            return ["oneOf", "anyOf"].contains { key in
                (p[key] as? [[String: Any]])?.contains { $0["type"] as? String == "null" } == true
            }
        }
        func walk(_ place: String, _ schema: [String: Any]) {
            let required = Set(schema["required"] as? [String] ?? [])
            for (key, property) in schema["properties"] as? [String: [String: Any]] ?? [:] {
                if required.contains(key), nullable(property) { found[place, default: []].insert(key) }
                walk(place + "." + key, property)
            }
            if let items = schema["items"] as? [String: Any] { walk(place + "[]", items) }
        }
        let components = try #require(root["components"] as? [String: Any])
        for (name, schema) in components["schemas"] as? [String: [String: Any]] ?? [:] { walk(name, schema) }
        for (_, operations) in root["paths"] as? [String: [String: Any]] ?? [:] {
            for (_, operation) in operations {
                guard let operation = operation as? [String: Any], let id = operation["operationId"] as? String
                else { continue }
                for (status, answer) in operation["responses"] as? [String: [String: Any]] ?? [:] {
                    for (_, media) in answer["content"] as? [String: [String: Any]] ?? [:] {
                        if let schema = media["schema"] as? [String: Any] { walk("\(id)#\(status)", schema) }
                    }
                }
            }
        }
        return found
    }

    @Test func theListIsTheDocuments() throws {
        let listed = Dictionary(uniqueKeysWithValues: APIJSON.nullable.map { ($0.place, $0.keys.nullWhenNil) })
        #expect(listed == (try Self.requiredNullable()))
    }

    /// What the list does: a required key that is nil is written as null, one that may be left
    /// out is left out, nested in arrays too.
    @Test func requiredNullsAreWrittenAndOtherNilsLeftOut() throws {
        let health = try APIJSON.value(Components.Schemas.Health(status: .ok))
        #expect(health == .map(["status": .string("ok"), "site": .null]))
        let kiosks = Components.Schemas.Kiosks(
            kiosks: [
                .init(
                    anchor: "kiosk-lab",
                    silent: false,
                    backlog: 0,
                    lagSeconds: 0,
                    clockWarning: false,
                    documents: 1,
                    refused: 0,
                    refusedBatches: 0
                )
            ],
            silentAfterSeconds: 60,
            generatedAt: "2026-11-28T10:00:00.000Z"
        )
        let text = try APIJSON.string(kiosks)
        for key in ["room", "lastSeen", "secondsSinceSeen", "backlogOldest", "clockOffsetSeconds", "lastRefusal"] {
            #expect(text.contains(#""\#(key)":null"#), "\(key): \(text)")
        }
        // Decoded by the generated type as it was.
        #expect(try JSONDecoder().decode(Components.Schemas.Kiosks.self, from: Data(text.utf8)) == kiosks)
        let token = try APIJSON.string(
            Operations.OwnToken.Output.Ok.Body.JsonPayload(id: "t", role: .admin, name: "admin")
        )
        #expect(token == #"{"anchor":null,"deviceId":null,"id":"t","name":"admin","role":"admin"}"#)
    }
}

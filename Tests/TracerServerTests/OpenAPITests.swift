import Foundation
import Hummingbird
import HummingbirdTesting
import Testing
import TracerAPI
import TracerTesting
import Yams

@testable import TracerServer

/// The OpenAPI document is the API's contract: it names every route the server answers, and
/// nothing it does not; the server serves it as it is. (schemathesis checks the answers
/// themselves against it, on a live server: `Tools/testing/schemathesis`.)
@Suite struct OpenAPITests {
    static let methods = ["get", "put", "post", "delete", "patch", "head", "options"]

    /// `METHOD /path/{param}` for every operation of the document.
    static func documented() throws -> Set<String> {
        let text = String(decoding: PackageResources.openapi_yaml, as: UTF8.self)
        let root = try #require(try Yams.load(yaml: text) as? [String: Any])
        #expect(root["openapi"] as? String == "3.1.0")
        let paths = try #require(root["paths"] as? [String: Any])
        var out: Set<String> = []
        for (path, item) in paths {
            let operations = try #require(item as? [String: Any], "\(path)")
            for method in methods where operations[method] != nil { out.insert("\(method.uppercased()) \(path)") }
        }
        return out
    }

    @Test func everyRouteIsDocumentedAndNothingElse() async throws {
        let f = try await ServerFixture()
        let served = Set(try f.api.router().routes.map { "\($0.method) \($0.path)" })
        let documented = try Self.documented()
        #expect(served.count >= 17, "\(served.sorted())")
        #expect(
            served.subtracting(documented).isEmpty,
            "served, not documented: \(served.subtracting(documented).sorted())"
        )
        #expect(
            documented.subtracting(served).isEmpty,
            "documented, not served: \(documented.subtracting(served).sorted())"
        )
    }

    /// The server's answers read as the contract's types, as the clients read them.
    @Test func theContractsTypesReadTheServersAnswers() async throws {
        let f = try await ServerFixture()
        try await f.app().test(.router) { client in
            func get<T: Decodable>(_ path: String, _ type: T.Type, token: String? = nil) async throws -> T? {
                try await client.execute(
                    uri: path,
                    method: .get,
                    headers: token.map { ServerFixture.bearer($0) } ?? [:]
                ) { APIJSON.decode(type, from: Array($0.body.readableBytesView)) }
            }
            #expect(try await get("/health", Components.Schemas.Health.self)?.status == .ok)
            #expect(try await get("/v1/features", Components.Schemas.Features.self)?.exposure.radiusMetres == 6)
            let beacons = try await get("/v1/beacons", Components.Schemas.Beacons.self, token: f.admin)
            #expect(beacons?.beacons.isEmpty == false && beacons?.site?.rooms.isEmpty == false)
            #expect(try await get("/v1/kiosks", Components.Schemas.Kiosks.self, token: f.admin)?.kiosks.isEmpty == true)
            #expect(
                try await get("/v1/responses", Components.Schemas.PublicResponses.self, token: f.device)?.days == 14
            )
            let refused = try await get("/v1/kiosks", Components.Schemas._Error.self)
            #expect(refused?.error.codeText == "unauthorized")
        }
    }

    /// The server's error codes are the document's list (`ErrorCode` is generated from it); the
    /// list stays open (any string besides, for a newer server's) and names each code once.
    @Test func theDocumentListsEveryErrorCode() throws {
        let text = String(decoding: PackageResources.openapi_yaml, as: UTF8.self)
        let root = try #require(try Yams.load(yaml: text) as? [String: Any])
        let schemas = try #require((root["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let detail = try #require(schemas["ErrorDetail"] as? [String: Any])
        let code = try #require((detail["properties"] as? [String: Any])?["code"] as? [String: Any])
        // An open list: the codes, or any string (a client tolerates a newer server's).
        let choices = try #require(code["anyOf"] as? [[String: Any]])
        #expect(choices.count == 2 && choices.last?["enum"] == nil && choices.last?["type"] as? String == "string")
        let listed = try #require(choices.first?["enum"] as? [String])
        #expect(Set(listed).count == listed.count)
    }

    /// The framework's errors (a route's own `HTTPError`) come out with the code their status means.
    @Test func aFrameworkErrorGetsTheCodeItsStatusMeans() {
        let expected: [(Int, ErrorCode)] = [
            (400, .badRequest), (401, .unauthorized), (403, .forbidden), (404, .notFound), (405, .methodNotAllowed),
            (409, .conflict), (413, .tooLarge), (415, .unsupportedMediaType), (422, .rejected),
            (429, .tooManyRequests), (418, .badRequest), (500, .unavailable), (503, .unavailable),
        ]
        for (status, code) in expected {
            let mapped = APIError.from(HTTPError(HTTPResponse.Status(code: status)))
            #expect(mapped.code == code, "\(status): \(mapped.code)")
            #expect(mapped.status.code == status)
        }
    }

    @Test func theServerServesTheDocument() async throws {
        let f = try await ServerFixture()
        try await f.app().test(.router) { client in
            try await client.execute(uri: "/openapi.yaml", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("application/yaml") == true)
                #expect(Array(response.body.readableBytesView) == PackageResources.openapi_yaml)
            }
        }
    }
}

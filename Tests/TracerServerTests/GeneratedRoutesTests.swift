import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import OpenAPIRuntime
import Testing
import TracerAPI
import TracerBadges
import TracerExposure
import TracerModel
import TracerReplication
@_spi(Blocking) import TracerStore

@testable import TracerServer

/// The routes the generated server answers (the document's operations but `API.handWritten`):
/// the answers as the document says them, and requests that are not refused in one line.
@Suite struct GeneratedRoutesTests {
    /// Required keys that may be null are in the answers as null, where the generated types
    /// would leave them out (apple/swift-openapi-generator#934): a server with no site, a token
    /// with no device.
    @Test func requiredNullsAreInTheGeneratedServersAnswers() async throws {
        let f = try await ServerFixture()
        let bare = try await API(store: f.store, site: nil, engine: ExposureEngine())
        try await Application(router: try bare.router()).test(.router) { client in
            for uri in ["/health", "/v1/features"] {
                try await client.execute(uri: uri, method: .get) { r in
                    #expect(r.status == .ok)
                    guard case .map(let fields) = value(r) else {
                        Issue.record("\(uri): \(String(buffer: r.body))")
                        return
                    }
                    #expect(fields["site"] == .null, "\(uri): \(String(buffer: r.body))")
                    #expect(r.headers[.cacheControl] == "no-store", "\(uri)")
                }
            }
            try await client.execute(uri: "/v1/tokens/self", method: .get, headers: ServerFixture.bearer(f.admin)) {
                r in
                let body = String(buffer: r.body)
                #expect(body.contains(#""deviceId":null"#) && body.contains(#""anchor":null"#), "\(body)")
            }
            try await client.execute(uri: "/v1/page", method: .get, headers: ServerFixture.bearer(f.device)) { r in
                let body = String(buffer: r.body)
                #expect(body.contains(#""guidance":null"#) && body.contains(#""site":null"#), "\(body)")
            }
        }
    }

    /// The places are the document's, followed through its references: the kiosks' list, the
    /// review list's reports (a schema of their own), and nothing for an answer without any.
    @Test func thePlacesAreFoundInTheDocument() {
        let nulls = RequiredNulls.served
        #expect(nulls.places("kiosks", 200)?.description.contains("kiosks[].room") == true)
        #expect(nulls.places("reviewList", 200)?.description.contains("reports[].collectedAt") == true)
        #expect(nulls.places("health", 503)?.description == "site")
        #expect(nulls.places("revokeOwnToken", 200) == nil)
        #expect(nulls.headers.isSuperset(of: ["etag", "content-disposition"]))
        // Applied: a missing key is put in, one present kept, other keys untouched.
        let places = nulls.places("kiosks", 200)
        let kiosks: Value = .map(["kiosks": .array([.map(["anchor": "k1", "room": "lab"]), .map(["anchor": "k2"])])])
        guard case .map(let out)? = places?.apply(kiosks), case .array(let rows)? = out["kiosks"] else {
            Issue.record("no kiosks")
            return
        }
        #expect(rows[0]["room"] == "lab" && rows[1]["room"] == .null && rows[1]["lastSeen"] == .null)
        #expect(rows[1]["anchor"] == "k2" && rows[1]["silent"] == nil)
    }

    /// A request that is not as the document says is a 4xx in one line that names the route and
    /// what is wrong; a body over the generated routes' limit is 413 before it is read whole.
    @Test func aRequestNotAsDocumentedSaysWhatInOneLine() async throws {
        let f = try await ServerFixture()
        let admin = ServerFixture.bearer(f.admin)
        var withJSON = admin
        withJSON[.contentType] = "application/json"
        let json = withJSON
        try await f.app().test(.router) { client in
            let cases: [(HTTPRequest.Method, String, HTTPFields, String, HTTPResponse.Status, String)] = [
                (
                    .post, "/v1/links", [.contentType: "application/json"], #"{"kode": "x"}"#, .badRequest,
                    "code is missing"
                ),
                (
                    .post, "/v1/links", [.contentType: "application/json"], #"{"code": 7}"#, .badRequest,
                    "code is not a string"
                ),
                (.post, "/v1/links", [.contentType: "application/json"], "not json", .badRequest, "not JSON"),
                (
                    .post, "/v1/links", [.contentType: "text/plain"], #"{"code": "x"}"#, .unsupportedMediaType,
                    "/v1/links"
                ),
                (.get, "/v1/reports?status=maybe", admin, "", .badRequest, "GET /v1/reports"),
                (.post, "/v1/reports/r1/deny", json, #"{"note": 5}"#, .badRequest, "note is not a string"),
            ]
            for (method, uri, headers, body, status, says) in cases {
                try await client.execute(uri: uri, method: method, headers: headers, body: ByteBuffer(string: body)) {
                    r in
                    let error = decoded(Components.Schemas._Error.self, r)?.error
                    #expect(r.status == status, "\(uri) \(body): \(String(buffer: r.body))")
                    #expect(error?.message.contains(says) == true, "\(uri) \(body): \(error?.message ?? "")")
                    #expect(error?.message.contains("\n") == false)
                }
            }
            let big = ByteBuffer(string: #"{"code": ""# + String(repeating: "x", count: 20_000) + #""}"#)
            try await client.execute(
                uri: "/v1/links",
                method: .post,
                headers: [.contentType: "application/json"],
                body: big
            ) { r in
                #expect(r.status == .contentTooLarge && errorCode(r) == "too_large", "\(String(buffer: r.body))")
            }
        }
    }

    /// Every operation left to a hand-written route is one of the document's: a misspelt one
    /// would leave its route answered twice, and the router is refused.
    @Test func aHandWrittenOperationMustBeTheDocuments() async throws {
        let f = try await ServerFixture()
        let router = Router(context: TracerContext.self)
        let routes = GeneratedRoutes(router.group(), skipping: API.handWritten.union(["GET /v1/nothing"]))
        try f.api.registerHandlers(on: routes)
        #expect(throws: APIError.self) { try routes.checkSkipped() }
        let exact = GeneratedRoutes(Router(context: TracerContext.self).group(), skipping: API.handWritten)
        try f.api.registerHandlers(on: exact)
        try exact.checkSkipped()
    }

    /// A kiosk polls the published site and a day of badge ids with the ETag it holds, through
    /// the API's generated client: the second answer is "unchanged" (304), not the site or a
    /// day's megabytes again; a refused token is the replicator's `unauthorized`.
    @Test func aKioskPollingWithItsETagHearsUnchanged() async throws {
        let f = try await ServerFixture()
        let source = try String(contentsOfFile: ServerFixture.map, encoding: .utf8)
        try await f.store.writing { db in
            _ = try PublishedSite(source: source, file: "example-campus.yaml").publish(to: db)
            _ = try BadgeRegistry.issue(count: 3, in: db)
        }
        let tokenFile = f.dir.file("kiosk.token")
        try f.kiosk.write(toFile: tokenFile, atomically: true, encoding: .utf8)
        try await f.app().test(.live) { client in
            let upstream = try Upstream("http://127.0.0.1:\(try #require(client.port))", tokenFile: tokenFile)
            let site = try #require(try await upstream.site(etag: nil))
            #expect(site.file == "example-campus.yaml" && site.source == source)
            #expect(try await upstream.site(etag: site.digest) == nil)
            let today = BadgeIDDay.day(of: Date().timeIntervalSince1970)
            let (day, etag) = try #require(try await upstream.badgeDay(today, etag: nil))
            #expect(day.serials.count == 3 && day.isWhole && etag.hasPrefix("\""), "\(etag)")
            #expect(try await upstream.badgeDay(today, etag: etag) == nil)
            try "tracer_nottherightone".write(toFile: tokenFile, atomically: true, encoding: .utf8)
            do {
                _ = try await upstream.site(etag: nil)
                Issue.record("a refused token was taken")
            } catch let e as SyncError {
                #expect(e.code == .unauthorized, "\(e)")
            }
            try await upstream.shutdown()
        }
    }
}

import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing
import TracerAPI
import TracerCertificate
import TracerColocation
import TracerExposure
import TracerModel
import TracerReplication
import TracerReports
import TracerSite
@_spi(Blocking) import TracerStore
import TracerTesting

@testable import TracerOCR
@testable import TracerServer

/// A store, the example site, the API and a token of each kind.
struct ServerFixture {
    static let map = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("BeaconMap/example-campus.yaml").path

    let dir = TemporaryDirectory("tracer-serve")
    let store: DocumentStore
    let api: API
    let admin: String
    let kiosk: String
    let device: String
    let limiter: FailureLimiter

    /// Occupancy is judged at `now` when it is given (the wall clock otherwise), and the
    /// interactions written by `interaction` are dated from it: a test stalled on a loaded
    /// machine still sees what it wrote as recent.
    let now: Date?

    init(
        limit: Int = 10,
        ocrQueue: Int = 8,
        now: Date? = nil,
        site adjust: (inout Site) -> Void = { _ in },
        clock: (@Sendable () -> Date)? = nil
    ) async throws {
        self.now = now
        store = try DocumentStore(path: TestBackend.location(in: dir, "s.sqlite"))
        var site = try Site.load(file: Self.map)
        adjust(&site)
        limiter = FailureLimiter(limit: limit, window: 60)
        api = try await API(
            store: store,
            site: site,
            engine: ExposureEngine(policy: ExposurePolicy(site: site)),
            limiter: limiter,
            ocrQueue: ocrQueue,
            // These tests are about the review's flow, not the deadline (a bound on a pathological
            // page, 60 s in the product): a page beside the whole suite on 2 cores has taken longer.
            ocrDeadline: .seconds(600),
            reviewImages: ReviewImages(directory: dir.file("review")),
            clock: clock ?? { now ?? Date() }
        )
        (admin, kiosk, device) = try await store.writing { db in
            (
                try TokenStore.create(role: .admin, deviceID: nil, name: "health team", in: db).token,
                try TokenStore.create(role: .kiosk, deviceID: nil, name: "lab kiosk", in: db).token,
                try TokenStore.create(role: .device, deviceID: "dev-1", name: nil, in: db).token
            )
        }
    }

    func app(port: Int = 0) throws -> some ApplicationProtocol {
        Application(router: try api.router(), configuration: .init(address: .hostname("127.0.0.1", port: port)))
    }

    static func bearer(_ token: String) -> HTTPFields { [.authorization: "Bearer \(token)"] }

    /// A kiosk's upload of a rendered result (`ResultImages`) for `device`, with `extra` parts.
    func upload(
        _ name: String,
        device: String,
        _ extra: [(name: String, filename: String?, body: [UInt8])] = []
    ) throws -> (HTTPFields, ByteBuffer) {
        let image = Array(try Data(contentsOf: URL(fileURLWithPath: ResultImages.file(name))))
        var (h, b) = form([("image", name, image), ("deviceId", nil, Array(device.utf8))] + extra)
        h.append(contentsOf: Self.bearer(kiosk))
        return (h, b)
    }

    /// An interaction window at a kiosk, `ago` seconds before now.
    func interaction(_ id: String, at anchor: String, device: String, ago: Double, length: Double = 30) throws {
        let end = (now ?? Date()).timeIntervalSince1970 - ago
        try store.set(
            DocumentPath("beacons/\(anchor)/interactions/\(id)"),
            [
                "deviceId": .string(device), "proximity": "near", "distance": 1.5,
                "start": .timestamp(Timestamp(seconds: end - length)), "end": .timestamp(Timestamp(seconds: end)),
            ]
        )
    }

    func exposure(_ device: String, at anchor: String, report: String, daysAgo: Double) throws {
        let from = Date().timeIntervalSince1970 - daysAgo * 86_400
        try store.set(
            DocumentPath("devices/\(device)/exposures/\(report)-\(anchor)"),
            [
                "reportId": .string(report), "beaconKey": .string(anchor), "from": .timestamp(Timestamp(seconds: from)),
                "to": .timestamp(Timestamp(seconds: from + 600)), "overlapSeconds": 600,
                "separation": ["min": 0.5, "max": 2.5],
            ]
        )
    }
}

/// A multipart/form-data body.
func form(
    _ parts: [(name: String, filename: String?, body: [UInt8])],
    boundary: String = "tracer-test-boundary"
)
    -> (HTTPFields, ByteBuffer)
{
    var body = [UInt8]()
    for p in parts {
        var head = "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(p.name)\""
        if let f = p.filename { head += "; filename=\"\(f)\"\r\nContent-Type: application/octet-stream" }
        head += "\r\n\r\n"
        body += Array(head.utf8) + p.body + Array("\r\n".utf8)
    }
    body += Array("--\(boundary)--\r\n".utf8)
    return ([.contentType: "multipart/form-data; boundary=\(boundary)"], ByteBuffer(bytes: body))
}

/// A body as the contract's generated type; nil when it is not one.
func decoded<T: Decodable>(_ type: T.Type, _ response: TestResponse) -> T? {
    APIJSON.decode(type, from: Array(response.body.readableBytesView))
}

/// A body the server writes as the store's values with no type of the contract's yet (the health
/// team's reports, a decision).
func value(_ response: TestResponse) -> Value {
    (try? JSON.parse(String(buffer: response.body))) ?? .null
}

func errorCode(_ response: TestResponse) -> String? {
    decoded(Components.Schemas._Error.self, response)?.error.codeText
}

extension Value {
    /// The elements of an array; nil for anything else.
    var elements: [Value]? {
        if case .array(let a) = self { return a }
        return nil
    }
}

/// Every route through the router, as the server would run it, without a socket.
@Suite struct APITests {
    @Test func healthAndFeaturesNeedNoToken() async throws {
        let f = try await ServerFixture()
        try await f.app().test(.router) { client in
            try await client.execute(uri: "/health", method: .get) { r in
                #expect(r.status == .ok)
                let health = try #require(decoded(Components.Schemas.Health.self, r))
                #expect(health.status == .ok && health.site == "Example Campus")
            }
            try await client.execute(uri: "/v1/features", method: .get) { r in
                #expect(r.status == .ok)
                let features = try #require(decoded(Components.Schemas.Features.self, r))
                #expect(features.selfReport)
                #expect(features.exposure.radiusMetres == 6)
                #expect(features.exposure.separation == .geometric)
            }
        }
    }

    /// `GET /v1/site`: the site as published now, with its digest as the ETag (304 when the
    /// kiosk has it), and a 404 that says how to publish one.
    @Test func thePublishedSiteWithItsETag() async throws {
        let f = try await ServerFixture()
        try await f.app().test(.router) { client in
            try await client.execute(uri: "/v1/site", method: .get, headers: ServerFixture.bearer(f.kiosk)) { r in
                #expect(r.status == .notFound && errorCode(r) == "no_site")
            }
            let source = try String(contentsOfFile: ServerFixture.map, encoding: .utf8)
            let site = try PublishedSite(source: source, file: "example-campus.yaml")
            _ = try await f.store.writing { db in try site.publish(to: db) }
            var etag = ""
            try await client.execute(uri: "/v1/site", method: .get, headers: ServerFixture.bearer(f.kiosk)) { r in
                #expect(r.status == .ok)
                let site = try #require(decoded(Components.Schemas.PublishedSite.self, r))
                #expect(site.source == source && site.site == "Example Campus")
                etag = r.headers[.eTag] ?? ""
                #expect(etag == "\"\(site.digest)\"")
            }
            var headers = ServerFixture.bearer(f.device)
            headers[.ifNoneMatch] = etag
            try await client.execute(uri: "/v1/site", method: .get, headers: headers) { r in
                #expect(r.status == .notModified)
            }
            let moved = try PublishedSite(source: source + "# moved\n", file: "example-campus.yaml")
            _ = try await f.store.writing { db in try moved.publish(to: db) }
            try await client.execute(uri: "/v1/site", method: .get, headers: headers) { r in
                #expect(r.status == .ok && r.headers[.eTag] != etag)
                etag = r.headers[.eTag] ?? ""
            }
            // A map naming a trust list: the server hands the list with the map, a new list is a
            // new ETag, and a kiosk's copy (taken from the answer) keeps it.
            await ResultImages.ready()
            let dir = TemporaryDirectory("tracer-site-trust")
            try FileManager.default.copyItem(atPath: ResultImages.file("trust.pem"), toPath: dir.file("trust.pem"))
            let withList =
                source[..<source.range(of: "\nsettings:")!.lowerBound] + "\nsettings: {trustList: trust.pem}\n"
            try String(withList).write(toFile: dir.file("site.yaml"), atomically: true, encoding: .utf8)
            let published = try PublishedSite(source: String(withList), file: dir.file("site.yaml"))
            #expect(published.site.verification.trustListPEM?.contains("BEGIN CERTIFICATE") == true)
            _ = try await f.store.writing { db in try published.publish(to: db) }
            headers[.ifNoneMatch] = etag
            try await client.execute(uri: "/v1/site", method: .get, headers: headers) { r in
                #expect(r.status == .ok && r.headers[.eTag] != etag)
                let answer = try #require(decoded(Components.Schemas.PublishedSite.self, r))
                let list = try #require(answer.trustList)
                #expect(list == published.site.verification.trustListPEM)
                let copy = try PublishedSite(
                    source: answer.source,
                    file: "/elsewhere/site.yaml",
                    served: true,
                    trustList: list
                )
                #expect(copy.digest == answer.digest)
                #expect(try TrustList(copy.site.verification)?.issuers.count == 2)
            }
            #expect(
                try await f.store.reading { db in try PublishedSite.load(from: db) }?.site.verification.trustListPEM
                    == published.site.verification.trustListPEM
            )
        }
    }

    /// `POST /v1/sync` in process: a kiosk token without an anchor may not replicate at all; one
    /// with an anchor writes its own documents and is refused another's, per document, audited.
    @Test func syncIsScopedToTheTokensAnchor() async throws {
        let f = try await ServerFixture()
        let lab = try await f.store.writing { db in
            try TokenStore.create(role: .kiosk, deviceID: nil, anchor: "kiosk-lab", name: nil, in: db)
        }
        let start = Timestamp(seconds: Date().timeIntervalSince1970 - 60).iso8601Milliseconds
        let stored = Array(
            #"{"deviceId":"d1","n":1,"start":{"__time__":"\#(start)"},"end":{"__time__":"\#(start)"}}"#.utf8
        )
        let hearing = Array(
            #"{"emitter":"kiosk-cafe","rssi":-71.5,"spread":3,"weakest":-80,"count":140,"measuredPower":-59,"start":{"__time__":"\#(start)"},"end":{"__time__":"\#(start)"}}"#
                .utf8
        )
        let body = SyncBatch.body(
            kiosk: "kiosk-lab",
            through: 9,
            sentAt: Date().timeIntervalSince1970,
            clock: nil,
            backlog: 0,
            backlogOldest: nil,
            documents: SyncBatch.documents([
                .init(path: try DocumentPath("beacons/kiosk-lab/interactions/a"), json: stored),
                .init(path: try DocumentPath("beacons/kiosk-cafe/interactions/b"), json: stored),
                .init(path: try DocumentPath("devices/d1"), json: stored),
                // Its hearings of the other kiosks travel too; one without its numbers does not.
                .init(path: try DocumentPath("beacons/kiosk-lab/hearings/kiosk-cafe-1"), json: hearing),
                .init(path: try DocumentPath("beacons/kiosk-lab/hearings/kiosk-cafe-2"), json: stored),
                .init(path: try DocumentPath("beacons/kiosk-cafe/hearings/kiosk-lab-1"), json: hearing),
            ])
        )
        try await f.app().test(.router) { client in
            try await client.execute(
                uri: "/v1/sync",
                method: .post,
                headers: ServerFixture.bearer(f.kiosk),
                body: ByteBuffer(bytes: body)
            ) { r in
                #expect(r.status == .forbidden && errorCode(r) == "forbidden", "\(String(buffer: r.body))")
            }
            try await client.execute(
                uri: "/v1/sync",
                method: .post,
                headers: ServerFixture.bearer(lab.token),
                body: ByteBuffer(bytes: body)
            ) { r in
                #expect(r.status == .ok)
                let answer = try SyncAnswer(json: Array(r.body.readableBytesView))
                #expect(answer.acknowledged == 9 && answer.applied == 2)
                #expect(
                    answer.refused.map(\.path) == [
                        "beacons/kiosk-cafe/interactions/b", "devices/d1", "beacons/kiosk-lab/hearings/kiosk-cafe-2",
                        "beacons/kiosk-cafe/hearings/kiosk-lab-1",
                    ]
                )
            }
        }
        #expect(try await f.store.reading { db in try db.get("beacons/kiosk-lab/interactions/a") }["n"] == .integer(1))
        let (cafe, d1) = try await f.store.reading { db in
            (try db.get("beacons/kiosk-cafe/interactions/b"), try db.get("devices/d1"))
        }
        #expect(!cafe.exists && !d1.exists)
        let audit = try await f.store.reading { db in try db.getDocuments(Query(collection: Collections.audit)) }
        #expect(
            try await f.store.reading { db in try db.get("beacons/kiosk-lab/hearings/kiosk-cafe-1") }["rssi"]
                == .double(-71.5)
        )
        #expect(audit.compactMap { $0["outcome"]?.stringValue }.count == 4)
        #expect(try await f.store.reading { db in try db.get("kiosks/kiosk-lab") }["refused"] == .integer(4))
    }

    @Test func whoMayReadWhat() async throws {
        let f = try await ServerFixture()
        try await f.app().test(.router) { client in
            // No token: 401 with a challenge; a mistyped one: 401.
            try await client.execute(uri: "/v1/devices/dev-1", method: .get) { r in
                #expect(r.status == .unauthorized)
                #expect(r.headers[.wwwAuthenticate] == #"Bearer realm="tracer""#)
                #expect(errorCode(r) == "unauthorized")
            }
            let wrong = String(f.admin.dropLast()) + (f.admin.hasSuffix("a") ? "b" : "a")
            try await client.execute(uri: "/v1/beacons", method: .get, headers: ServerFixture.bearer(wrong)) { r in
                #expect(r.status == .unauthorized)
            }
            // A device reads its own device only; a kiosk reads nobody's status, nor the site.
            try await client.execute(uri: "/v1/devices/dev-1", method: .get, headers: ServerFixture.bearer(f.device)) {
                #expect($0.status == .ok)
                #expect(decoded(Components.Schemas.DeviceStatus.self, $0)?.status == .clear)
            }
            try await client.execute(uri: "/v1/devices/dev-2", method: .get, headers: ServerFixture.bearer(f.device)) {
                #expect($0.status == .forbidden)
                #expect(errorCode($0) == "forbidden")
            }
            try await client.execute(uri: "/v1/devices/dev-2", method: .get, headers: ServerFixture.bearer(f.kiosk)) {
                #expect($0.status == .forbidden)
            }
            try await client.execute(uri: "/v1/beacons", method: .get, headers: ServerFixture.bearer(f.kiosk)) {
                #expect($0.status == .forbidden)
            }
            try await client.execute(uri: "/v1/beacons", method: .get, headers: ServerFixture.bearer(f.admin)) {
                #expect($0.status == .ok)
            }
        }
    }

    @Test func aRevokedTokenIsRefusedAtOnce() async throws {
        let f = try await ServerFixture()
        let id = String(f.kiosk.split(separator: "_")[1])
        try await f.app().test(.router) { client in
            try await client.execute(uri: "/v1/page", method: .get, headers: ServerFixture.bearer(f.kiosk)) {
                #expect($0.status == .ok)
            }
            #expect(try await f.store.writing { db in try TokenStore.revoke(id, in: db) })
            try await client.execute(uri: "/v1/page", method: .get, headers: ServerFixture.bearer(f.kiosk)) {
                #expect($0.status == .unauthorized)
            }
        }
    }

    @Test func tokensAreStoredHashed() async throws {
        let f = try await ServerFixture()
        let export = try await f.store.reading { db in try db.getDocuments(Query(collection: CollectionPath("tokens")))
        }
        #expect(export.count == 3)
        for doc in export {
            let text = JSON.string(doc.data ?? [:])
            for token in [f.admin, f.kiosk, f.device] {
                #expect(!text.contains(String(token.split(separator: "_")[2])), "a secret is stored in \(doc.id)")
            }
            #expect(doc["hash"]?.stringValue?.count == 64)
        }
    }

    @Test func failedAttemptsAreRateLimitedPerClient() async throws {
        let f = try await ServerFixture(limit: 3)
        try await f.app().test(.router) { client in
            for _ in 0..<3 {
                try await client.execute(uri: "/v1/beacons", method: .get, headers: ServerFixture.bearer("tracer_nope"))
                {
                    #expect($0.status == .unauthorized)
                }
            }
            // Now even the right token waits.
            try await client.execute(uri: "/v1/beacons", method: .get, headers: ServerFixture.bearer(f.admin)) { r in
                #expect(r.status == .tooManyRequests)
                #expect(errorCode(r) == "too_many_requests")
                #expect(Int(r.headers[.retryAfter] ?? "") ?? 0 > 0)
            }
        }
    }

    @Test func everyAdminRequestIsAudited() async throws {
        let f = try await ServerFixture()
        try await f.app().test(.router) { client in
            try await client.execute(
                uri: "/v1/beacons/kiosk-lab/exposures?since=2026-01-01",
                method: .get,
                headers: ServerFixture.bearer(f.admin)
            ) { #expect($0.status == .ok) }
            try await client.execute(uri: "/v1/devices/dev-1", method: .get, headers: ServerFixture.bearer(f.device)) {
                #expect($0.status == .ok)
            }
        }
        let audit = try await f.store.reading { db in try db.getDocuments(Query(collection: CollectionPath("audit"))) }
        #expect(audit.count == 1, "only the admin's request: \(audit.map(\.data))")
        let entry = try #require(audit.first)
        #expect(entry["tokenName"] == .string("health team"))
        #expect(entry["role"] == .string("admin"))
        #expect(entry["method"] == .string("GET"))
        #expect(entry["path"] == .string("/v1/beacons/kiosk-lab/exposures?since=2026-01-01"))
        #expect(entry["at"]?.timestampValue != nil)
    }

    @Test func badInputIsA4xxWithAJSONBodyNeverA500() async throws {
        let f = try await ServerFixture()
        let admin = ServerFixture.bearer(f.admin)
        let cases: [(String, HTTPRequest.Method, HTTPResponse.Status)] = [
            ("/nope", .get, .notFound),
            ("/v1/devices", .get, .notFound),
            ("/v1/devices/..%2F..%2Freports", .get, .badRequest),
            ("/v1/devices/a%00b", .get, .badRequest),
            ("/v1/devices/\(String(repeating: "x", count: 300))", .get, .badRequest),
            ("/v1/beacons/kiosk-lab/exposures?since=yesterday", .get, .badRequest),
            ("/v1/beacons/..%2Fx/exposures", .get, .badRequest),
            ("/v1/watch", .get, .badRequest),
            ("/v1/watch?path=devices//x", .get, .badRequest),
            ("/v1/watch?path=*/a/b", .get, .badRequest),
            ("/v1/watch?path=devices&since=soon", .get, .badRequest),
            ("/v1/watch?path=*/interactions", .get, .badRequest),
            ("/v1/watch?path=beacons/kiosk-lab/interactions", .get, .badRequest),
            ("/v1/watch?path=devices&field=a..b&since=2026-01-01", .get, .badRequest),
            // A document's watch takes no since= or field=, but they are checked as the document says.
            ("/v1/watch/ticket?path=devices/dev-1&since=soon", .post, .badRequest),
            ("/v1/watch?path=devices/dev-1&field=a..b", .get, .badRequest),
        ]
        try await f.app().test(.router) { client in
            for (uri, method, status) in cases {
                try await client.execute(uri: uri, method: method, headers: admin) { r in
                    #expect(r.status == status, "\(method) \(uri): \(r.status)")
                    #expect(r.headers[.contentType]?.hasPrefix("application/json") == true, "\(uri)")
                    #expect(errorCode(r) != nil, "\(uri): \(String(buffer: r.body))")
                }
            }
            var headers = admin
            headers[HTTPField.Name("Last-Event-ID")!] = "not-a-number"
            try await client.execute(uri: "/v1/watch?path=devices", method: .get, headers: headers) {
                #expect($0.status == .badRequest)
            }
        }
    }

    @Test func beaconsShowOccupancyNowAndExposureCounts() async throws {
        let f = try await ServerFixture(now: Date())
        try f.interaction("now-1", at: "kiosk-lab", device: "dev-1", ago: 10)
        try f.interaction("now-2", at: "kiosk-lab", device: "dev-2", ago: 40)
        try f.interaction("now-2b", at: "kiosk-lab", device: "dev-2", ago: 70)
        try f.interaction("gone", at: "kiosk-lab", device: "dev-3", ago: 600)
        try f.interaction("cafe", at: "kiosk-cafe", device: "dev-4", ago: 5)
        try f.exposure("dev-2", at: "kiosk-lab", report: "r1", daysAgo: 1)
        try f.exposure("dev-5", at: "kiosk-lab", report: "r1", daysAgo: 2)
        try f.exposure("dev-6", at: "kiosk-lab", report: "r0", daysAgo: 20)
        try await f.app().test(.router) { client in
            try await client.execute(uri: "/v1/beacons", method: .get, headers: ServerFixture.bearer(f.admin)) { r in
                let answer = try #require(decoded(Components.Schemas.Beacons.self, r))
                let lab = try #require(answer.beacons.first { $0.key == "kiosk-lab" })
                #expect(lab.occupancy == 2 && lab.exposures == 2)
                #expect(lab.room == "lab")
                #expect(lab.position == [6, 9.5])
                let cafe = try #require(answer.beacons.first { $0.key == "kiosk-cafe" })
                #expect(cafe.occupancy == 1 && cafe.exposures == 0)
                #expect(answer.site?.rooms.count == 12)
            }
            try await client.execute(
                uri: "/v1/beacons/kiosk-lab/exposures?since=2020-01-01",
                method: .get,
                headers: ServerFixture.bearer(f.admin)
            ) { r in
                let answer = try #require(decoded(Components.Schemas.BeaconExposures.self, r))
                #expect(answer.beaconKey == "kiosk-lab")
                #expect(answer.exposures.map(\.deviceId) == ["dev-6", "dev-5", "dev-2"])
            }
            let since = ISO8601DateFormatter().string(from: Date().addingTimeInterval(-3 * 86_400))
            try await client.execute(
                uri: "/v1/beacons/kiosk-lab/exposures?since=\(since)",
                method: .get,
                headers: ServerFixture.bearer(f.admin)
            ) { r in
                #expect(decoded(Components.Schemas.BeaconExposures.self, r)?.exposures.count == 2)
            }
        }
    }

    @Test func reportsAreVerifiedLikeTheCommandLine() async throws {
        let f = try await ServerFixture()
        await ResultImages.ready()
        let positive = Array(try Data(contentsOf: URL(fileURLWithPath: ResultImages.file("lab-pcr-positive.png"))))
        let negative = Array(try Data(contentsOf: URL(fileURLWithPath: ResultImages.file("lab-pcr-negative.png"))))
        let kiosk = ServerFixture.bearer(f.kiosk)
        @Sendable func post(
            _ headers: HTTPFields,
            _ parts: [(name: String, filename: String?, body: [UInt8])]
        ) -> (HTTPFields, ByteBuffer) {
            var (h, b) = form(parts)
            h.append(contentsOf: headers)
            return (h, b)
        }
        try await f.app().test(.router) { client in
            // Not a form; no image; answers that are not JSON.
            var headers = kiosk
            headers[.contentType] = "application/json"
            try await client.execute(
                uri: "/v1/reports",
                method: .post,
                headers: headers,
                body: ByteBuffer(string: "{}")
            ) {
                #expect($0.status == .unsupportedMediaType)
            }
            var (h, b) = post(kiosk, [("deviceId", nil, Array("dev-9".utf8))])
            try await client.execute(uri: "/v1/reports", method: .post, headers: h, body: b) {
                #expect($0.status == .badRequest)
                #expect(String(buffer: $0.body).contains("'image'"))
            }
            (h, b) = post(
                kiosk,
                [
                    ("image", "r.png", positive), ("deviceId", nil, Array("dev-9".utf8)),
                    ("answers", nil, Array("{nope".utf8)),
                ]
            )
            try await client.execute(uri: "/v1/reports", method: .post, headers: h, body: b) {
                #expect($0.status == .badRequest)
                #expect(String(buffer: $0.body).contains("answers"))
            }
            // Not an image at all: the image check refuses it before Tesseract.
            (h, b) = post(kiosk, [("image", "x.png", Array("hello".utf8)), ("deviceId", nil, Array("dev-9".utf8))])
            try await client.execute(uri: "/v1/reports", method: .post, headers: h, body: b) {
                #expect($0.status == .unprocessableContent)
                #expect(errorCode($0) == "unreadable_image")
            }
            // A negative: 422 with the failed rule, nothing stored.
            (h, b) = post(kiosk, [("image", "n.png", negative), ("deviceId", nil, Array("dev-9".utf8))])
            try await client.execute(uri: "/v1/reports", method: .post, headers: h, body: b) { r in
                #expect(r.status == .unprocessableContent)
                #expect(errorCode(r) == "rejected")
                let outcome = try #require(decoded(Components.Schemas.ReportOutcome.self, r))
                #expect(!outcome.accepted)
                #expect(outcome.rules.contains { $0.name == "result" && !$0.passed })
            }
            #expect(
                try await f.store.reading { db in try db.getDocuments(Query(collection: CollectionPath("reports"))) }
                    .isEmpty
            )
            // A positive: 201, then 200 for the same image again.
            (h, b) = post(
                kiosk,
                [
                    ("image", "p.png", positive), ("deviceId", nil, Array("dev-9".utf8)),
                    ("answers", nil, Array(#"{"symptoms": true}"#.utf8)),
                ]
            )
            try await client.execute(uri: "/v1/reports", method: .post, headers: h, body: b) { r in
                #expect(r.status == .created, "\(String(buffer: r.body))")
                let outcome = try #require(decoded(Components.Schemas.ReportOutcome.self, r))
                #expect(outcome.deviceId == "dev-9" && outcome.created == true)
            }
            try await client.execute(uri: "/v1/reports", method: .post, headers: h, body: b) { r in
                #expect(r.status == .ok)
                #expect(decoded(Components.Schemas.ReportOutcome.self, r)?.created == false)
            }
            // A device token reports for itself only.
            (h, b) = post(
                ServerFixture.bearer(f.device),
                [("image", "p.png", positive), ("deviceId", nil, Array("dev-9".utf8))]
            )
            try await client.execute(uri: "/v1/reports", method: .post, headers: h, body: b) {
                #expect($0.status == .forbidden)
            }
        }
        let reports = try await f.store.reading { db in
            try db.getDocuments(Query(collection: CollectionPath("reports")))
        }
        #expect(reports.count == 1)
        #expect(reports.first?["answers.symptoms"] == .bool(true))
        #expect(try await f.store.reading { db in try db.get("devices/dev-9") }["status"] == .string("positive"))
    }

    /// The health team's review over the API: a doubtful upload is held (202, nothing flagged),
    /// listed with its evidence and image for admins only, approved (flagging the colleague) or
    /// denied, once; the image goes at the decision.
    @Test func heldReportsAreReviewedByAdminsOnly() async throws {
        let f = try await ServerFixture()
        await ResultImages.ready()
        let doubtful = Array(
            try Data(contentsOf: URL(fileURLWithPath: ResultImages.file("lab-pcr-positive-two-dates.png")))
        )
        // The reporter and a colleague at the lab kiosk an hour ago, 1.5 m from it each.
        try f.interaction("r1", at: "kiosk-lab", device: "dev-r", ago: 3600, length: 600)
        try f.interaction("c1", at: "kiosk-lab", device: "dev-c", ago: 3600, length: 600)
        let admin = ServerFixture.bearer(f.admin)
        let device = ServerFixture.bearer(f.device)
        let dryRun = try f.upload(
            "lab-pcr-positive-two-dates.png",
            device: "dev-r",
            [("dryRun", nil, Array("true".utf8))]
        )
        let held = try f.upload("lab-pcr-positive-two-dates.png", device: "dev-r")
        try await f.app().test(.router) { client in
            // A dry run says it would wait; the upload is held: 202, pending, nobody flagged.
            var (h, b) = dryRun
            try await client.execute(uri: "/v1/reports", method: .post, headers: h, body: b) { r in
                #expect(r.status == .ok, "\(String(buffer: r.body))")
                let outcome = try #require(decoded(Components.Schemas.ReportOutcome.self, r))
                #expect(outcome.status == .pending && outcome.dryRun == true)
            }
            #expect(
                try await f.store.reading { db in try db.getDocuments(Query(collection: Collections.reports)) }.isEmpty
            )
            (h, b) = held
            var id = ""
            try await client.execute(uri: "/v1/reports", method: .post, headers: h, body: b) { r in
                #expect(r.status == .accepted, "\(String(buffer: r.body))")
                let outcome = try #require(decoded(Components.Schemas.ReportOutcome.self, r))
                #expect(outcome.status == .pending && outcome.doubts?.count == 1)
                id = outcome.reportId ?? ""
            }
            #expect(try await f.store.reading { db in try db.get("devices/dev-c") }.exists == false)
            #expect(try await f.store.reading { db in try db.get("devices/dev-r") }["status"] == nil)

            // Only admins see the list and the image.
            for route in ["/v1/reports", "/v1/reports/\(id)/image"] {
                try await client.execute(uri: route, method: .get, headers: device) { #expect($0.status == .forbidden) }
            }
            try await client.execute(uri: "/v1/reports/\(id)/approve", method: .post, headers: device) {
                #expect($0.status == .forbidden)
            }
            try await client.execute(uri: "/v1/reports", method: .get, headers: admin) { r in
                let reports = try #require(value(r)["reports"]?.elements)
                #expect(reports.map { $0["reportId"]?.stringValue } == [id])
                #expect(reports.first?["image"] == .bool(true))
                #expect(reports.first?["evidence"]?.elements?.count == 5)
                #expect(value(r)["review"] == "doubtful")
            }
            try await client.execute(uri: "/v1/reports/\(id)/image", method: .get, headers: admin) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.contentType] == "image/png" && r.headers[.cacheControl] == "no-store")
                #expect(r.headers[.contentDisposition] == "inline; filename=\"report-\(id)\"")
                #expect(Array(r.body.readableBytesView) == doubtful)
            }
            try await client.execute(uri: "/v1/reports?status=maybe", method: .get, headers: admin) {
                #expect($0.status == .badRequest)
            }
            try await client.execute(
                uri: "/v1/reports/\(id)/approve",
                method: .post,
                headers: admin,
                body: ByteBuffer(string: "not json")
            ) { #expect($0.status == .badRequest) }

            // Approved: the colleague is flagged; the image is gone; a second decision is a 409.
            try await client.execute(
                uri: "/v1/reports/\(id)/approve",
                method: .post,
                headers: admin,
                body: ByteBuffer(string: #"{"note": "checked with the lab"}"#)
            ) { r in
                #expect(r.status == .ok, "\(String(buffer: r.body))")
                let decided = value(r)
                #expect(decided["report.status"] == "accepted" && decided["report.decidedBy"] == "health team")
                #expect(decided["outcome"]?.stringValue?.contains("1 device flagged") == true, "\(decided)")
            }
            #expect(try await f.store.reading { db in try db.get("devices/dev-c") }["status"] == "exposed")
            try await client.execute(uri: "/v1/reports/\(id)/image", method: .get, headers: admin) { r in
                #expect(r.status == .notFound && errorCode(r) == "no_image")
            }
            try await client.execute(uri: "/v1/reports/\(id)/deny", method: .post, headers: admin) { r in
                #expect(r.status == .conflict && errorCode(r) == "not_pending")
            }
            try await client.execute(uri: "/v1/reports/00000000000000000000/deny", method: .post, headers: admin) {
                #expect($0.status == .notFound)
            }
            try await client.execute(uri: "/v1/reports/..%2Fx/deny", method: .post, headers: admin) {
                #expect($0.status == .badRequest)
            }
            try await client.execute(uri: "/v1/reports?status=accepted", method: .get, headers: admin) { r in
                #expect(value(r)["reports"]?.elements?.first?["note"] == "checked with the lab")
            }
        }
        let audit = try await f.store.reading { db in try db.getDocuments(Query(collection: Collections.audit)) }
        #expect(audit.contains { $0["method"] == "APPROVE" && $0["tokenName"] == "health team" })
    }

    /// Signed certificates over the API, under the site's trust list: a trusted positive is
    /// accepted, a tampered one refused by its signature (one submit path with the command).
    @Test func signedCertificatesAreCheckedAgainstTheSitesTrustList() async throws {
        await ResultImages.ready()
        let pem = try String(contentsOfFile: ResultImages.file("trust.pem"), encoding: .utf8)
        let f = try await ServerFixture(site: { $0.verification.trustListPEM = pem })
        let (th, tb) = try f.upload("dcc-tampered.png", device: "dev-s")
        let (ph, pb) = try f.upload("dcc-photo-positive.jpg", device: "dev-s")
        try await f.app().test(.router) { client in
            try await client.execute(uri: "/v1/reports", method: .post, headers: th, body: tb) { r in
                #expect(r.status == .unprocessableContent, "\(String(buffer: r.body))")
                let rules = try #require(decoded(Components.Schemas.ReportOutcome.self, r)?.rules)
                #expect(rules.first?.name == "signature" && rules.first?.passed == false)
            }
            try await client.execute(uri: "/v1/reports", method: .post, headers: ph, body: pb) { r in
                #expect(r.status == .created, "\(String(buffer: r.body))")
                #expect(String(buffer: r.body).contains("key id "))
            }
        }
        #expect(try await f.store.reading { db in try db.get("devices/dev-s") }["status"] == "positive")
    }

    /// With `review: all` every upload the rules accept waits too.
    @Test func aSiteReviewingEverythingHoldsEveryUpload() async throws {
        let f = try await ServerFixture(site: { $0.verification.review = "all" })
        await ResultImages.ready()
        let (headers, body) = try f.upload("lab-pcr-positive.png", device: "dev-9")
        try await f.app().test(.router) { client in
            try await client.execute(uri: "/v1/reports", method: .post, headers: headers, body: body) { r in
                #expect(r.status == .accepted, "\(String(buffer: r.body))")
                let outcome = try #require(decoded(Components.Schemas.ReportOutcome.self, r))
                #expect(outcome.status == .pending && outcome.doubts == [])
            }
        }
        #expect(try await f.store.reading { db in try db.get("devices/dev-9") }["status"] == nil)
    }

    /// The site's verification settings hold on the server as on a kiosk: a result two days
    /// old is refused where the map allows one day.
    @Test func theSitesVerificationSettingsApplyToUploads() async throws {
        let f = try await ServerFixture(site: { $0.verification.maxAgeDays = 1 })
        await ResultImages.ready()
        let (headers, body) = try f.upload("lab-pcr-positive.png", device: "dev-9")
        try await f.app().test(.router) { client in
            try await client.execute(uri: "/v1/reports", method: .post, headers: headers, body: body) { r in
                #expect(r.status == .unprocessableContent, "\(String(buffer: r.body))")
                let rules = try #require(decoded(Components.Schemas.ReportOutcome.self, r)?.rules)
                #expect(rules.contains { $0.name == "date" && !$0.passed })
            }
        }
        #expect(try await f.store.reading { db in try db.getDocuments(Query(collection: Collections.reports)) }.isEmpty)
    }

    /// Every OCR thread busy and the queue full: 503 with Retry-After at once, nothing stored.
    @Test func aFullOCRQueueIsA503WithRetryAfter() async throws {
        let f = try await ServerFixture(ocrQueue: 0)
        await ResultImages.ready()
        let (headers, body) = try f.upload("lab-pcr-positive.png", device: "dev-9")
        // The pool's two threads taken, as by two uploads being read.
        f.api.ocr.admitted.store(f.api.ocr.threads, ordering: .relaxed)
        try await f.app().test(.router) { client in
            try await client.execute(uri: "/v1/reports", method: .post, headers: headers, body: body) { r in
                #expect(r.status == .serviceUnavailable)
                #expect(errorCode(r) == "busy")
                #expect(r.headers[.retryAfter] == "2")
            }
        }
        f.api.ocr.admitted.store(0, ordering: .relaxed)
        #expect(try await f.store.reading { db in try db.getDocuments(Query(collection: Collections.reports)) }.isEmpty)
    }

    @Test func anUploadOverTheLimitIs413() async throws {
        let f = try await ServerFixture()
        let big = [UInt8](repeating: 0x89, count: API.maxUpload + 1)
        var (h, b) = form([("image", "big.png", big), ("deviceId", nil, Array("dev-1".utf8))])
        h.append(contentsOf: ServerFixture.bearer(f.kiosk))
        let (headers, body) = (h, b)
        try await f.app().test(.router) { client in
            try await client.execute(uri: "/v1/reports", method: .post, headers: headers, body: body) { r in
                #expect(r.status == .contentTooLarge)
                #expect(errorCode(r) == "too_large")
            }
        }
    }

    @Test func responsesRotateTheirIdentifiers() async throws {
        let f = try await ServerFixture()
        for (id, device, status) in [
            ("rep-a", "dev-1", "accepted"), ("rep-b", "dev-2", "accepted"), ("rep-c", "dev-3", "revoked"),
        ] {
            try await f.store.writing { db in
                try db.set(
                    DocumentPath("reports/\(id)"),
                    [
                        "deviceId": .string(device), "status": .string(status), "createdAt": .serverTimestamp,
                        "collectedAt": .timestamp(Timestamp(seconds: Date().timeIntervalSince1970 - 86_400)),
                    ]
                )
            }
        }
        try await f.store.writing { db in
            try db.set(
                DocumentPath("reports/rep-old"),
                [
                    "deviceId": "dev-4", "status": "accepted",
                    "createdAt": .timestamp(Timestamp(seconds: Date().timeIntervalSince1970 - 20 * 86_400)),
                ]
            )
        }
        func ids(_ api: API) async throws -> [String] {
            try await Application(router: try api.router()).test(.router) { client in
                try await client.execute(uri: "/v1/responses", method: .get, headers: ServerFixture.bearer(f.device)) {
                    r in
                    #expect(r.status == .ok)
                    let text = String(buffer: r.body)
                    for secret in ["rep-a", "rep-b", "dev-1", "dev-2", "deviceId", "imageSHA256"] {
                        #expect(!text.contains(secret), "\(secret) in \(text)")
                    }
                    return decoded(Components.Schemas.PublicResponses.self, r)?.responses.map(\.id) ?? []
                }
            }
        }
        let first = try await ids(f.api)
        #expect(first.count == 2, "the accepted reports of the last 14 days")
        #expect(try await ids(f.api) == first, "stable within a day on one server")
        let other = try await API(store: f.store, site: nil, engine: ExposureEngine())
        #expect(Set(try await ids(other)).isDisjoint(with: first), "another key, other ids")
    }
}

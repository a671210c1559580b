import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization
import TracerAPI
import TracerCertificate
import TracerExposure
import TracerModel
import TracerOCR
import TracerReports
import TracerSite
import TracerStore
import TracerVerification

/// The admin HTTP API and the dashboard: every route, who may call it, and what it answers.
public final class API: AsyncShutdown {
    /// An upload's limit: the largest image tracer reads, and room for the form around it.
    public static let maxUpload = ImageLimits().maxBytes + 64 * 1024

    public let store: DocumentStore
    public let site: Site?
    public let engine: ExposureEngine
    public let limiter: FailureLimiter
    /// Failed link codes per client (`POST /v1/links`), apart from failed tokens: guessing at
    /// links is slowed without locking a client's tokens out. On the API's clock (a test's fixed
    /// one: ten failures then 429, however slowly a loaded machine sends them).
    public let linkLimiter: FailureLimiter
    /// The site's Web Push key (base64url), for the person's page to subscribe with.
    let pushKey: String
    /// The site's key for watch tickets (`config/watchKey`).
    let watchKey: [UInt8]
    /// The hosts Web Push goes to (the site's `pushServices`, else the big three browsers').
    public let pushServices: Set<String>
    /// Seconds the site keeps interactions, exposures and review holds (`retentionDays`).
    public let retention: Double
    /// Devices seen at an anchor within this many seconds count as there now.
    public let occupancyWindow: Double
    /// The time occupancy is judged at (the wall clock; tests give a fixed one).
    let clock: @Sendable () -> Date
    /// Reads uploaded pages: a fixed pool of threads, one engine each, and a bounded queue.
    let ocr: OCRPool
    /// Verifies, records and flags reports under the site's policy (as `tracer self-report` does).
    let desk: SelfReportDesk
    let rotationKey: [UInt8]
    let started = Date()
    /// Kiosks' batches.
    let sync: SyncEndpoint
    /// Days of badge ids made lately, by ETag, as the JSON answered (`GET /v1/badges/ids`).
    let badgeDays = Mutex<[String: Data]>([:])
    /// A kiosk unheard for longer than this is shown as silent (it sends at least every 15 s).
    public static let silentAfter = 60.0

    public init(
        store: DocumentStore,
        site: Site?,
        engine: ExposureEngine,
        limiter: FailureLimiter = FailureLimiter(),
        occupancyWindow: Double = 120,
        ocrSlots: Int = 2,
        ocrQueue: Int = 8,
        ocrDeadline: Duration = OCREngine.defaultDeadline,
        reviewImages: ReviewImages? = nil,
        clock: @escaping @Sendable () -> Date = { Date() },
        logger: Logger = Logger(label: "tracer.serve")
    ) async throws {
        self.clock = clock
        self.retention = (site?.exposure.retentionDays ?? Retention.defaultDays) * 86_400
        self.linkLimiter = FailureLimiter(clock: { clock().timeIntervalSince1970 })
        self.store = store
        self.site = site
        self.engine = engine
        self.limiter = limiter
        self.occupancyWindow = occupancyWindow
        self.ocr = OCRPool(threads: ocrSlots, queueLimit: ocrQueue, deadline: ocrDeadline)
        let trustList = try site.flatMap { try TrustList($0.verification) }
        for line in trustList?.skipped ?? [] { logger.warning("trust list: \(line)") }
        var desk = SelfReportDesk(
            flagging: engine,
            policy: site.map { VerificationPolicy($0.verification) } ?? VerificationPolicy(),
            trustList: trustList,
            images: reviewImages
        )
        desk.retention = self.retention
        self.desk = desk
        self.rotationKey = Array(TokenStore.random(32).utf8)
        let anchors = Set(site?.anchors.map(\.key) ?? [])
        self.sync = SyncEndpoint(store: store, logger: logger, retention: retention) { anchors.contains($0) }
        (self.pushKey, self.watchKey) = try await store.writing { db in
            try Indexes.declare(in: db)
            return (try WebPush.sitePublicKey(in: db), try WatchTicket.key(in: db))
        }
        self.pushServices = site?.pushServices ?? PushSubscription.defaultServices
    }

    /// Releases the API's threads (the OCR pool's), waiting for them to end: `tracer serve` on its
    /// way out, after the HTTP server has stopped. The store is its owner's to close.
    public func shutdown() async {
        await ocr.close()
    }

    /// Every route, by whom it serves. Every read and write of the store runs on the store's own
    /// threads (`reading`, `writing`), never on the cooperative threads that every request and
    /// stream shares.
    public func router() -> Router<TracerContext> {
        let router = Router(context: TracerContext.self)
        router.add(middleware: ErrorMiddleware())
        let table = MethodTable.Box()
        router.add(middleware: MethodNotAllowedMiddleware { table.table.withLock { $0 } })
        pages(router)
        tokenHolderRoutes(router)
        healthTeamRoutes(router)
        siteRoutes(router)
        let routes = MethodTable(router.routes)
        table.table.withLock { $0 = routes }
        return router
    }

    /// The pages (the dashboard, the person's page and its worker), the API's document, health and
    /// features: no token.
    func pages(_ router: Router<TracerContext>) {
        router.get("/") { _, _ in Dashboard.response() }
        router.get("/dashboard") { _, _ in Dashboard.response() }
        router.get("/openapi.yaml") { _, _ in OpenAPIDocument.response() }
        router.get("/me") { _, _ in PersonPage.response() }
        router.get("/me/sw.js") { _, _ in PersonPage.worker() }
        router.get("/health") { [self] _, _ in await health() }
        router.get("/v1/features") { [self] _, _ in JSONBody.response(encoding: features()) }
    }

    /// What a person's page and any token holder use: the link exchanged, push subscriptions, the
    /// token itself, the device's status, the watch, the responses' texts.
    func tokenHolderRoutes(_ router: Router<TracerContext>) {
        router.post("/v1/links") { [self] request, context in try await exchangeLink(request, context) }
        router.post("/v1/devices/:id/push") { [self] request, context in
            try await subscribe(request, context, Self.key(context.parameters.require("id"), "device id"))
        }
        router.delete("/v1/devices/:id/push") { [self] request, context in
            try await unsubscribe(request, context, Self.key(context.parameters.require("id"), "device id"))
        }
        router.get("/v1/tokens/self") { [self] request, context in
            let who = try await authorize(request, context, [.admin, .kiosk, .device])
            return JSONBody.response(
                encoding: Operations.OwnToken.Output.Ok.Body.JsonPayload(
                    id: who.tokenID,
                    role: .init(rawValue: who.role.rawValue) ?? .device,
                    name: who.name,
                    deviceId: who.deviceID,
                    anchor: who.anchor
                )
            )
        }
        router.delete("/v1/tokens/self") { [self] request, context in
            // A person's "forget this phone": the token presented revokes itself.
            let who = try await authorize(request, context, [.device])
            _ = try await store.writing { db in try TokenStore.revoke(who.tokenID, in: db) }
            return JSONBody.response(encoding: Components.Schemas.Revoked(revoked: true))
        }
        router.get("/v1/page") { [self] request, context in
            try await authorize(request, context, [.admin, .kiosk, .device])
            return JSONBody.response(encoding: page)
        }
        router.get("/v1/devices/:id") { [self] request, context in
            let id = try Self.key(context.parameters.require("id"), "device id")
            // The token, the device and its exposures: one statement, one snapshot.
            // Not a kiosk's: a stolen kiosk token must not tell whose badge is positive or exposed.
            let (_, status) = try await authorize(
                request,
                context,
                [.admin, .device],
                reading: [Collections.device(id)],
                collections: [Collections.exposures(of: id)]
            ) { who, read in
                if who.role == .device, who.deviceID != id {
                    throw APIError.forbidden("a device token reads its own device only")
                }
                return Components.Schemas.DeviceStatus(
                    id,
                    document: read.documents[0],
                    exposures: Exposure.ordered(read.collections[0])
                ).value
            }
            return JSONBody.response(status)
        }
        router.get("/v1/responses") { [self] request, context in
            try await authorize(request, context, [.admin, .kiosk, .device])
            return try await store.reading { db in JSONBody.response(encoding: try self.responses(in: db)) }
        }
        router.post("/v1/watch/ticket") { [self] request, context in
            let who = try await authorize(request, context, [.admin, .device])
            let path = try Watch.checkedPath(request, who)
            let ticket = WatchTicket.make(
                tokenID: who.tokenID,
                path: path,
                now: clock().timeIntervalSince1970,
                key: watchKey
            )
            return JSONBody.response(
                encoding: Components.Schemas.WatchTicket(ticket: ticket, expiresInSeconds: Int(WatchTicket.lifetime)),
                status: .created
            )
        }
        router.get("/v1/watch") { [self] request, context in
            let who = try await watcher(request, context)
            return try await store.reading { db in try Watch.response(self, request, who) }
        }
    }

    /// The health team's: exposures per beacon and per report, reports (sent by any holder), their
    /// images, flagging, revoking and review.
    func healthTeamRoutes(_ router: Router<TracerContext>) {
        router.get("/v1/beacons") { [self] request, context in
            try await authorize(request, context, [.admin])
            return try await store.reading { db in JSONBody.response(encoding: try self.beacons(in: db)) }
        }
        router.get("/v1/beacons/:key/exposures") { [self] request, context in
            try await authorize(request, context, [.admin])
            let key = try Self.key(context.parameters.require("key"), "beacon key")
            let since = try Self.since(request.uri.queryParameters["since"].map(String.init))
            let (store, site) = (self.store, self.site)
            let docs = try await store.reading { (db: StoreReader) throws(any Error) -> [DocumentSnapshot] in
                if let unknown = try ExposureViews.unknownBeacon(key, site: site, in: db) {
                    throw APIError(.notFound, .notFound, unknown)
                }
                return try ExposureViews.atBeacon(key, since: since, in: db)
            }
            return JSONBody.response(
                Components.Schemas.BeaconExposures(
                    beaconKey: key,
                    exposures: docs.map(Components.Schemas.Exposure.init)
                ).value
            )
        }
        router.get("/v1/reports/:id/exposures") { [self] request, context in
            try await authorize(request, context, [.admin])
            let id = try Self.key(context.parameters.require("id"), "report id")
            let store = self.store
            guard let found = try await store.reading({ db in try ExposureViews.forReport(id, in: db) }) else {
                throw APIError(.notFound, .notFound, "no report \(id)")
            }
            return JSONBody.response(found.value)
        }
        router.post("/v1/reports") { [self] request, context in
            let who = try await authorize(request, context, [.admin, .kiosk, .device])
            return try await report(request, context, who)
        }
        router.get("/v1/reports") { [self] request, context in
            try await authorize(request, context, [.admin])
            return try await store.reading { db in try self.reviewList(request, in: db) }
        }
        router.get("/v1/reports/:id/image") { [self] request, context in
            try await authorize(request, context, [.admin])
            let id = try Self.key(context.parameters.require("id"), "report id")
            return try await store.reading { db in try self.reviewImage(id, in: db) }
        }
        router.post("/v1/reports/:id/flag") { [self] request, context in
            try await authorize(request, context, [.admin])
            let id = try Self.key(context.parameters.require("id"), "report id")
            let (store, engine) = (self.store, self.engine)
            let r = try await Self.exposureErrors {
                try await store.writing { db in try engine.flag(reportID: id, in: db) }
            }
            return JSONBody.response(
                encoding: Components.Responses.Flagged.Body.JsonPayload(
                    reportId: id,
                    devices: r.exposedDevices.count,
                    exposures: r.exposures,
                    changed: r.changed,
                    line: ExposureEngine.line(id, r)
                )
            )
        }
        router.post("/v1/reports/:id/revoke") { [self] request, context in
            try await authorize(request, context, [.admin])
            let id = try Self.key(context.parameters.require("id"), "report id")
            let store = self.store
            let n = try await Self.exposureErrors {
                try await store.writing { db in try ExposureEngine().revoke(reportID: id, in: db) }
            }
            return JSONBody.response(
                encoding: Components.Responses.Flagged.Body.JsonPayload(
                    reportId: id,
                    devices: 0,
                    exposures: 0,
                    changed: n,
                    line: "report \(id) revoked; \(ExposureEngine.count(n, "exposure")) removed"
                )
            )
        }
        router.post("/v1/reports/:id/approve") { [self] request, context in
            let who = try await authorize(request, context, [.admin])
            return try await decide(
                request,
                Self.key(context.parameters.require("id"), "report id"),
                approve: true,
                who
            )
        }
        router.post("/v1/reports/:id/deny") { [self] request, context in
            let who = try await authorize(request, context, [.admin])
            return try await decide(
                request,
                Self.key(context.parameters.require("id"), "report id"),
                approve: false,
                who
            )
        }
    }

    /// The site's machinery: kiosks' sync, the kiosks, the published site, its calibration, the
    /// badges' ids.
    func siteRoutes(_ router: Router<TracerContext>) {
        router.post("/v1/sync") { [self] request, context in
            let who = try await authorize(request, context, [.kiosk, .admin])
            return try await sync.handle(request, who)
        }
        router.get("/v1/kiosks") { [self] request, context in
            try await authorize(request, context, [.admin])
            return try await store.reading { db in JSONBody.response(encoding: try self.kiosks(in: db)) }
        }
        router.get("/v1/site") { [self] request, context in
            try await authorize(request, context, [.admin, .kiosk, .device])
            return try await store.reading { db in try self.publishedSite(request, in: db) }
        }
        router.get("/v1/site/calibration") { [self] request, context in
            try await authorize(request, context, [.admin])
            return try await store.reading { db in try self.siteCalibration(request, in: db) }
        }
        router.get("/v1/badges/ids") { [self] request, context in
            let who = try await authorize(request, context, [.admin, .kiosk])
            return try await store.reading { db in try self.badgeIDs(request, who, in: db) }
        }
    }

    // MARK: Who is asking

    static let lastEventID = HTTPField.Name("Last-Event-ID")!

    /// Who watches: the bearer token, or a watch ticket for this very path (a page's
    /// EventSource, which cannot send headers; never the token itself in a URL).
    func watcher(_ request: Request, _ context: TracerContext) async throws -> Principal {
        guard request.headers[.authorization] == nil, let ticket = request.uri.queryParameters["ticket"] else {
            return try await authorize(request, context, [.admin, .device])
        }
        try limiter.refuseIfLimited(context.client, "token attempts")
        let path = request.uri.queryParameters["path"].map(String.init) ?? ""
        guard
            let id = WatchTicket.tokenID(
                String(ticket),
                path: path,
                now: clock().timeIntervalSince1970,
                key: watchKey
            ),
            let record = try? Collections.token(id)
        else {
            limiter.failed(context.client)
            throw APIError.unauthorized(
                "the watch ticket is expired, forged or for another path: ask for a new one (POST /v1/watch/ticket?path=…)"
            )
        }
        let store = self.store
        guard let who = try await store.reading({ db in TokenStore.principal(id: id, stored: try db.get(record)) }),
            [.admin, .device].contains(who.role)
        else {
            limiter.failed(context.client)
            throw APIError.unauthorized("the token this ticket was made for is revoked")
        }
        if who.role == .admin { try await audit(who, request) }
        return who
    }

    /// Checks the token (a bearer header: never a URL's, which logs keep; a page's stream has
    /// a watch ticket, `watcher`), the client's failures and the role; writes an admin's request
    /// to the audit collection.
    @discardableResult
    func authorize(
        _ request: Request,
        _ context: TracerContext,
        _ roles: Set<Role>
    ) async throws -> Principal {
        try await authorize(request, context, roles, reading: []) { _, _ in () }.who
    }

    /// `authorize`, with documents and collections the route answers with read by the same
    /// statement as the token's record (`DocumentStore.fetch`): one round trip to PostgreSQL
    /// instead of two or more. `answer` makes the route's answer of them on the store's thread,
    /// as the reads before it (on the cooperative threads, the device route's answer cost SQLite
    /// 15%: those two threads were the busiest, `Tools/bench/serve`); it runs only once the token
    /// is found good and its role allowed.
    func authorize<Answer: Sendable>(
        _ request: Request,
        _ context: TracerContext,
        _ roles: Set<Role>,
        reading paths: [DocumentPath],
        collections: [CollectionPath] = [],
        answer: @escaping @Sendable (Principal, Fetched) throws -> Answer
    ) async throws -> (who: Principal, answer: Answer) {
        // No token at all is no guess at one: 401 at once, whatever the client tried before.
        guard request.headers[.authorization] != nil else {
            throw APIError.unauthorized("a token is needed: Authorization: Bearer tracer_… (tracer token create)")
        }
        try limiter.refuseIfLimited(context.client, "token attempts")
        var presented: String?
        if let header = request.headers[.authorization] {
            guard header.lowercased().hasPrefix("bearer ") else {
                limiter.failed(context.client)
                throw APIError.unauthorized("the Authorization header takes 'Bearer tracer_…'")
            }
            presented = String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        }
        guard let presented else {
            throw APIError.unauthorized("a token is needed: Authorization: Bearer tracer_… (tracer token create)")
        }
        let store = self.store
        let method = request.method
        let path = request.uri.path
        let judged: (Principal, Answer)? = try await store.reading { db in
            guard let claim = TokenStore.Claim(presented) else { return nil }
            let fetched = try db.fetch([claim.path] + paths, collections: collections)
            guard let who = TokenStore.principal(claim, stored: fetched.documents[0]) else { return nil }
            guard roles.contains(who.role) else {
                throw APIError.forbidden("a \(who.role.rawValue) token may not \(method) \(path)")
            }
            let read = Fetched(documents: Array(fetched.documents.dropFirst()), collections: fetched.collections)
            return (who, try answer(who, read))
        }
        guard let (who, answer) = judged else {
            limiter.failed(context.client)
            throw APIError.unauthorized("the token is not valid: unknown, revoked or mistyped")
        }
        if who.role == .admin { try await audit(who, request) }
        return (who, answer)
    }

    /// `audit/{id}`: who (the token's id and name), what (method and path with its query,
    /// without a token), when (the server's time).
    func audit(_ who: Principal, _ request: Request) async throws {
        var what = request.uri.path
        if let query = request.uri.query, !query.isEmpty {
            let kept = query.split(separator: "&").filter { !$0.hasPrefix("ticket=") }
            if !kept.isEmpty { what += "?" + kept.joined(separator: "&") }
        }
        let entry = AuditEntry(
            tokenID: who.tokenID,
            tokenName: who.name,
            role: who.role,
            method: request.method.rawValue,
            path: what
        )
        let store = self.store
        _ = try await store.writing { db in try db.add(Collections.audit, entry.data) }
    }

    // MARK: Input

    /// A beacon key or device id from a URL: letters, digits and `-_.:`, at most 128; never a
    /// path of its own (`..`, `/`, `%2F`).
    static func key(_ raw: String, _ what: String) throws -> String {
        let value = raw.removingPercentEncoding ?? raw
        guard Identifier.isValid(value) else {
            throw APIError.badRequest("not a \(what): '\(value.prefix(80))' (letters, digits and - _ . : only)")
        }
        return value
    }

    /// `since=2026-11-20` or `since=2026-11-20T10:00:00Z`, as the store parses times.
    static func since(_ raw: String?, name: String = "since") throws -> Timestamp? {
        guard let raw else { return nil }
        // A day or an RFC 3339 time, as the document says (not Unix seconds, which the store's
        // parser also reads).
        guard Double(raw) == nil, let t = Timestamp(parsing: raw) else {
            throw APIError.badRequest(
                "\(name) takes a date (2026-11-20) or a time (2026-11-20T10:00:00Z), not '\(raw.prefix(80))'"
            )
        }
        return t
    }
}

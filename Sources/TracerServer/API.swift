import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import OpenAPIRuntime
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
    /// The fit up to now (`GET /v1/site/calibration` without `at`), by whether the exponent was
    /// held at the map's, with when it was worked out: every kiosk asks for it, and hearings come
    /// in 5-minute slots, so it is worked out at most once every `calibrationReuse` seconds.
    let calibrations = Mutex<[Bool: (at: Double, fit: Components.Schemas.SiteCalibration)]>([:])
    public static let calibrationReuse = 300.0
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
    public func router() throws -> Router<TracerContext> {
        let router = Router(context: TracerContext.self)
        router.add(middleware: ErrorMiddleware())
        let table = MethodTable.Box()
        router.add(middleware: MethodNotAllowedMiddleware { table.table.withLock { $0 } })
        handWrittenRoutes(router)
        // The document's other operations, through the generated server (API+Operations.swift).
        let generated = GeneratedRoutes(
            router.group().add(middleware: CallerMiddleware()),
            skipping: Self.handWritten
        )
        try registerHandlers(
            on: generated,
            configuration: Configuration(jsonEncodingOptions: [.sortedKeys, .withoutEscapingSlashes]),
            middlewares: [AnswerMiddleware(nulls: .served)]
        )
        try generated.checkSkipped()
        let routes = MethodTable(router.routes)
        table.table.withLock { $0 = routes }
        return router
    }

    /// Whether the device's exposures include one flagged after its page last read them.
    static func unseen(_ exposures: [DocumentSnapshot], by device: DocumentSnapshot) -> Bool {
        let seen = device["seenAt"]?.timestampValue?.seconds ?? -.infinity
        let flaggedAt = FieldPath(stringLiteral: Exposure.Field.flaggedAt)
        return exposures.contains { ($0[flaggedAt]?.timestampValue?.seconds ?? -.infinity) > seen }
    }

    /// The routes answered by hand (`handWritten` says why): the pages, a device's status, a
    /// report's upload, kiosks' batches and badge ids, the watch.
    func handWrittenRoutes(_ router: Router<TracerContext>) {
        router.get("/") { _, _ in Dashboard.response() }
        router.get("/dashboard") { _, _ in Dashboard.response() }
        router.get("/openapi.yaml") { _, _ in OpenAPIDocument.response() }
        router.get("/me") { _, _ in PersonPage.response() }
        router.get("/me/sw.js") { _, _ in PersonPage.worker() }
        router.get("/me/manifest.json") { [self] _, _ in PersonPage.manifest(site: site?.name) }
        router.get("/me/icons/:name") { _, context in try PersonPage.icon(context.parameters.require("name")) }
        router.get("/v1/devices/:id") { [self] request, context in
            let id = try Self.key(context.parameters.require("id"), "device id")
            // The token, the device and its exposures: one statement, one snapshot.
            // Not a kiosk's: a stolen kiosk token must not tell whose badge is positive or exposed.
            let (_, (status, unseen)) = try await authorize(
                Caller(head: request.head, client: context.client),
                [.admin, .device],
                reading: [Collections.device(id)],
                collections: [Collections.exposures(of: id)]
            ) { who, read in
                if who.role == .device, who.deviceID != id {
                    throw APIError.forbidden("a device token reads its own device only")
                }
                let exposures = read.collections[0]
                let status = Components.Schemas.DeviceStatus(
                    id,
                    document: read.documents[0],
                    exposures: Exposure.ordered(exposures)
                ).value
                return (status, who.role == .device && Self.unseen(exposures, by: read.documents[0]))
            }
            // The person's page has now shown an exposure it had not: written once (the health
            // team's "page has seen this exposure"), not at every read of this hot route.
            if unseen {
                let path = try Collections.device(id)
                _ = try? await store.writing { db in try db.set(path, ["seenAt": .serverTimestamp], merge: true) }
            }
            return JSONBody.response(status)
        }
        router.get("/v1/watch") { [self] request, context in
            let who = try await watcher(request, context)
            return try await store.reading { db in try Watch.response(self, request, who) }
        }
        router.post("/v1/reports") { [self] request, context in
            let who = try await authorize(request, context, [.admin, .kiosk, .device])
            return try await report(request, context, who)
        }
        router.post("/v1/sync") { [self] request, context in
            let who = try await authorize(request, context, [.kiosk, .admin])
            return try await sync.handle(request, who)
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
        if who.role == .admin { try await audit(who, Caller(head: request.head, client: context.client)) }
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
        try await authorize(Caller(head: request.head, client: context.client), roles, reading: []) { _, _ in () }.who
    }

    /// `authorize` for the generated routes: the request they answer.
    @discardableResult
    func authorize(_ roles: Set<Role>) async throws -> Principal {
        try await authorize(try Caller.now, roles, reading: []) { _, _ in () }.who
    }

    /// `authorize`, with documents and collections the route answers with read by the same
    /// statement as the token's record (`DocumentStore.fetch`): one round trip to PostgreSQL
    /// instead of two or more. `answer` makes the route's answer of them on the store's thread,
    /// as the reads before it (on the cooperative threads, the device route's answer cost SQLite
    /// 15%: those two threads were the busiest, `Tools/bench/serve`); it runs only once the token
    /// is found good and its role allowed.
    func authorize<Answer: Sendable>(
        _ caller: Caller,
        _ roles: Set<Role>,
        reading paths: [DocumentPath],
        collections: [CollectionPath] = [],
        answer: @escaping @Sendable (Principal, Fetched) throws -> Answer
    ) async throws -> (who: Principal, answer: Answer) {
        // No token at all is no guess at one: 401 at once, whatever the client tried before.
        guard let header = caller.head.headerFields[.authorization] else {
            throw APIError.unauthorized("a token is needed: Authorization: Bearer tracer_… (tracer token create)")
        }
        try limiter.refuseIfLimited(caller.client, "token attempts")
        guard header.lowercased().hasPrefix("bearer ") else {
            limiter.failed(caller.client)
            throw APIError.unauthorized("the Authorization header takes 'Bearer tracer_…'")
        }
        let presented = String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        let store = self.store
        let method = caller.head.method
        let path = caller.path
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
            limiter.failed(caller.client)
            throw APIError.unauthorized("the token is not valid: unknown, revoked or mistyped")
        }
        if who.role == .admin { try await audit(who, caller) }
        return (who, answer)
    }

    /// `audit/{id}`: who (the token's id and name), what (method and path with its query,
    /// without a token), when (the server's time).
    func audit(_ who: Principal, _ caller: Caller) async throws {
        var what = caller.path
        if let query = caller.query, !query.isEmpty {
            let kept = query.split(separator: "&").filter { !$0.hasPrefix("ticket=") }
            if !kept.isEmpty { what += "?" + kept.joined(separator: "&") }
        }
        let entry = AuditEntry(
            tokenID: who.tokenID,
            tokenName: who.name,
            role: who.role,
            method: caller.head.method.rawValue,
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

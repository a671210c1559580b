import Foundation
import HTTPTypes
import OpenAPIRuntime
import TracerAPI
import TracerExposure
import TracerModel
import TracerStore

/// The API's operations as the document's generated protocol: each takes the operation's input
/// (its parameters and body, decoded and checked against the document by the generated server)
/// and answers with one of its outputs; refusals are thrown as `APIError`, one funnel for every
/// route. Who asks comes from `Caller` (the bearer token is not an input of the document's).
extension API: APIProtocol {
    /// The operations answered by routes of their own, and why. Everything else is the generated
    /// server's, here.
    static let handWritten: Set<String> = [
        // The pages: each with headers of its own that are not the contract's (a content security
        // policy, the service worker's scope) and the document itself.
        "GET /", "GET /dashboard", "GET /me", "GET /me/sw.js", "GET /me/manifest.json", "GET /me/icons/{name}",
        "GET /openapi.yaml",
        // The hot route (every open page polls it, and the benchmark's device route): its token,
        // device and exposures are one statement of the store, and its answer is written by the
        // store's JSON writer on the store's thread (Foundation's encoder cost SQLite 15% there).
        "GET /v1/devices/{id}",
        // An upload of up to 20 MiB, multipart: the form is checked as it comes and the image
        // read by the OCR pool; the generated server would hold it whole before any check.
        "POST /v1/reports",
        // A kiosk's batch of up to 32 MiB, decoded on a thread of its own (the cooperative
        // threads stay free for /health and the pages), the sizes held to the kiosk's limits.
        "POST /v1/sync",
        // A stream (server-sent events), open for hours, with a ticket in its URL for pages.
        "GET /v1/watch",
        // A day of every badge's ids is megabytes, asked for by every kiosk: answered from a
        // cache of the encoded JSON, which a generated output cannot carry.
        "GET /v1/badges/ids",
    ]

    /// An operation of `handWritten`: the router never calls it here.
    func answeredByHand(_ operation: String) -> APIError {
        APIError(.internalServerError, ._internal, "\(operation) is answered by its own route, not here")
    }

    public func dashboard(_ input: Operations.Dashboard.Input) async throws -> Operations.Dashboard.Output {
        throw answeredByHand("GET /")
    }

    public func dashboardAgain(
        _ input: Operations.DashboardAgain.Input
    ) async throws -> Operations.DashboardAgain.Output {
        throw answeredByHand("GET /dashboard")
    }

    public func personPage(_ input: Operations.PersonPage.Input) async throws -> Operations.PersonPage.Output {
        throw answeredByHand("GET /me")
    }

    public func personPageManifest(
        _ input: Operations.PersonPageManifest.Input
    ) async throws -> Operations.PersonPageManifest.Output {
        throw answeredByHand("GET /me/manifest.json")
    }

    public func personPageIcon(
        _ input: Operations.PersonPageIcon.Input
    ) async throws -> Operations.PersonPageIcon.Output {
        throw answeredByHand("GET /me/icons/{name}")
    }

    public func personPageWorker(
        _ input: Operations.PersonPageWorker.Input
    ) async throws
        -> Operations.PersonPageWorker.Output
    {
        throw answeredByHand("GET /me/sw.js")
    }

    public func openAPIDocument(
        _ input: Operations.OpenAPIDocument.Input
    ) async throws -> Operations.OpenAPIDocument.Output {
        throw answeredByHand("GET /openapi.yaml")
    }

    public func deviceStatus(_ input: Operations.DeviceStatus.Input) async throws -> Operations.DeviceStatus.Output {
        throw answeredByHand("GET /v1/devices/{id}")
    }

    public func submitReport(_ input: Operations.SubmitReport.Input) async throws -> Operations.SubmitReport.Output {
        throw answeredByHand("POST /v1/reports")
    }

    public func sync(_ input: Operations.Sync.Input) async throws -> Operations.Sync.Output {
        throw answeredByHand("POST /v1/sync")
    }

    public func watch(_ input: Operations.Watch.Input) async throws -> Operations.Watch.Output {
        throw answeredByHand("GET /v1/watch")
    }

    public func badgeIDs(_ input: Operations.BadgeIDs.Input) async throws -> Operations.BadgeIDs.Output {
        throw answeredByHand("GET /v1/badges/ids")
    }

    // MARK: No token

    public func health(_ input: Operations.Health.Input) async throws -> Operations.Health.Output {
        let (health, up) = await health()
        return up ? .ok(.init(body: .json(health))) : .serviceUnavailable(.init(body: .json(health)))
    }

    public func features(_ input: Operations.Features.Input) async throws -> Operations.Features.Output {
        .ok(.init(body: .json(features())))
    }

    public func exchangeLink(_ input: Operations.ExchangeLink.Input) async throws -> Operations.ExchangeLink.Output {
        guard case .json(let body) = input.body else { throw APIError.badRequest("a link's body is JSON") }
        return .ok(
            .init(body: .json(try await exchangeLink(body.code, attempt: body.attempt, client: try Caller.now.client)))
        )
    }

    // MARK: A token holder's

    public func subscribePush(_ input: Operations.SubscribePush.Input) async throws -> Operations.SubscribePush.Output {
        guard case .json(let body) = input.body else { throw APIError.badRequest("a subscription's body is JSON") }
        try await subscribe(Self.key(input.path.id, "device id"), APIJSON.value(body))
        return .created(.init(body: .json(.init(subscribed: true))))
    }

    public func unsubscribePush(
        _ input: Operations.UnsubscribePush.Input
    ) async throws -> Operations.UnsubscribePush.Output {
        guard case .json(let body) = input.body else { throw APIError.badRequest("the body is {\"endpoint\": \"…\"}") }
        try await unsubscribe(Self.key(input.path.id, "device id"), endpoint: body.endpoint)
        return .ok(.init(body: .json(.init(subscribed: false))))
    }

    public func ownToken(_ input: Operations.OwnToken.Input) async throws -> Operations.OwnToken.Output {
        let who = try await authorize([.admin, .kiosk, .device])
        return .ok(
            .init(
                body: .json(
                    .init(
                        id: who.tokenID,
                        role: .init(rawValue: who.role.rawValue) ?? .device,
                        name: who.name,
                        deviceId: who.deviceID,
                        anchor: who.anchor
                    )
                )
            )
        )
    }

    public func revokeOwnToken(
        _ input: Operations.RevokeOwnToken.Input
    ) async throws -> Operations.RevokeOwnToken.Output {
        // A person's "forget this phone": the token presented revokes itself.
        let who = try await authorize([.device])
        _ = try await store.writing { db in try TokenStore.revoke(who.tokenID, in: db) }
        return .ok(.init(body: .json(.init(revoked: true))))
    }

    public func personPageSettings(
        _ input: Operations.PersonPageSettings.Input
    ) async throws
        -> Operations.PersonPageSettings.Output
    {
        try await authorize([.admin, .kiosk, .device])
        return .ok(.init(body: .json(page)))
    }

    public func publicResponses(
        _ input: Operations.PublicResponses.Input
    ) async throws -> Operations.PublicResponses.Output {
        try await authorize([.admin, .kiosk, .device])
        return .ok(.init(body: .json(try await store.reading { db in try self.responses(in: db) })))
    }

    public func watchTicket(_ input: Operations.WatchTicket.Input) async throws -> Operations.WatchTicket.Output {
        let who = try await authorize([.admin, .device])
        let path = try Watch.checkedPath(
            path: input.query.path,
            since: input.query.since,
            field: input.query.field,
            who
        )
        let ticket = WatchTicket.make(
            tokenID: who.tokenID,
            path: path,
            now: clock().timeIntervalSince1970,
            key: watchKey
        )
        return .created(.init(body: .json(.init(ticket: ticket, expiresInSeconds: Int(WatchTicket.lifetime)))))
    }

    // MARK: The health team's

    public func beacons(_ input: Operations.Beacons.Input) async throws -> Operations.Beacons.Output {
        try await authorize([.admin])
        return .ok(.init(body: .json(try await store.reading { db in try self.beacons(in: db) })))
    }

    public func beaconExposures(
        _ input: Operations.BeaconExposures.Input
    ) async throws -> Operations.BeaconExposures.Output {
        try await authorize([.admin])
        let key = try Self.key(input.path.key, "beacon key")
        let since = try Self.since(input.query.since)
        let (store, site) = (self.store, self.site)
        let docs = try await store.reading { (db: StoreReader) throws(any Error) -> [DocumentSnapshot] in
            if let unknown = try ExposureViews.unknownBeacon(key, site: site, in: db) {
                throw APIError(.notFound, .notFound, unknown)
            }
            return try ExposureViews.atBeacon(key, since: since, in: db)
        }
        return .ok(.init(body: .json(.init(beaconKey: key, exposures: docs.map(Components.Schemas.Exposure.init)))))
    }

    public func reportExposures(
        _ input: Operations.ReportExposures.Input
    ) async throws -> Operations.ReportExposures.Output {
        try await authorize([.admin])
        let id = try Self.key(input.path.id, "report id")
        guard let found = try await store.reading({ db in try ExposureViews.forReport(id, in: db) }) else {
            throw APIError(.notFound, .notFound, "no report \(id)")
        }
        return .ok(.init(body: .json(found)))
    }

    public func reviewList(_ input: Operations.ReviewList.Input) async throws -> Operations.ReviewList.Output {
        try await authorize([.admin])
        let wanted = input.query.status ?? .pending
        return .ok(.init(body: .json(try await store.reading { db in try self.reviewList(wanted, in: db) })))
    }

    public func reviewImage(_ input: Operations.ReviewImage.Input) async throws -> Operations.ReviewImage.Output {
        try await authorize([.admin])
        let id = try Self.key(input.path.id, "report id")
        let data = try await store.reading { db in try self.reviewImage(id, in: db) }
        return .ok(
            .init(headers: .init(contentDisposition: "inline; filename=\"report-\(id)\""), body: Self.image(data))
        )
    }

    public func flagReport(_ input: Operations.FlagReport.Input) async throws -> Operations.FlagReport.Output {
        try await authorize([.admin])
        let id = try Self.key(input.path.id, "report id")
        let (store, engine) = (self.store, self.engine)
        let r = try await Self.exposureErrors {
            try await engine.flag(reportID: id, on: store)
        }
        return .ok(
            .init(
                body: .json(
                    .init(
                        reportId: id,
                        devices: r.exposedDevices.count,
                        exposures: r.exposures,
                        changed: r.changed,
                        line: ExposureEngine.line(id, r)
                    )
                )
            )
        )
    }

    public func revokeReport(_ input: Operations.RevokeReport.Input) async throws -> Operations.RevokeReport.Output {
        try await authorize([.admin])
        let id = try Self.key(input.path.id, "report id")
        let store = self.store
        let n = try await Self.exposureErrors {
            try await store.writing { db in try ExposureEngine().revoke(reportID: id, in: db) }
        }
        return .ok(
            .init(
                body: .json(
                    .init(
                        reportId: id,
                        devices: 0,
                        exposures: 0,
                        changed: n,
                        line: "report \(id) revoked; \(ExposureEngine.count(n, "exposure")) removed"
                    )
                )
            )
        )
    }

    public func approveReport(_ input: Operations.ApproveReport.Input) async throws -> Operations.ApproveReport.Output {
        let who = try await authorize([.admin])
        return .ok(
            .init(
                body: .json(
                    try await decide(Self.key(input.path.id, "report id"), approve: true, Self.note(input.body), who)
                )
            )
        )
    }

    public func denyReport(_ input: Operations.DenyReport.Input) async throws -> Operations.DenyReport.Output {
        let who = try await authorize([.admin])
        return .ok(
            .init(
                body: .json(
                    try await decide(Self.key(input.path.id, "report id"), approve: false, Self.note(input.body), who)
                )
            )
        )
    }

    /// A decision's note, when its optional body gives one.
    static func note(_ body: Components.RequestBodies.Decision?) -> String? {
        guard case .json(let decision) = body else { return nil }
        return decision.note
    }

    // MARK: The site's machinery

    public func kiosks(_ input: Operations.Kiosks.Input) async throws -> Operations.Kiosks.Output {
        try await authorize([.admin])
        return .ok(.init(body: .json(try await store.reading { db in try self.kiosks(in: db) })))
    }

    public func publishedSite(_ input: Operations.PublishedSite.Input) async throws -> Operations.PublishedSite.Output {
        try await authorize([.admin, .kiosk, .device])
        let published = try await store.reading { db in try self.publishedSite(in: db) }
        let etag = "\"\(published.digest)\""
        if input.headers.ifNoneMatch == etag { return .notModified(.init(headers: .init(eTag: etag))) }
        return .ok(.init(headers: .init(eTag: etag), body: .json(published)))
    }

    public func siteCalibration(
        _ input: Operations.SiteCalibration.Input
    ) async throws -> Operations.SiteCalibration.Output {
        try await authorize([.admin, .kiosk])
        let at = try Self.since(input.query.at, name: "at")
        let held = input.query.exponent == .map
        return .ok(.init(body: .json(try await siteCalibration(at: at, heldExponent: held))))
    }
}

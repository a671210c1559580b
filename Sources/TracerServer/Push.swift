import Foundation
import Hummingbird
import NIOCore
import TracerAPI
import TracerExposure
import TracerModel
import TracerStore

extension API {
    /// The most browsers one device is told through; a new one past it replaces the oldest.
    static let pushSubscriptionsPerDevice = 10

    /// `POST /v1/devices/{id}/push`: the browser's `PushSubscription` JSON as it is, with that
    /// device's token. Only endpoints on the site's push services are taken.
    func subscribe(_ request: Request, _ context: TracerContext, _ device: String) async throws -> Response {
        let (subscription, who) = try await pushBody(request, context, device) { json, services in
            try PushSubscription(json: json, services: services)
        }
        let store = self.store
        let collection = try Collections.pushSubscriptions(of: device)
        try await store.writing { db in
            try db.runTransaction { t in
                let existing = try t.getDocuments(Query(collection: collection))
                if existing.count >= Self.pushSubscriptionsPerDevice,
                    !existing.contains(where: { $0.id == subscription.id }),
                    let oldest = existing.min(by: {
                        ($0["createdAt"]?.timestampValue?.seconds ?? 0)
                            < ($1["createdAt"]?.timestampValue?.seconds ?? 0)
                    })
                {
                    t.delete(oldest.path)
                }
                // Merged: a browser renewing its subscription (the page does at each visit) keeps
                // what it is owed; `createdAt` is the renewal's time, which retention goes by.
                t.set(try collection.document(subscription.id), subscription.data(tokenID: who.tokenID), merge: true)
            }
        }
        return JSONBody.response(encoding: Components.Schemas.Subscribed(subscribed: true), status: .created)
    }

    /// `DELETE /v1/devices/{id}/push` `{"endpoint": …}`: that browser is told no more.
    func unsubscribe(_ request: Request, _ context: TracerContext, _ device: String) async throws -> Response {
        let (id, _) = try await pushBody(request, context, device) { json, _ in
            guard case .string(let endpoint)? = json["endpoint"] else {
                throw APIError.badRequest("the body is {\"endpoint\": \"…\"}")
            }
            return PushSubscription.id(endpoint: endpoint)
        }
        let store = self.store
        let path = try Collections.pushSubscriptions(of: device).document(id)
        try await store.writing { db in try db.delete(path) }
        return JSONBody.response(encoding: Components.Schemas.Subscribed(subscribed: false))
    }

    /// A device token for `device` itself, and the JSON body read by `parse`.
    func pushBody<T: Sendable>(
        _ request: Request,
        _ context: TracerContext,
        _ device: String,
        _ parse: (Value, Set<String>) throws -> T
    ) async throws -> (T, Principal) {
        let who = try await authorize(request, context, [.device])
        guard who.deviceID == device else {
            throw APIError.forbidden("a device token subscribes its own device only")
        }
        let body = try await request.body.collect(upTo: 8192)
        guard let json = try? JSON.parse(String(buffer: body)), case .map = json else {
            throw APIError.badRequest(
                "the body is the browser's PushSubscription as JSON, not \(String(buffer: body).prefix(80))"
            )
        }
        do {
            return (try parse(json, pushServices), who)
        } catch let e as PushError {
            // Well-formed JSON, refused on what it says (a host, a port, a key): 422.
            throw APIError(.unprocessableContent, .refused, e.description)
        }
    }
}

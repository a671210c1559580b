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
    func subscribe(_ device: String, _ json: Value) async throws {
        let who = try await ownDevice(device)
        let subscription: PushSubscription
        do {
            subscription = try PushSubscription(json: json, services: pushServices)
        } catch let e as PushError {
            // Well-formed JSON, refused on what it says (a host, a port, a key): 422.
            throw APIError(.unprocessableContent, .refused, e.description)
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
    }

    /// `DELETE /v1/devices/{id}/push` `{"endpoint": …}`: that browser is told no more.
    func unsubscribe(_ device: String, endpoint: String) async throws {
        _ = try await ownDevice(device)
        let store = self.store
        let path = try Collections.pushSubscriptions(of: device).document(PushSubscription.id(endpoint: endpoint))
        try await store.writing { db in try db.delete(path) }
    }

    /// A device token for `device` itself.
    func ownDevice(_ device: String) async throws -> Principal {
        let who = try await authorize([.device])
        guard who.deviceID == device else {
            throw APIError.forbidden("a device token subscribes its own device only")
        }
        return who
    }
}

import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle
import Synchronization
import TracerAPI
import TracerModel
import TracerStore

/// `GET /v1/watch?path=…`: the store's listeners as Server-Sent Events.
///
/// `path` is a document (`devices/X`), a collection (`beacons/kiosk-lab/interactions`) or a
/// collection group (`*/exposures`); `since` and `field` keep documents whose `field` is at or after
/// `since`. Each event's id is the store's sequence token: a client that reconnects with
/// `Last-Event-ID` (EventSource does this itself) gets every change after it, then live ones.
/// Events: `snapshot` (the documents now), `changes` (added, modified, removed), `document` (a
/// watched document's state) and `error` (then the stream ends; `token_expired` means start
/// again without Last-Event-ID). A comment every 15 s keeps proxies from closing it.
enum Watch {
    enum Target {
        case document(DocumentPath)
        case query(Query)
    }

    static let keepalive: Duration = .seconds(15)

    /// The `path` asked for, when this token may watch it (what a ticket is made for).
    static func checkedPath(path: String, since: String?, field: String?, _ who: Principal) throws -> String {
        _ = try target(path: path, since: since, field: field, who)
        return path
    }

    /// What `path` (with `since` and `field`) watches, when this token may.
    static func target(path: String?, since: String?, field: String?, _ who: Principal) throws -> Target {
        guard let raw = path, !raw.isEmpty else {
            throw APIError.badRequest("watch takes ?path= a document, a collection or */GROUP")
        }
        let ids =
            raw.hasPrefix("*/")
            ? [String(raw.dropFirst(2))] : raw.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard ids.allSatisfy(Identifier.isPathID) else {
            throw APIError.badRequest(
                "watch takes ?path= ids of letters, digits and - _ . : (a letter, digit, - or : first), not '\(raw.prefix(80))'"
            )
        }
        if who.role == .device {
            let own = try Collections.device(who.deviceID ?? "")
            let exposures = try Collections.exposures(of: who.deviceID ?? "")
            guard raw == own.description || raw == exposures.description else {
                throw APIError.forbidden("a device token watches \(own) and \(exposures) only")
            }
        }
        // Checked for every path, a document's too, as the document says (a document's watch
        // does not use them).
        let since = try API.since(since)
        let field = try Self.field(field ?? "start")
        var query: Query
        if raw.hasPrefix("*/") {
            let group = String(raw.dropFirst(2))
            guard !group.isEmpty, !group.contains("/") else {
                throw APIError.badRequest("*/ takes one collection id, not '\(group.prefix(80))'")
            }
            try refuseSecrets(collection: group)
            query = Query(collectionGroup: group)
        } else {
            let segments = raw.split(separator: "/", omittingEmptySubsequences: false)
            if segments.count % 2 == 0 {
                let path = try DocumentPath(raw)
                // A document of `config` but the keys (the published map, config/site) may be watched.
                if secretDocuments.contains(path.description) { throw secret(path.description) }
                let collection = path.segments[path.segments.count - 2]
                if secretCollections.contains(collection) { throw secret(collection) }
                return .document(path)
            }
            let collection = try CollectionPath(raw)
            try refuseSecrets(collection: collection.id)
            query = Query(collection: collection)
        }
        if let since {
            query = query.where(field, .greaterThanOrEqual, .timestamp(since))
        } else if raw.split(separator: "/").last.map(String.init) == Interaction.collectionID {
            // Millions of windows: a watch holds what it matches, so it must start somewhere.
            throw APIError.badRequest("interactions are many: watch them from a time, with since= (and field=start)")
        }
        return .query(query)
    }

    /// `field=`: one plain name by the store's own parser (ASCII letters, digits and _), a letter
    /// first, as the document's pattern has it.
    static func field(_ text: String) throws -> FieldPath {
        guard text.utf8.count <= 64, text.first?.isLetter == true,
            let name = try? FieldPath(parsing: text), name.segments == [text]
        else {
            throw APIError.badRequest("field takes a field's name (letters, digits and _), not '\(text.prefix(40))'")
        }
        return name
    }

    /// What never leaves the server, for any token: the badges' keys, the Web Push key, the
    /// watch tickets' key, token records (hashes), and push subscriptions (capability URLs and
    /// keys). Nothing outside the server needs them.
    static let secretDocuments: Set<String> = [
        Collections.badgeKeys.description, Collections.pushKey.description, Collections.watchKey.description,
    ]
    static let secretCollections: Set<String> = [Collections.tokens.id, "push"]

    static func refuseSecrets(collection id: String) throws {
        if secretCollections.contains(id) { throw secret(id) }
        if id == Collections.config.id {
            throw APIError.forbidden(
                "config holds the site's keys: watch \(Collections.site) (the published map) instead"
            )
        }
    }

    static func secret(_ what: String) -> APIError {
        APIError.forbidden("\(what.prefix(80)) holds secrets, which never leave the server")
    }

    static func response(_ api: API, _ request: Request, _ who: Principal) throws -> Response {
        let query = request.uri.queryParameters
        let target = try target(
            path: query["path"].map(String.init),
            since: query["since"].map(String.init),
            field: query["field"].map(String.init),
            who
        )
        var resumeAt: Int64?
        if let raw = request.headers[API.lastEventID] ?? request.uri.queryParameters["lastEventId"].map(String.init) {
            guard let token = Int64(String(raw).trimmingCharacters(in: .whitespaces)), token >= 0 else {
                throw APIError.badRequest(
                    "Last-Event-ID takes a store sequence token (a number), not '\(raw.prefix(40))'"
                )
            }
            resumeAt = token
        }
        let resume = resumeAt
        // A client too slow to keep up is cut off rather than skipped over: it has every event up
        // to the last one it got, and reconnecting with that Last-Event-ID gives it the rest.
        let (frames, continuation) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingOldest(10_000))
        let send: @Sendable (String) -> Void = { text in
            if case .dropped = continuation.yield(text) { continuation.finish() }
        }
        let registration: ListenerRegistration
        let onError: @Sendable (StoreError) -> Void = { error in
            let body = Components.Schemas._Error(
                error.code == .tokenExpired ? .tokenExpired : .storeError,
                message: error.message
            )
            // The API's own type: encoding it cannot fail.
            send(frame(event: "error", id: nil, data: (try? APIJSON.string(body)) ?? ""))
            continuation.finish()
        }
        switch target {
        case .document(let path):
            registration = api.store.addListener(document: path, onError: onError) { snap, token in
                send(frame(event: "document", id: token, data: JSON.string(document(snap))))
            }
        case .query(let query):
            let first = LockedFlag()
            registration = try api.store.addListener(
                query,
                from: resume.map { .after(token: $0) } ?? .now,
                onError: onError
            ) { snap in
                if resume == nil, first.setOnce() {
                    let body: Value = .map([
                        "token": .integer(snap.token), "documents": .array(snap.documents.map(document)),
                    ])
                    send(frame(event: "snapshot", id: snap.token, data: JSON.string(body)))
                } else {
                    let body: Value = .map(["token": .integer(snap.token), "changes": .array(snap.changes.map(change))])
                    send(frame(event: "changes", id: snap.token, data: JSON.string(body)))
                }
            }
        }
        // The stream lives as long as its token: revoked (a lost phone, "Forget this phone", from
        // this server, another, or `tracer token revoke` on the store), the stream says so and
        // ends, and the page shows it has no access within the store's poll, not at its next
        // request. One document listener a stream, on the token's record.
        let revocation = api.store.addListener(document: try Collections.token(who.tokenID)) { snap in
            guard !snap.exists || snap["revokedAt"] != nil else { return }
            let body = Components.Schemas._Error(.unauthorized, message: "this token was revoked")
            send(frame(event: "revoked", id: nil, data: (try? APIJSON.string(body)) ?? ""))
            continuation.finish()
        }
        let beat = Heartbeat.shared.add { send(": keepalive\n\n") }
        continuation.onTermination = { _ in
            // Not waiting: a delivery in flight yields to this stream, which needs the lock the
            // termination handler runs under (see `cancelWithoutWaiting`).
            registration.cancelWithoutWaiting()
            revocation.cancelWithoutWaiting()
            Heartbeat.shared.remove(beat)
        }
        return Response(
            status: .ok,
            headers: [
                .contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-store",
                HTTPField.Name("X-Accel-Buffering")!: "no",
            ],
            body: ResponseBody { writer in
                // An opening comment, so a client knows at once that the stream is up.
                try await writer.write(ByteBuffer(string: ": tracer watch\nretry: 2000\n\n"))
                // Ends at the first write after the client left (the keepalive comes every 15 s
                // at most) or when the server shuts down. Watching for the inbound side's close
                // instead (`consumeWithInboundCloseHandler`) ended it at once, but cost 5.7 KiB
                // a stream: 35.6 against 29.9 KiB a connection with 10,000 people's pages open
                // (`Tools/bench/pages`); a listener left for a few seconds is the cheaper side.
                try await withGracefulShutdownHandler {
                    for await text in frames {
                        try await writer.write(ByteBuffer(string: text))
                    }
                } onGracefulShutdown: {
                    continuation.finish()
                }
                try await writer.finish(nil)
            }
        )
    }

    static func frame(event: String, id: Int64?, data: String) -> String {
        (id.map { "id: \($0)\n" } ?? "") + "event: \(event)\ndata: \(data)\n\n"
    }

    // The frames (`WatchDocument`, `WatchSnapshot`, `WatchChange`, `WatchChanges` in the document)
    // are written as the store's values, not through the generated types: their `data` is a
    // stored document as it is, which the generated types hold only as an untyped container, and
    // a frame goes to every page watching (10,000 a site: `Tools/bench/pages`). LiveTests decode
    // each with the generated types, which refuse a field they do not list.

    static func document(_ snap: DocumentSnapshot) -> Value {
        .map([
            "path": .string(snap.path.description), "exists": .bool(snap.exists),
            "data": snap.data.map(Value.map) ?? .null,
        ])
    }

    static func change(_ c: DocumentChange) -> Value {
        .map([
            "kind": .string(c.kind.rawValue), "path": .string(c.document.path.description),
            "data": c.kind == .removed ? .null : (c.document.data.map(Value.map) ?? .null),
        ])
    }
}

/// A flag set once, from any thread.
final class LockedFlag: Sendable {
    private let value = Atomic(false)

    /// True the first time only.
    func setOnce() -> Bool {
        value.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }
}

/// One timer for every stream's keepalive comment, instead of a sleeping task per stream: with
/// 10,000 people's pages open, a task each was memory for nothing (`Tools/bench/pages`).
final class Heartbeat: Sendable {
    static let shared = Heartbeat(every: Watch.keepalive)

    let period: Duration
    private let beats = Mutex<(next: Int, senders: [Int: @Sendable () -> Void], started: Bool)>((0, [:], false))

    init(every period: Duration) { self.period = period }

    /// Calls `send` every period until `remove` is given what this returns.
    func add(_ send: @escaping @Sendable () -> Void) -> Int {
        let (id, start) = beats.withLock { state -> (Int, Bool) in
            let id = state.next
            state.next += 1
            state.senders[id] = send
            defer { state.started = true }
            return (id, !state.started)
        }
        if start {
            // For the process's life: the streams come and go, the beat stays.
            Task.detached { [self] in
                while true {
                    try? await Task.sleep(for: period)
                    for send in beats.withLock({ Array($0.senders.values) }) { send() }
                }
            }
        }
        return id
    }

    func remove(_ id: Int) {
        _ = beats.withLock { $0.senders.removeValue(forKey: id) }
    }
}

import Foundation
import Logging
import ServiceLifecycle
import TracerModel
import TracerStore

/// Every change of a device's status, risk or exposure count POSTed to a webhook (or, as a Web
/// Push saying only `{"type":"status"}`, to each browser subscribed to the device), at least once,
/// across restarts: the store's change token of the last delivered change is kept (in the store,
/// or in a file), so a restarted notifier resumes where it stopped. A failed webhook POST is
/// retried with backoff, and nothing after it is sent first; a push is owed in the store and
/// delivered to each browser on its own (`PushDelivery`), so one failing push service delays
/// nobody else. One notifier per webhook runs per store: a second one waits, and takes over from
/// the saved token when the first dies.
public struct Notifier: Service {
    /// Where the last delivered token is kept.
    public enum Position: Sendable {
        /// In the store, under this name: found by whichever instance takes over, on any machine.
        case store(String)
        /// In a file.
        case file(String)
    }

    /// Where changes go.
    public enum Destination: Sendable {
        /// The whole change, as JSON, to one URL.
        case webhook(Webhook)
        /// An empty push to the device's own browsers (`devices/{id}/push`): the page fetches.
        case push(PushSender)
    }

    public let store: DocumentStore
    public let destination: Destination
    public let position: Position
    /// The lock that keeps it to one instance per store (one per webhook).
    public let role: String
    /// Backoff between attempts: 0.5 s doubling to 30 s.
    public var backoff = Backoff(first: .milliseconds(500), longest: .seconds(30))
    /// Whether a failure of the store (a database gone for a while) starts it again after a
    /// backoff instead of ending it: so inside `tracer serve`, whose other services must not end
    /// with it; `tracer notify`, a service of its own, ends and lets systemd restart it.
    public var startsAgain = false
    /// The clock push retries and their 24-hour bound are judged by (seconds since 1970).
    public var clock: @Sendable () -> Double = { Date().timeIntervalSince1970 }
    let logger: Logger

    public init(store: DocumentStore, webhook: Webhook, position: Position, role: String, logger: Logger) {
        self.init(store: store, destination: .webhook(webhook), position: position, role: role, logger: logger)
    }

    public init(store: DocumentStore, destination: Destination, position: Position, role: String, logger: Logger) {
        self.store = store
        self.destination = destination
        self.position = position
        self.role = role
        self.logger = logger
    }

    /// The token it resumes after, or nil on a first run.
    public func savedToken() async throws -> Int64? {
        try await store.reading { db in try self.savedToken(in: db) }
    }

    /// The same, on one of the store's threads (a file is read there too: blocking I/O stays
    /// off the cooperative pool).
    func savedToken(in db: StoreReader) throws -> Int64? {
        switch position {
        case .store(let name): return try db.savedPosition(name)
        case .file(let path):
            return (try? String(contentsOfFile: path, encoding: .utf8)).flatMap {
                Int64($0.trimmingCharacters(in: .whitespacesAndNewlines))
            }
        }
    }

    /// Delivers until the service group shuts down (a delivery in flight is abandoned: its change
    /// is sent again at the next start, as the token was not saved). The webhook's client is its
    /// maker's to shut down (`withShutdown`).
    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                var backoff = self.backoff
                while true {
                    do {
                        try await store.whileSoleInstance(of: role, logger: logger) { try await deliverChanges() }
                        return
                    } catch let error where startsAgain && !(error is CancellationError) && !Task.isCancelled {
                        let delay = backoff.failed()
                        logger.warning(
                            "the notifier stopped; it starts again from its saved change",
                            metadata: [
                                "role": "\(role)", "error": "\(error)", "retry.seconds": "\(delay / .seconds(1))",
                            ]
                        )
                        try await Task.sleep(for: delay)
                    }
                }
            }
        } catch is CancellationError {}
    }

    func deliverChanges() async throws {
        guard case .push(let sender) = destination else { return try await follow(nil) }
        // The changes followed and the pushes they owe, side by side: either one's end ends both.
        let delivery = PushDelivery(store: store, sender: sender, logger: logger, now: clock)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await delivery.run() }
            group.addTask { try await self.follow(delivery) }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    func follow(_ delivery: PushDelivery?) async throws {
        var last: [String: String] = [:]
        let start: ListenStart =
            try await store.reading { db in try self.savedToken(in: db) }.map { .after(token: $0) } ?? .now
        for try await snap in store.snapshots(Query(collection: Collections.devices), from: start) {
            for change in snap.changes where change.kind != .removed {
                let doc = change.document
                let d = DeviceStatus(doc)
                // The device's own report as the health team decides it (pending, denied) tells the reporter too.
                let report = doc["report"]
                let key = "\(d.status)/\(d.risk)/\(d.exposureCount)/\(report.map { JSON.string($0) } ?? "")"
                if last[doc.id] == key { continue }
                switch destination {
                case .webhook(let webhook):
                    var fields: [String: Value] = [
                        "deviceId": .string(doc.id), "status": .string(d.status.rawValue),
                        "risk": .string(d.risk.rawValue), "exposureCount": .integer(Int64(d.exposureCount)),
                        "updatedAt": doc["updatedAt"]?.timestampValue.map { .string($0.iso8601Milliseconds) } ?? .null,
                        "token": .integer(snap.token),
                    ]
                    if let report { fields["report"] = report }
                    try await deliver(JSON.string(.map(fields)), to: webhook)
                case .push:
                    // Owed in the store before the token moves past it: delivered after a restart too.
                    try await delivery?.owe(doc.id)
                }
                last[doc.id] = key
            }
            // Only once everything up to this token is delivered (or owed); on the store's writer
            // thread (or its reader threads for a file: blocking I/O off the cooperative pool either way).
            let token = snap.token
            try await store.writing { db in try self.save(token, in: db) }
        }
    }

    /// POSTs until a 2xx answer, backing off between attempts.
    func deliver(_ body: String, to webhook: Webhook) async throws {
        var backoff = self.backoff
        var delay = backoff.failed()
        while true {
            do {
                let code = try await webhook.post(body)
                if (200..<300).contains(code) { return }
                logger.warning(
                    "the webhook refused a change; retrying",
                    metadata: ["webhook.status": "\(code)", "retry.seconds": "\(delay / .seconds(1))"]
                )
            } catch let error as ExposureError {
                logger.warning(
                    "the webhook did not answer; retrying",
                    metadata: ["error": "\(error.message)", "retry.seconds": "\(delay / .seconds(1))"]
                )
            }
            try await Task.sleep(for: delay)
            delay = backoff.failed()
        }
    }

    func save(_ token: Int64, in db: StoreWriter) throws {
        guard case .file(let path) = position else {
            if case .store(let name) = position { try db.savePosition(name, token) }
            return
        }
        let temporary = path + ".tmp"
        try "\(token)\n".write(toFile: temporary, atomically: false, encoding: .utf8)
        guard rename(temporary, path) == 0 else {
            throw ExposureError(
                .badInput,
                "cannot write the notifier's state to \(path): \(String(cString: strerror(errno)))"
            )
        }
    }
}

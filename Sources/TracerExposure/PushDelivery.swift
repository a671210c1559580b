import Foundation
import Logging
import Synchronization
import TracerModel
import TracerStore

/// Web Push to every browser owed a push, each on its own: a push service that keeps failing
/// delays its own subscription only, never another's (before, one endpoint answering 500 held
/// every push of the site behind it, for ever).
///
/// What is owed is in the store (`owedAt` on `devices/{id}/push/{id}`), so a restart still owes
/// it; a subscription whose service fails is retried with its own backoff (1 s doubling to 30
/// minutes: `failures` and `failingSince` stored with it) and dropped once it has failed for
/// `giveUpAfter` (24 h). One that is gone (404, 410), deleted meanwhile (unsubscribed, its token
/// revoked) or whose stored endpoint is not one the site sends to is dropped at its next attempt.
/// At most `concurrency` pushes are in flight at once. The loop sleeps until a push is owed or
/// the next retry is due: it never polls (a server with nothing to push uses no CPU for it).
public final class PushDelivery: Sendable {
    /// How long a subscription may keep failing before it is dropped.
    public static let giveUpAfter: Double = 24 * 3600
    /// Pushes in flight at once.
    public static let concurrency = 64
    /// The push a browser gets: that something changed, nothing more (its push service learns
    /// nothing); the page then fetches the status with its token.
    public static let payload = Array(#"{"type":"status"}"#.utf8)

    let store: DocumentStore
    let sender: PushSender
    let logger: Logger
    let backoff: Backoff
    /// Seconds since 1970 (a test's clock, or the wall clock).
    let now: @Sendable () -> Double
    /// The longest the loop sleeps with nothing owed (it wakes at once when a push is owed).
    let idle: Duration

    /// Every subscription owed a push, or with one on its way, each a state machine of its own.
    private let owed = Mutex<[DocumentPath: SubscriptionPush]>([:])
    /// The loop's wake-up: a waiting loop's continuation, or a signal given while it was busy.
    private let wake = Mutex<(waiter: CheckedContinuation<Void, Never>?, pending: Bool)>((nil, false))

    public init(
        store: DocumentStore,
        sender: PushSender,
        logger: Logger,
        backoff: Backoff = Backoff(first: .seconds(1), longest: .seconds(1800)),
        idle: Duration = .seconds(60),
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) {
        self.store = store
        self.sender = sender
        self.logger = logger
        self.backoff = backoff
        self.idle = idle
        self.now = now
    }

    /// Wakes the loop (a push is owed).
    func signal() {
        let waiter = wake.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.pending = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns at the next signal (at once for one given meanwhile), or when cancelled.
    func signalled() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = wake.withLock { state -> Bool in
                    // Cancelled before the waiter was kept: the handler found nothing to resume.
                    if state.pending || Task.isCancelled {
                        state.pending = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = wake.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }

    static let owedAt = FieldPath(stringLiteral: PushSubscription.Field.owedAt)
    static let deliveredAt = FieldPath(stringLiteral: PushSubscription.Field.deliveredAt)
    static let failures = FieldPath(stringLiteral: PushSubscription.Field.failures)
    static let failingSince = FieldPath(stringLiteral: PushSubscription.Field.failingSince)

    /// Marks every subscription of `device` owed a push, in the store, and queues each.
    public func owe(_ device: String) async throws {
        let collection = try Collections.pushSubscriptions(of: device)
        let store = self.store
        let docs = try await store.writing { db in
            try db.runTransaction { t in
                let docs = try t.getDocuments(Query(collection: collection))
                for doc in docs { t.update(doc.path, [Self.owedAt: .serverTimestamp]) }
                return docs
            }
        }
        let now = self.now()
        owed.withLock { owed in
            for doc in docs {
                if owed[doc.path] == nil {
                    owed[doc.path] = Self.owed(doc, due: now)
                } else {
                    _ = owed[doc.path]!.handle(.changed(now: now), backoff: backoff, giveUpAfter: Self.giveUpAfter)
                }
            }
        }
        if !docs.isEmpty { signal() }
    }

    /// What is owed to a stored subscription: its failures so far (a restart keeps the 24 h bound).
    static func owed(_ doc: DocumentSnapshot, due: Double) -> SubscriptionPush {
        SubscriptionPush(
            due: due,
            failures: Int(doc[Self.failures]?.doubleValue ?? 0),
            failingSince: doc[Self.failingSince]?.timestampValue?.seconds
        )
    }

    /// Subscriptions owed a push now (a test's look inside).
    public var owedCount: Int { owed.withLock { $0.count } }

    /// Delivers until cancelled: first what the store says is owed (from before a restart).
    public func run() async throws {
        let store = self.store
        let stored = try await store.reading { db in
            try db.getDocuments(
                Query(collectionGroup: "push").where(Self.owedAt, .greaterThan, .timestamp(Timestamp(seconds: 0)))
            )
        }
        let now = self.now()
        owed.withLock { owed in
            for doc in stored where owed[doc.path] == nil { owed[doc.path] = Self.owed(doc, due: now) }
        }
        try await withThrowingTaskGroup(of: Attempt?.self) { group in
            var waiting = false
            while true {
                try Task.checkCancellation()
                let now = self.now()
                // The pushes due now, oldest first, as many as may be in flight; each started.
                let (due, next) = owed.withLock { owed in
                    let inFlight = owed.values.count { $0.due == nil }
                    let due = owed.compactMap { path, push in push.due.flatMap { $0 <= now ? (path, $0) : nil } }
                        .sorted { $0.1 < $1.1 }.prefix(max(0, Self.concurrency - inFlight)).map(\.0)
                    for path in due {
                        _ = owed[path]!.handle(.started, backoff: backoff, giveUpAfter: Self.giveUpAfter)
                    }
                    return (due, owed.values.compactMap(\.due).filter { $0 > now }.min())
                }
                for path in due { group.addTask { await self.attempt(path) } }
                if !waiting {
                    // Asleep until a push is owed or the next retry is due: no polling.
                    waiting = true
                    let seconds = min(self.idle / .seconds(1), max(0.001, (next ?? .infinity) - now))
                    let sleep = Duration.milliseconds(Int64((seconds * 1000).rounded(.up)))
                    group.addTask {
                        await withTaskGroup(of: Void.self) { inner in
                            inner.addTask { await self.signalled() }
                            inner.addTask { try? await Task.sleep(for: sleep) }
                            await inner.next()
                            inner.cancelAll()
                        }
                        return nil
                    }
                }
                guard let next = try await group.next() else { continue }
                if let attempt = next {
                    // Its next attempt may be due before the loop's wait ends: wait anew after it.
                    defer { signal() }
                    do { try await settle(attempt) } catch {
                        // The store refused for now: the push stays owed and is tried again.
                        logger.warning(
                            "could not record a push's outcome; it is tried again",
                            metadata: ["error": "\(error)"]
                        )
                        _ = handle(.storeFailed(now: self.now()), attempt.path)
                    }
                } else {
                    waiting = false
                }
            }
        }
    }

    /// Feeds an event to the subscription's machine; the table forgets it once it is done.
    func handle(_ event: SubscriptionPush.Event, _ path: DocumentPath) -> SubscriptionPush.Action {
        owed.withLock { owed in
            guard var push = owed[path] else { return .none }
            let action = push.handle(event, backoff: backoff, giveUpAfter: Self.giveUpAfter)
            owed[path] = push.state == .done ? nil : push
            return action
        }
    }

    struct Attempt: Sendable {
        enum Outcome: Sendable {
            case sent(PushSender.Outcome)
            /// The subscription was deleted meanwhile.
            case vanished
        }
        let path: DocumentPath
        /// The stored `owedAt` when the attempt began: a later change keeps it owed.
        let owedAt: Value?
        let outcome: Outcome
    }

    func attempt(_ path: DocumentPath) async -> Attempt {
        let store = self.store
        let doc = try? await store.reading { db in try db.get(path) }
        guard let doc, doc.exists else {
            return Attempt(path: path, owedAt: nil, outcome: .vanished)
        }
        guard let subscription = PushSubscription(doc) else {
            return Attempt(
                path: path,
                owedAt: doc[Self.owedAt],
                outcome: .sent(.refused("the stored subscription cannot be read"))
            )
        }
        let outcome = await sender.send(Self.payload, to: subscription)
        return Attempt(path: path, owedAt: doc[Self.owedAt], outcome: .sent(outcome))
    }

    /// The push service's answer, through the subscription's machine, written and said.
    func settle(_ attempt: Attempt) async throws {
        let now = self.now()
        // What happened, and the push service's words for it (a failure's, a refusal's).
        let (event, why): (SubscriptionPush.Event, String) =
            switch attempt.outcome {
            case .vanished: (.vanished, "")
            case .sent(.delivered): (.delivered(now: now), "")
            case .sent(.failed(let text)): (.failed(now: now), text)
            case .sent(.gone): (.gone, "")
            case .sent(.refused(let text)): (.refused, text)
            }
        let path = attempt.path
        let store = self.store
        let host = { (doc: DocumentSnapshot?) in
            URLComponents(string: doc?["endpoint"]?.stringValue ?? "")?.host ?? "?"
        }
        switch handle(event, path) {
        case .none:
            break
        case .settle(let stillOwed):
            let owedAt = attempt.owedAt
            try await store.writing { db in
                try db.runTransaction { t in
                    let doc = try t.get(path)
                    guard doc.exists else { return }
                    var fields: [FieldPath: Value] = [Self.failures: .delete, Self.failingSince: .delete]
                    // Taken by its push service: when, for the health team's "told by push" (on
                    // the subscription, not the device, whose changes are what owes a push).
                    if case .delivered = event { fields[Self.deliveredAt] = .serverTimestamp }
                    // Settled unless a change was owed after the attempt read it.
                    if !stillOwed, doc[Self.owedAt] == owedAt { fields[Self.owedAt] = .delete }
                    t.update(path, fields)
                }
            }
        case .recordFailure(let failures, let since, let retryIn):
            let doc = try await store.writing { (db: StoreWriter) throws(any Error) -> DocumentSnapshot? in
                let doc = try db.get(path)
                guard doc.exists else { return nil }
                try db.update(
                    path,
                    [
                        Self.failures: .integer(Int64(failures)),
                        Self.failingSince: .timestamp(Timestamp(seconds: since)),
                    ]
                )
                return doc
            }
            guard let doc else {
                _ = handle(.vanished, path)
                return
            }
            logger.warning(
                "a push service did not take a push; retrying that browser later",
                metadata: [
                    "push.host": "\(host(doc))", "error": "\(why)", "retry.seconds": "\(Int(retryIn.rounded()))",
                ]
            )
        case .drop(let reason):
            let doc = try await store.writing { (db: StoreWriter) throws(any Error) -> DocumentSnapshot? in
                let doc = try db.get(path)
                if doc.exists { try db.delete(path) }
                return doc
            }
            switch reason {
            case .refused:
                logger.warning(
                    "dropped a push subscription this site does not send to",
                    metadata: ["subscription": "\(path)", "reason": "\(why)"]
                )
            case .gone:
                logger.notice(
                    "dropped a subscription its push service says is gone",
                    metadata: ["push.host": "\(host(doc))"]
                )
            case .failedTooLong:
                logger.warning(
                    "dropped a push subscription whose push service failed for 24 hours",
                    metadata: ["push.host": "\(host(doc))", "error": "\(why)"]
                )
            }
        }
    }
}

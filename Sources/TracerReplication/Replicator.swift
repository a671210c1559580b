import Foundation
import Logging
import Metrics
import ServiceLifecycle
import Synchronization
import TracerAPI
import TracerModel
import TracerStore

/// The kiosk's side of replication, a Service beside the ranging: sends the local change log
/// after the token the site server last acknowledged, in batches, and moves the checkpoint only
/// once the server has answered (it commits before it answers).
///
/// - Live: whatever is new is sent every `interval` (half a second), a full batch at once; with
///   nothing new, an empty batch every `heartbeat` lets the server see the kiosk and its clock.
/// - Offline: retries on a timer with exponential backoff and jitter (1 s doubling to 30 s),
///   never waiting for the next local write; one log line when the server goes, one when it
///   is back.
/// - A refused token (401) stops sending, with one log line, until the token file changes;
///   documents the token may not write (403 each) are acknowledged and counted, not retried.
/// - On graceful shutdown (SIGTERM, a replay's end) it drains: it returns once everything is
///   acknowledged, or after `drainTimeout`, saying how much is left.
public final class Replicator: Service, Sendable {
    /// Tuning and limits.
    public struct Options: Sendable {
        public var batchSize = 5000
        public var interval: Duration = .milliseconds(500)
        public var heartbeat: Duration = .seconds(15)
        public var drainTimeout: Duration = .seconds(60)
        public var maxBackoff: Duration = .seconds(30)

        public init() {}
    }

    let store: DocumentStore
    public let upstream: Upstream
    /// The anchor this kiosk ranges as (or the device, in scanner mode): named in each batch.
    let kiosk: String
    let options: Options
    let logger: Logger
    /// Live counters for the status line, the metrics and the drain's report.
    public let status = ReplicationStatus()
    let metrics = ReplicationMetrics()

    /// The checkpoint's name in the store: one per upstream as given, so that pointing a kiosk
    /// at another site sends it everything. (Several URLs are servers of one site, sharing its
    /// store: one checkpoint for them all, whichever answers.)
    var checkpointName: String { "upstream " + upstream.name }

    public init(
        store: DocumentStore,
        upstream: Upstream,
        kiosk: String,
        options: Options = Options(),
        logger: Logger
    ) {
        self.store = store
        self.upstream = upstream
        self.kiosk = kiosk
        self.options = options
        self.logger = logger
    }

    /// Only what this kiosk records travels: its anchor's document and interactions, the same
    /// rule the server applies to its token (not the other anchors' documents the daemon keeps
    /// locally, nor its copy of the site).
    func travels(_ path: DocumentPath) -> Bool {
        SyncScope.refusal(of: path, anchor: kiosk) == nil
    }

    /// Runs until drained at shutdown (or cancelled). Nothing after its start ends it early: a
    /// failing store or server is logged and retried, never a reason to stop the ranging. What
    /// to do next is `ReplicationMachine`'s to decide; this reads, sends, sleeps and logs.
    public func run() async throws {
        let (store, checkpointName) = (self.store, self.checkpointName)
        let start = ContinuousClock.now
        let now = { (ContinuousClock.now - start) / .seconds(1) }
        var machine = ReplicationMachine(
            acknowledged: try await store.reading { try store.checkpoint(checkpointName) },
            now: now(),
            timing: .init(
                interval: options.interval / .seconds(1),
                heartbeat: options.heartbeat / .seconds(1),
                drainTimeout: options.drainTimeout / .seconds(1),
                maxBackoff: options.maxBackoff / .seconds(1)
            )
        )
        var clock = ClockFilter()
        // The batch to send next (after the acknowledged token), and the one after it, read and
        // encoded while this one is in flight: the kiosk's work overlaps the server's (a backlog
        // drains at the pace of the slower of the two, not of both in turn). Batches are still
        // sent one at a time, in order: a newer state of a document can never be overtaken.
        var current: Prepared?
        var prefetch: Task<Prepared, any Error>?
        // Retention reads this from the start: what the server acknowledged before a restart.
        status.update { [acknowledged = machine.acknowledged] in $0.acknowledged = acknowledged }
        await publishBacklog(after: machine.acknowledged)
        logger.info(
            "replicating",
            metadata: ["upstream": "\(upstream.base)", "from.token": "\(machine.acknowledged)"]
        )

        while true {
            if Task.isShuttingDownGracefully, machine.shutdown(now: now()) {
                let left = await backlogChanges(after: machine.acknowledged) ?? 0
                if left > 0 {
                    logger.notice(
                        "draining before exit",
                        metadata: [
                            "backlog.changes": "\(left)", "timeout.seconds": "\(machine.timing.drainTimeout)",
                        ]
                    )
                }
            }
            if Task.isCancelled { return }
            if machine.drainExpired(now: now()) {
                let left = await backlogChanges(after: machine.acknowledged) ?? -1
                logger.warning(
                    "drain timed out: \(left) changes not acknowledged by \(upstream.base); kept here and sent at the next start",
                    metadata: ["backlog.changes": "\(left)"]
                )
                return
            }

            // A refused token: wait for the file to change (draining, until the drain's deadline).
            if machine.refusedToken != nil {
                guard machine.tokenFile(try? upstream.token()) else {
                    await nap(machine.refusedRecheck, draining: machine.draining)
                    continue
                }
                logger.notice("the token file changed: replicating again", metadata: ["file": "\(upstream.tokenFile)"])
                status.update { $0.state = .connecting }
            }

            if current == nil || current?.from != machine.acknowledged {
                do { current = try await prepared(after: machine.acknowledged) } catch {
                    // The store busy or failing: ranging goes on; try again shortly.
                    logger.error(
                        "reading the change log failed; retrying in \(Int(machine.readRetry)) s",
                        metadata: ["error": "\(error)"]
                    )
                    await nap(machine.readRetry, draining: machine.draining)
                    continue
                }
            }
            guard let batch = current else { continue }
            let outbox = batch.outbox
            switch machine.batchRead(nothingNew: outbox.through == machine.acknowledged, now: now()) {
            case .drained:
                logger.info("drained: everything acknowledged", metadata: ["token": "\(machine.acknowledged)"])
                return
            case .wait(let seconds):
                current = nil  // read again after the nap
                await nap(seconds, draining: false)
                continue
            case .send:
                break
            }
            if prefetch == nil, batch.after.changes > 0 {
                let next = outbox.through
                prefetch = Task { try await self.prepared(after: next) }
            }

            let sentAt = Date().timeIntervalSince1970
            let body = SyncBatch.body(
                kiosk: kiosk,
                through: outbox.through,
                sentAt: sentAt,
                clock: clock.best,
                backlog: batch.after.changes,
                backlogOldest: batch.after.oldest?.seconds,
                documents: batch.documents
            )
            let started = now()
            let outcome: Result<SyncAnswer, SyncError>
            let server = upstream.base
            do { outcome = .success(try await upstream.send(body)) } catch { outcome = .failure(error) }
            if upstream.base != server {
                logger.notice(
                    "the site server \(server) failed; moved to \(upstream.base)",
                    metadata: ["upstream": "\(upstream.base)"]
                )
            }
            switch outcome {
            case .success(let answer):
                clock.add(
                    ClockSample(
                        sent: sentAt,
                        serverReceived: answer.receivedAt,
                        serverAnswered: answer.serverTime,
                        received: sentAt + (now() - started)
                    )
                )
                switch machine.answered(
                    answer.acknowledged,
                    through: outbox.through,
                    after: batch.after.changes,
                    now: now()
                ) {
                case .alreadyAhead(let token):
                    logger.notice(
                        "the site server already has changes up to \(token); going on from there",
                        metadata: ["through": "\(outbox.through)"]
                    )
                    await keep(checkpoint: token)
                    prefetch?.cancel()
                    prefetch = nil
                    current = nil
                case .mismatch(let serverAhead, let wait):
                    logger.error(
                        serverAhead
                            ? "the site server has this kiosk's changes up to \(answer.acknowledged), beyond this store's \(outbox.through): was the kiosk's store replaced? Nothing is sent until that is settled (on the server: tracer db delete kiosks/\(kiosk) forgets what it acknowledged); retrying"
                            : "the site server acknowledged token \(answer.acknowledged) for a batch through \(outbox.through); retrying"
                    )
                    await nap(wait, draining: machine.draining)
                case .acknowledged(let token, let outage):
                    // The server committed before it answered: only now does the checkpoint
                    // move. (Should the store refuse the write, the batch is sent again later:
                    // a replay changes nothing.)
                    await keep(checkpoint: token)
                    current = try? await prefetch?.value  // starts at the token just acknowledged
                    prefetch = nil
                    if let outage {
                        logger.notice(
                            "the site server is back after \(Int(outage)) s",
                            metadata: ["upstream": "\(upstream.base)"]
                        )
                    }
                    for r in answer.refused {
                        logger.error(
                            "the site server refused a document (kept here, not retried): \(r.reason)",
                            metadata: ["path": "\(r.path)"]
                        )
                    }
                    status.update {
                        $0.state = .connected
                        $0.acknowledged = token
                        $0.lastAcknowledgement = Date().timeIntervalSince1970
                        $0.sent += answer.applied + answer.unchanged
                        $0.refused += answer.refused.count
                        $0.clockOffset = clock.best?.offset
                        $0.lastError = nil
                    }
                    metrics.acknowledged(documents: answer.applied + answer.unchanged, refused: answer.refused.count)
                    // What is left is what the batch was read with: no second read of the log.
                    publish(backlog: batch.after)
                }
            case .failure(let e):
                let failed = machine.failed(e.code, started: started, token: try? upstream.token(), now: now())
                status.update {
                    $0.state = failed == .tokenRefused ? .tokenRefused : .retrying
                    $0.lastError = e.message
                }
                switch failed {
                case .tokenRefused:
                    metrics.tokenRefused.record(1)
                    logger.error(
                        "the site server refused the token in \(upstream.tokenFile) (\(e.message)): replication stopped, recording goes on; put a valid kiosk token in the file to resume"
                    )
                case .batchRefused(let wait):
                    // A batch the server cannot take would be refused forever: say so loudly,
                    // and retry slowly (a newer server may take it).
                    logger.error(
                        "the site server refused a batch: \(e.message)",
                        metadata: ["through": "\(outbox.through)"]
                    )
                    await nap(wait, draining: machine.draining)
                case .unreachable(let outageBegan, let wait):
                    if outageBegan {
                        logger.warning(
                            "the site server is unreachable (\(e.message)); recording goes on and the backlog is kept; retrying with backoff",
                            metadata: ["upstream": "\(upstream.base)"]
                        )
                    }
                    await publishBacklog(after: machine.acknowledged)
                    await nap(wait, draining: machine.draining)
                }
            }
        }
    }

    /// A batch read from the store and encoded, waiting to be sent.
    struct Prepared: Sendable {
        /// The token it follows.
        var from: Int64
        var outbox: Outbox
        /// The documents' part of the body.
        var documents: [UInt8]
        /// What is left after it.
        var after: (changes: Int64, oldest: Timestamp?)
    }

    /// The batch after `token`, read and encoded on the store's reader threads.
    func prepared(after token: Int64) async throws -> Prepared {
        try await store.reading { try self.prepare(after: token) }
    }

    /// Moves the checkpoint (on the store's writer thread); a failure is logged, and the batch
    /// sent again later (a replay changes nothing).
    func keep(checkpoint token: Int64) async {
        let (store, name) = (self.store, checkpointName)
        do { try await store.writing { try store.setCheckpoint(name, token) } } catch {
            logger.error("keeping the checkpoint failed", metadata: ["error": "\(error)"])
        }
    }

    func prepare(after token: Int64) throws -> Prepared {
        let outbox = try store.outbox(after: token, limit: options.batchSize, include: travels)
        return Prepared(
            from: token,
            outbox: outbox,
            documents: SyncBatch.documents(outbox.entries),
            after: try store.backlog(after: outbox.through)
        )
    }

    /// Sleeps `seconds`; before the drain, graceful shutdown ends the nap at once (the drain
    /// begins).
    func nap(_ seconds: Double, draining: Bool) async {
        let duration = Duration.seconds(seconds)
        if draining {
            try? await Task.sleep(for: duration)
        } else {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: duration) }
        }
    }

    /// Changes not yet acknowledged after `token`; nil when the store cannot say.
    func backlogChanges(after token: Int64) async -> Int64? {
        let store = self.store
        return try? await store.reading { try store.backlog(after: token).changes }
    }

    func publishBacklog(after token: Int64) async {
        let store = self.store
        guard let backlog = try? await store.reading({ try store.backlog(after: token) }) else { return }
        publish(backlog: backlog)
    }

    func publish(backlog: (changes: Int64, oldest: Timestamp?)) {
        status.update {
            $0.backlog = backlog.changes
            $0.backlogOldest = backlog.oldest?.seconds
        }
        metrics.backlog(status.snapshot)
    }
}

/// A replicator's state, readable from other threads (the status line, the metrics).
public final class ReplicationStatus: Sendable {
    public enum State: String, Sendable {
        case connecting, connected, retrying
        /// The server refused the token: waiting for the token file to change.
        case tokenRefused = "token refused"
    }

    public struct Snapshot: Sendable {
        public var state = State.connecting
        /// Changes not yet acknowledged, and the time of the oldest (Unix seconds).
        public var backlog: Int64 = 0
        public var backlogOldest: Double?
        public var acknowledged: Int64 = 0
        /// Unix seconds of the last acknowledgement.
        public var lastAcknowledgement: Double?
        public var sent = 0
        public var refused = 0
        /// This kiosk's clock minus the server's, seconds, from the last exchange.
        public var clockOffset: Double?
        public var lastError: String?
    }

    private let current = Mutex(Snapshot())

    public init() {}

    public var snapshot: Snapshot { current.withLock { $0 } }

    func update(_ body: (inout Snapshot) -> Void) { current.withLock { body(&$0) } }

    /// `synced; backlog 0; acknowledged 1 s ago; clock +0.012 s` or, offline,
    /// `retrying (connection refused); backlog 1204, the oldest 3 min old; acknowledged 5 min ago`.
    public static func line(_ s: Snapshot, now: Double = Date().timeIntervalSince1970) -> String {
        var parts: [String] = []
        switch s.state {
        case .connected: parts.append(s.backlog == 0 ? "synced" : "syncing")
        case .connecting: parts.append("connecting")
        case .retrying: parts.append("retrying" + (s.lastError.map { " (\($0.prefix(80)))" } ?? ""))
        case .tokenRefused: parts.append("token refused" + (s.lastError.map { " (\($0.prefix(120)))" } ?? ""))
        }
        var backlog = "backlog \(s.backlog)"
        if s.backlog > 0, let oldest = s.backlogOldest { backlog += ", the oldest \(age(now - oldest)) old" }
        parts.append(backlog)
        parts.append("acknowledged " + (s.lastAcknowledgement.map { "\(age(now - $0)) ago" } ?? "never"))
        if let offset = s.clockOffset { parts.append(String(format: "clock %+.3f s", offset)) }
        if s.refused > 0 { parts.append("\(s.refused) refused") }
        return parts.joined(separator: "; ")
    }

    static func age(_ seconds: Double) -> String {
        let s = max(0, seconds)
        if s < 120 { return "\(Int(s)) s" }
        if s < 7200 { return "\(Int(s / 60)) min" }
        if s < 172_800 { return "\(Int(s / 3600)) h" }
        return "\(Int(s / 86_400)) days"
    }
}

/// The replicator's metrics (swift-metrics; nothing until a backend is bootstrapped).
final class ReplicationMetrics: Sendable {
    let backlogChanges = Gauge(label: "tracer_sync_backlog_changes")
    let backlogOldest = Gauge(label: "tracer_sync_backlog_oldest_timestamp_seconds")
    let lastAcknowledgement = Gauge(label: "tracer_sync_last_ack_timestamp_seconds")
    let clockOffset = Gauge(label: "tracer_sync_clock_offset_seconds")
    let documents = Counter(label: "tracer_sync_documents_acknowledged_total")
    let refused = Counter(label: "tracer_sync_documents_refused_total")
    /// 1 while the server refuses the token (revoked, or another kiosk's), else 0.
    let tokenRefused = Gauge(label: "tracer_sync_token_refused")

    func backlog(_ s: ReplicationStatus.Snapshot) {
        backlogChanges.record(s.backlog)
        backlogOldest.record(s.backlogOldest ?? 0)
        if let t = s.lastAcknowledgement { lastAcknowledgement.record(t) }
        if let o = s.clockOffset { clockOffset.record(o) }
    }

    func acknowledged(documents n: Int, refused r: Int) {
        tokenRefused.record(0)
        documents.increment(by: n)
        if r > 0 { refused.increment(by: r) }
    }
}

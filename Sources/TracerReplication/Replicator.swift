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
    /// to do next is `ReplicationMachine`'s to decide; this runs its actions (read, send, keep
    /// the checkpoint, sleep, read the token file), feeds back what came of them, and says its
    /// notes (`say`).
    public func run() async throws {
        let (store, checkpointName) = (self.store, self.checkpointName)
        let start = ContinuousClock.now
        let now = { (ContinuousClock.now - start) / .seconds(1) }
        var machine = ReplicationMachine(
            acknowledged: try await store.reading { db in try db.checkpoint(checkpointName) },
            now: now(),
            timing: .init(
                interval: options.interval / .seconds(1),
                heartbeat: options.heartbeat / .seconds(1),
                drainTimeout: options.drainTimeout / .seconds(1),
                maxBackoff: options.maxBackoff / .seconds(1)
            )
        )
        // Retention reads this from the start: what the server acknowledged before a restart.
        status.update { [acknowledged = machine.acknowledged] in $0.acknowledged = acknowledged }
        await publishBacklog(after: machine.acknowledged)
        logger.info(
            "replicating",
            metadata: ["upstream": "\(upstream.base)", "from.token": "\(machine.acknowledged)"]
        )
        var io = Exchange()
        // A batch read ahead is not wanted once the replicator returns.
        defer { io.ahead?.task.cancel() }
        var step = machine.start()
        while true {
            await say(step.notes, machine, io)
            if case .finish = step.action { return }
            if Task.isCancelled { return }
            let event = await perform(step.action, &io)
            let drain = Task.isShuttingDownGracefully ? machine.shuttingDown(now: now()) : []
            step = machine.handle(event, now: now())
            step.notes = drain + step.notes
        }
    }

    /// What the loop holds between actions: the batch the machine holds, read and encoded; the
    /// one after it, read ahead while this one is in flight (the kiosk's work overlaps the
    /// server's: a backlog drains at the pace of the slower of the two, not of both in turn;
    /// batches are still sent one at a time, in order, so a newer state of a document can never
    /// be overtaken); the server's clock; and what the last action brought back, for `say`.
    struct Exchange {
        var current: Prepared?
        var ahead: (from: Int64, task: Task<Prepared, any Error>)?
        var clock = ClockFilter()
        var answer: SyncAnswer?
        var error: (any Error)?
    }

    /// Runs one action; the event it comes to.
    func perform(_ action: ReplicationMachine.Action, _ io: inout Exchange) async -> ReplicationMachine.Event {
        (io.answer, io.error) = (nil, nil)
        switch action {
        case .read(let token):
            return await read(after: token, &io)
        case .keepThenRead(let token):
            // The server committed before it answered: only now does the checkpoint move.
            // (Should the store refuse the write, the batch is sent again later: a replay
            // changes nothing.)
            await keep(checkpoint: token)
            return await read(after: token, &io)
        case .send(let batch, let readAhead):
            return await send(batch, readAhead: readAhead, &io)
        case .nap(let seconds, let interruptible):
            await nap(seconds, draining: !interruptible)
            return .woke
        case .readTokenFile:
            return .tokenFile(try? upstream.token())
        case .finish:
            return .woke
        }
    }

    /// The batch after `token`: the one read ahead when it is that one, else read now.
    func read(after token: Int64, _ io: inout Exchange) async -> ReplicationMachine.Event {
        let ahead = io.ahead
        io.ahead = nil
        if let ahead, ahead.from == token, let prepared = try? await ahead.task.value {
            io.current = prepared
            return .read(prepared.batch)
        }
        ahead?.task.cancel()
        do {
            let prepared = try await self.prepared(after: token)
            io.current = prepared
            return .read(prepared.batch)
        } catch {
            io.error = error
            return .readFailed
        }
    }

    /// Sends the batch the machine holds (reading the next meanwhile when asked).
    func send(
        _ batch: ReplicationMachine.Batch,
        readAhead: Bool,
        _ io: inout Exchange
    ) async
        -> ReplicationMachine.Event
    {
        guard let prepared = io.current, prepared.batch == batch else {
            assertionFailure("replication: the batch to send is not the one read")
            return .failed(.protocolError, token: nil)
        }
        let through = prepared.outbox.through
        if readAhead, io.ahead?.from != through {
            io.ahead?.task.cancel()
            io.ahead = (through, Task { try await self.prepared(after: through) })
        }
        let sentAt = Date().timeIntervalSince1970
        let body = SyncBatch.body(
            kiosk: kiosk,
            through: through,
            sentAt: sentAt,
            clock: io.clock.best,
            backlog: prepared.after.changes,
            backlogOldest: prepared.after.oldest?.seconds,
            documents: prepared.documents
        )
        let started = ContinuousClock.now
        let server = upstream.base
        defer {
            if upstream.base != server {
                logger.notice(
                    "the site server \(server) failed; moved to \(upstream.base)",
                    metadata: ["upstream": "\(upstream.base)"]
                )
            }
        }
        do {
            let answer = try await upstream.send(body)
            io.clock.add(
                ClockSample(
                    sent: sentAt,
                    serverReceived: answer.receivedAt,
                    serverAnswered: answer.serverTime,
                    received: sentAt + (ContinuousClock.now - started) / .seconds(1)
                )
            )
            io.answer = answer
            return .answered(acknowledged: answer.acknowledged)
        } catch {
            io.error = error
            return .failed(error.code, token: try? upstream.token())
        }
    }

    /// The machine's notes in words, counters and the status line.
    func say(_ notes: [ReplicationMachine.Note], _ machine: ReplicationMachine, _ io: Exchange) async {
        let message = (io.error as? SyncError)?.message ?? io.error.map { "\($0)" } ?? ""
        for note in notes {
            switch note {
            case .drainBegan:
                let left = await backlogChanges(after: machine.acknowledged) ?? 0
                if left > 0 {
                    logger.notice(
                        "draining before exit",
                        metadata: [
                            "backlog.changes": "\(left)", "timeout.seconds": "\(machine.timing.drainTimeout)",
                        ]
                    )
                }
            case .drainExpired:
                let left = await backlogChanges(after: machine.acknowledged) ?? -1
                logger.warning(
                    "drain timed out: \(left) changes not acknowledged by \(upstream.base); kept here and sent at the next start",
                    metadata: ["backlog.changes": "\(left)"]
                )
            case .drained:
                logger.info("drained: everything acknowledged", metadata: ["token": "\(machine.acknowledged)"])
            case .readFailed(let retry):
                // The store busy or failing: ranging goes on; try again shortly.
                logger.error(
                    "reading the change log failed; retrying in \(Int(retry)) s",
                    metadata: ["error": "\(message)"]
                )
            case .tokenFileChanged:
                logger.notice("the token file changed: replicating again", metadata: ["file": "\(upstream.tokenFile)"])
                status.update { $0.state = .connecting }
            case .acknowledged(let token, let outage):
                acknowledged(token, outage: outage, io)
            case .alreadyAhead(let token, let through):
                logger.notice(
                    "the site server already has changes up to \(token); going on from there",
                    metadata: ["through": "\(through)"]
                )
            case .mismatch(let serverAhead, let answered, let through):
                logger.error(
                    serverAhead
                        ? "the site server has this kiosk's changes up to \(answered), beyond this store's \(through): was the kiosk's store replaced? Nothing is sent until that is settled (on the server: tracer db delete kiosks/\(kiosk) forgets what it acknowledged); retrying"
                        : "the site server acknowledged token \(answered) for a batch through \(through); retrying"
                )
            case .tokenRefused:
                status.update {
                    $0.state = .tokenRefused
                    $0.lastError = message
                }
                metrics.tokenRefused.record(1)
                logger.error(
                    "the site server refused the token in \(upstream.tokenFile) (\(message)): replication stopped, recording goes on; put a valid kiosk token in the file to resume"
                )
            case .batchRefused(let through):
                status.update {
                    $0.state = .retrying
                    $0.lastError = message
                }
                // A batch the server cannot take would be refused forever: say so loudly, and
                // retry slowly (a newer server may take it).
                logger.error("the site server refused a batch: \(message)", metadata: ["through": "\(through)"])
            case .unreachable(let began):
                status.update {
                    $0.state = .retrying
                    $0.lastError = message
                }
                if began {
                    logger.warning(
                        "the site server is unreachable (\(message)); recording goes on and the backlog is kept; retrying with backoff",
                        metadata: ["upstream": "\(upstream.base)"]
                    )
                }
                await publishBacklog(after: machine.acknowledged)
            }
        }
    }

    /// An acknowledgement: what the server refused, the status, the counters and the backlog
    /// (what is left is what the batch was read with: no second read of the log).
    func acknowledged(_ token: Int64, outage: Double?, _ io: Exchange) {
        guard let answer = io.answer else { return }
        if let outage {
            logger.notice("the site server is back after \(Int(outage)) s", metadata: ["upstream": "\(upstream.base)"])
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
            $0.clockOffset = io.clock.best?.offset
            $0.lastError = nil
        }
        metrics.acknowledged(documents: answer.applied + answer.unchanged, refused: answer.refused.count)
        if let after = io.current?.after { publish(backlog: after) }
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

        /// As the machine sees it.
        var batch: ReplicationMachine.Batch { .init(from: from, through: outbox.through, after: after.changes) }
    }

    /// The batch after `token`, read and encoded on the store's reader threads.
    func prepared(after token: Int64) async throws -> Prepared {
        try await store.reading { db in try self.prepare(after: token, in: db) }
    }

    /// Moves the checkpoint (on the store's writer thread); a failure is logged, and the batch
    /// sent again later (a replay changes nothing).
    func keep(checkpoint token: Int64) async {
        let (store, name) = (self.store, checkpointName)
        do { try await store.writing { db in try db.setCheckpoint(name, token) } } catch {
            logger.error("keeping the checkpoint failed", metadata: ["error": "\(error)"])
        }
    }

    func prepare(after token: Int64, in db: StoreReader) throws -> Prepared {
        let outbox = try db.outbox(after: token, limit: options.batchSize, include: travels)
        return Prepared(
            from: token,
            outbox: outbox,
            documents: SyncBatch.documents(outbox.entries),
            after: try db.backlog(after: outbox.through)
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
        return try? await store.reading { db in try db.backlog(after: token).changes }
    }

    func publishBacklog(after token: Int64) async {
        let store = self.store
        guard let backlog = try? await store.reading({ db in try db.backlog(after: token) }) else { return }
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

import TracerAPI
import TracerModel

/// The replicator as a state machine, with no I/O (postgres-nio's `ConnectionStateMachine` is
/// the model): one `State` (what it is doing: reading a batch, sending one, napping, waiting for
/// a new token, finished), the facts of the link that outlive a state (the token the server
/// acknowledged, failures in a row, the outage, the drain's deadline), an `Event` in (what the
/// store, the server, the clock or the token file said), a `Step` out (the `Action` to run and
/// the `Note`s to log). `Replicator.run` only runs the actions and feeds back what came of them;
/// tests drive this with a manual clock (`now`: seconds of a monotonic clock) and no server.
struct ReplicationMachine {
    /// A batch as the machine sees it: the tokens it spans and the changes left after it.
    struct Batch: Equatable {
        /// The token it follows (the checkpoint it was read after).
        var from: Int64
        /// The last change it holds (`from` when it holds none: a heartbeat).
        var through: Int64
        /// Changes left in the store after it.
        var after: Int64
    }

    enum State: Equatable {
        /// The batch after the checkpoint is being read.
        case reading
        /// `batch` is in flight since `started`.
        case sending(Batch, started: Double)
        /// Sleeping; then `then`.
        case napping(then: AfterNap)
        /// The server refused the token file's `content`: nothing goes until it changes (the
        /// file is read again after each nap); then `batch` is sent.
        case tokenRefused(content: String, batch: Batch)
        /// The token file is being read to see whether it changed.
        case readingToken(refused: String, batch: Batch)
        /// Returned: drained, or the drain's time was up.
        case finished
    }

    enum AfterNap: Equatable {
        /// Read the batch after the checkpoint again.
        case read
        /// Decide again on a batch already read (sent again, unless it went stale).
        case retry(Batch)
    }

    enum Event: Equatable {
        /// The batch after the checkpoint, read.
        case read(Batch)
        /// Reading the change log failed.
        case readFailed
        /// The server answered the batch in flight, acknowledging `acknowledged`.
        case answered(acknowledged: Int64)
        /// The exchange failed with `code`; `token` is the token file's content now.
        case failed(SyncError.Code, token: String?)
        /// A nap ended.
        case woke
        /// The token file's content (nil: unreadable).
        case tokenFile(String?)
    }

    enum Action: Equatable {
        /// Read the batch after `after` (the checkpoint).
        case read(after: Int64)
        /// Move the checkpoint to `token`, then read the batch after it.
        case keepThenRead(checkpoint: Int64)
        /// Send `batch`; `readAhead`: also start reading the batch after it meanwhile.
        case send(Batch, readAhead: Bool)
        /// Sleep this long; `interruptible`: graceful shutdown ends it at once (the drain begins).
        case nap(Double, interruptible: Bool)
        /// Read the token file.
        case readTokenFile
        /// Return.
        case finish
    }

    /// What the replicator logs and counts: each says what happened, the loop says it in words.
    enum Note: Equatable {
        case drainBegan
        case drainExpired
        case drained
        case readFailed(retry: Double)
        case tokenFileChanged
        /// The server acknowledged `token`; `outage`: it was away this long, now back.
        case acknowledged(token: Int64, outage: Double?)
        case alreadyAhead(token: Int64, through: Int64)
        case mismatch(serverAhead: Bool, acknowledged: Int64, through: Int64)
        case tokenRefused
        case batchRefused(through: Int64)
        case unreachable(outageBegan: Bool)
    }

    struct Step: Equatable {
        var action: Action
        var notes: [Note] = []
    }

    private(set) var state = State.reading

    struct Timing: Equatable {
        /// A new batch is looked for this often while live.
        var interval: Double = 0.5
        /// With nothing new, an empty batch this often lets the server see the kiosk.
        var heartbeat: Double = 15
        var drainTimeout: Double = 60
        var maxBackoff: Double = 30
    }

    let timing: Timing
    /// Where in its upper half a jittered delay falls (0.5 to 1; random unless a test fixes it).
    let fraction: () -> Double

    /// The newest change token the server acknowledged: the checkpoint.
    private(set) var acknowledged: Int64
    /// Failed exchanges in a row.
    private(set) var failures = 0
    /// When the server went away (the first failed exchange of this outage).
    private(set) var outageSince: Double?
    /// The token file's content the server refused: nothing is sent until it changes.
    private(set) var refusedToken: String?
    /// When the drain must end, once graceful shutdown began.
    private(set) var drainDeadline: Double?
    private var lastExchange: Double

    init(
        acknowledged: Int64,
        now: Double,
        timing: Timing = Timing(),
        fraction: @escaping () -> Double = { Double.random(in: 0.5...1.0) }
    ) {
        self.acknowledged = acknowledged
        self.timing = timing
        self.fraction = fraction
        self.lastExchange = now - timing.heartbeat
    }

    var draining: Bool { drainDeadline != nil }

    /// Graceful shutdown was asked for: true when the drain begins now (once).
    mutating func shutdown(now: Double) -> Bool {
        guard drainDeadline == nil else { return false }
        drainDeadline = now + timing.drainTimeout
        return true
    }

    /// Whether the drain has run out of time: the replicator returns, what is left kept.
    func drainExpired(now: Double) -> Bool {
        drainDeadline.map { now >= $0 } ?? false
    }

    /// While a token is refused: the token file read now (nil: unreadable). True when it changed
    /// and sending resumes; otherwise wait `refusedRecheck` and look again.
    mutating func tokenFile(_ content: String?) -> Bool {
        guard let refused = refusedToken else { return true }
        guard let content, content != refused else { return false }
        refusedToken = nil
        return true
    }

    /// How long to wait before reading the token file again.
    var refusedRecheck: Double { draining ? 0.5 : 2 }

    /// After a failed read of the change log.
    var readRetry: Double { 5 }

    enum Next: Equatable {
        /// Send the batch (new changes, or an empty heartbeat).
        case send
        /// Nothing new and the server heard from recently: look again after this long.
        case wait(Double)
        /// Draining, and everything is acknowledged: the replicator returns.
        case drained
    }

    /// A batch was read after `acknowledged`: whether it holds anything.
    func batchRead(nothingNew: Bool, now: Double) -> Next {
        guard nothingNew else { return .send }
        if draining { return .drained }
        if now - lastExchange < timing.heartbeat, failures == 0 { return .wait(timing.interval) }
        return .send
    }

    enum Answered: Equatable {
        /// The batch was applied through `token`: keep it as the checkpoint and go on with the
        /// next batch (read ahead from it). `outage`: the server was away this long, now back.
        case acknowledged(token: Int64, outage: Double?)
        /// The server already had changes further than this batch (an earlier batch's answer was
        /// lost): keep its token and go on from there, the batch read ahead thrown away.
        case alreadyAhead(token: Int64)
        /// An acknowledgement that fits neither: nothing moves; wait and send again.
        case mismatch(serverAhead: Bool, wait: Double)
    }

    /// The server answered a batch through `through`, read with `after` changes behind it.
    mutating func answered(_ acknowledgedByServer: Int64, through: Int64, after: Int64, now: Double) -> Answered {
        lastExchange = now
        if acknowledgedByServer > through, acknowledgedByServer <= through + after {
            acknowledged = acknowledgedByServer
            return .alreadyAhead(token: acknowledgedByServer)
        }
        guard acknowledgedByServer == through else {
            // Acknowledging anything else would skip changes or send them twice over.
            failures += 1
            return .mismatch(serverAhead: acknowledgedByServer > through, wait: backoff())
        }
        acknowledged = through
        let outage = outageSince.map { now - $0 }
        outageSince = nil
        failures = 0
        return .acknowledged(token: through, outage: outage)
    }

    enum Failed: Equatable {
        /// The token was refused: stop sending until the token file changes.
        case tokenRefused
        /// The server cannot take this batch: retry slowly.
        case batchRefused(wait: Double)
        /// The server is unreachable or failing: `outageBegan` the first time in a row.
        case unreachable(outageBegan: Bool, wait: Double)
    }

    /// An exchange that began at `started` failed with `code`; `token` is the token file's
    /// content now (what a refusal is about).
    mutating func failed(_ code: SyncError.Code, started: Double, token: String?, now: Double) -> Failed {
        switch code {
        case .unauthorized, .forbidden:
            refusedToken = token ?? ""
            return .tokenRefused
        case .badRequest, .protocolError:
            failures += 1
            return .batchRefused(wait: timing.maxBackoff)
        default:
            failures += 1
            let began = outageSince == nil
            if began { outageSince = started }
            var wait = backoff()
            if let deadline = drainDeadline { wait = min(wait, max(0, deadline - now)) }
            return .unreachable(outageBegan: began, wait: wait)
        }
    }

    // MARK: Events in, steps out

    /// The first step: read the batch after the checkpoint.
    mutating func start() -> Step {
        state = .reading
        return Step(action: .read(after: acknowledged))
    }

    /// Graceful shutdown, seen by the loop before it runs a step: the drain begins (once).
    mutating func shuttingDown(now: Double) -> [Note] {
        shutdown(now: now) ? [.drainBegan] : []
    }

    /// What to do after `event`, at `now`.
    mutating func handle(_ event: Event, now: Double) -> Step {
        if drainExpired(now: now), state != .finished {
            state = .finished
            return Step(action: .finish, notes: [.drainExpired])
        }
        switch (state, event) {
        case (.reading, .read(let batch)):
            return decide(batch, now: now)
        case (.reading, .readFailed):
            return nap(readRetry, then: .read, notes: [.readFailed(retry: readRetry)], now: now)
        case (.sending(let batch, let started), .answered(let token)):
            return answered(token, for: batch, now: now, started: started)
        case (.sending(let batch, let started), .failed(let code, let token)):
            return failed(code, batch: batch, started: started, token: token, now: now)
        case (.napping(.read), .woke):
            state = .reading
            return Step(action: .read(after: acknowledged))
        case (.napping(.retry(let batch)), .woke):
            return decide(batch, now: now)
        case (.tokenRefused(let refused, let batch), .woke):
            state = .readingToken(refused: refused, batch: batch)
            return Step(action: .readTokenFile)
        case (.readingToken(let refused, let batch), .tokenFile(let content)):
            guard tokenFile(content) else {
                state = .tokenRefused(content: refused, batch: batch)
                return nap(refusedRecheck, then: nil, now: now)
            }
            return decide(batch, now: now, notes: [.tokenFileChanged])
        case (.finished, _):
            return Step(action: .finish)
        default:
            // An event the state does not expect is a bug in the loop: start again from the
            // checkpoint (nothing is lost: the log after it is read again).
            assertionFailure("replication: \(event) in \(state)")
            state = .reading
            return Step(action: .read(after: acknowledged))
        }
    }

    /// A batch read (or held): send it, wait for more, or, draining with nothing left, finish.
    /// A held batch read after an older checkpoint is stale: the log is read again.
    private mutating func decide(_ batch: Batch, now: Double, notes: [Note] = []) -> Step {
        guard batch.from == acknowledged else {
            state = .reading
            return Step(action: .read(after: acknowledged), notes: notes)
        }
        switch batchRead(nothingNew: batch.through == acknowledged, now: now) {
        case .drained:
            state = .finished
            return Step(action: .finish, notes: notes + [.drained])
        case .wait(let seconds):
            return nap(seconds, then: .read, notes: notes, now: now)
        case .send:
            state = .sending(batch, started: now)
            return Step(action: .send(batch, readAhead: batch.after > 0), notes: notes)
        }
    }

    private mutating func answered(_ token: Int64, for batch: Batch, now: Double, started: Double) -> Step {
        switch answered(token, through: batch.through, after: batch.after, now: now) {
        case .alreadyAhead(let token):
            state = .reading
            return Step(
                action: .keepThenRead(checkpoint: token),
                notes: [.alreadyAhead(token: token, through: batch.through)]
            )
        case .mismatch(let serverAhead, let wait):
            let note = Note.mismatch(serverAhead: serverAhead, acknowledged: token, through: batch.through)
            return nap(wait, then: .retry(batch), notes: [note], now: now)
        case .acknowledged(let token, let outage):
            state = .reading
            return Step(action: .keepThenRead(checkpoint: token), notes: [.acknowledged(token: token, outage: outage)])
        }
    }

    private mutating func failed(
        _ code: SyncError.Code,
        batch: Batch,
        started: Double,
        token: String?,
        now: Double
    )
        -> Step
    {
        switch failed(code, started: started, token: token, now: now) {
        case .tokenRefused:
            let refused = refusedToken ?? ""
            state = .tokenRefused(content: refused, batch: batch)
            return nap(refusedRecheck, then: nil, notes: [.tokenRefused], now: now)
        case .batchRefused(let wait):
            return nap(wait, then: .retry(batch), notes: [.batchRefused(through: batch.through)], now: now)
        case .unreachable(let began, let wait):
            return nap(wait, then: .retry(batch), notes: [.unreachable(outageBegan: began)], now: now)
        }
    }

    /// A nap, never past the drain's deadline, that graceful shutdown ends before the drain;
    /// `then`: what follows it (nil: the state says, as a refused token's does).
    private mutating func nap(_ seconds: Double, then: AfterNap?, notes: [Note] = [], now: Double) -> Step {
        if let then { state = .napping(then: then) }
        var wait = seconds
        if let deadline = drainDeadline { wait = min(wait, max(0, deadline - now)) }
        return Step(action: .nap(wait, interruptible: !draining), notes: notes)
    }

    /// 1 s, 2 s, 4 s … up to `maxBackoff`, each between half and all of it (jitter, so that a
    /// site's kiosks do not all come back in the same second).
    func backoff() -> Double {
        let b = Backoff(first: .seconds(1), longest: .seconds(timing.maxBackoff), jitter: true)
        return b.delay(after: failures, fraction: fraction()) / .seconds(1)
    }
}

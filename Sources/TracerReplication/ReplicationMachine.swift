import TracerAPI
import TracerModel

/// The replicator's decisions, with no I/O: what it knows (the token the server acknowledged,
/// failures in a row, the outage, a refused token, the drain) and, for each thing that happens,
/// what to do next. `Replicator.run` reads the store, sends, sleeps and logs as it is told;
/// tests drive this with a manual clock (`now`: seconds of a monotonic clock) and no server.
struct ReplicationMachine {
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

    /// 1 s, 2 s, 4 s … up to `maxBackoff`, each between half and all of it (jitter, so that a
    /// site's kiosks do not all come back in the same second).
    func backoff() -> Double {
        let b = Backoff(first: .seconds(1), longest: .seconds(timing.maxBackoff), jitter: true)
        return b.delay(after: failures, fraction: fraction()) / .seconds(1)
    }
}

import Foundation
import Hummingbird
import Logging
import NIOCore
import Synchronization
import TracerAPI
import TracerModel
import TracerStore

/// `POST /v1/sync`: a kiosk's batch, committed in one transaction before the answer, with the
/// kiosk's sync state (`kiosks/{anchor}`) in the same transaction.
///
/// A kiosk token writes only `beacons/{anchor}` and its interactions; anything else is refused
/// per document (403 in the answer, an entry in the audit log) and acknowledged, so the kiosk
/// does not retry it. An admin token may replicate anything (moving a site by hand).
final class SyncEndpoint: Sendable {
    /// The largest batch body taken: a kiosk sends 5,000 documents (about 2.3 MB) at most.
    static let maxBody = 32 << 20
    /// Clock offsets above this are warned about (co-location across kiosks needs their clocks).
    static let offsetWarning = 2.0

    let store: DocumentStore
    let logger: Logger
    /// When each kiosk's clock was last warned about, so a wrong clock is one line per 10 minutes.
    private let warned = Mutex<[String: Double]>([:])

    init(store: DocumentStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    func handle(_ request: Request, _ who: Principal) async throws -> Response {
        let received = Date().timeIntervalSince1970
        let body = try await request.body.collect(upTo: Self.maxBody)
        let batch: SyncBatch
        do { batch = try SyncBatch(json: Array(body.readableBytesView)) } catch {
            throw APIError.badRequest(error.message)
        }
        if who.role == .kiosk, who.anchor == nil {
            // Nor may it speak for a kiosk: its state would land under whatever name it gave.
            throw APIError.forbidden(
                "a kiosk token without an anchor may not replicate (tracer token create --role kiosk --anchor KEY)"
            )
        }
        let kiosk = who.anchor ?? batch.kiosk
        guard (try? Collections.kiosk(kiosk)) != nil else {
            throw APIError.badRequest("kiosk: not an anchor key: '\(kiosk.prefix(80))'")
        }
        var accepted: [Replica] = []
        var refused: [SyncAnswer.Refusal] = []
        for entry in batch.documents {
            if who.role == .kiosk, let reason = SyncScope.refusal(of: entry.path, anchor: who.anchor) {
                refused.append(.init(path: entry.path.description, reason: reason))
            } else {
                accepted.append(entry)
            }
        }
        // The kiosk's clock as the kiosk measured it over its exchanges (NTP's way, the sample
        // with the shortest round trip), sent with each batch.
        let offset = batch.clock?.offset
        let status = KioskSync.batch(
            acknowledged: batch.through,
            backlog: batch.backlog,
            backlogOldest: batch.backlogOldest.map { Timestamp(seconds: $0) },
            clockOffset: offset,
            applied: accepted.count,
            refused: refused.count,
            tokenID: who.tokenID
        )
        var also = WriteBatch()
        also.set(try Collections.kiosk(kiosk), status, merge: true)
        for r in refused.prefix(100) {
            let entry = AuditEntry(
                tokenID: who.tokenID,
                tokenName: who.name,
                role: who.role,
                method: "POST",
                path: "/v1/sync " + r.path,
                outcome: "refused (403): " + r.reason
            )
            also.set(Collections.audit.newDocument(), entry.data)
        }
        // The commit (an fsync) runs on the store's writer thread, not on the event loop or the
        // cooperative pool that every other request shares.
        let store = self.store
        let entries = accepted
        let bookkeeping = also
        let sequence = ReplicaSequence(
            path: try Collections.kiosk(kiosk),
            field: "acknowledged",
            through: batch.through
        )
        let result = try await store.writing {
            try store.applyReplica(entries, also: bookkeeping, sequence: sequence)
        }
        if result.stale {
            logger.warning(
                "kiosk \(kiosk) sent a batch through change \(batch.through), behind the \(result.previous ?? 0) acknowledged: nothing of it applied",
                metadata: [
                    "kiosk": "\(kiosk)", "through": "\(batch.through)", "acknowledged": "\(result.previous ?? 0)",
                ]
            )
        }
        if !refused.isEmpty {
            logger.warning(
                "refused \(refused.count) replicated documents outside the token's anchor",
                metadata: ["kiosk": "\(kiosk)", "token.id": "\(who.tokenID)", "first": "\(refused[0].path)"]
            )
        }
        if let clock = batch.clock { warnAboutClock(kiosk, clock, now: received) }
        let answer = SyncAnswer(
            // A stale batch is answered with what the server has: the kiosk sees it is behind.
            acknowledged: result.stale ? result.previous ?? batch.through : batch.through,
            applied: result.applied,
            unchanged: result.unchanged,
            refused: refused,
            receivedAt: received,
            serverTime: Date().timeIntervalSince1970,
            clockOffset: offset
        )
        return JSONBody.response(bytes: Data(answer.json.utf8), status: .ok)
    }

    /// Warns when the kiosk's clock is off by more than 2 s for certain (its measure's error is
    /// at most half its round trip).
    func warnAboutClock(_ kiosk: String, _ clock: ClockSample, now: Double) {
        let offset = clock.offset
        guard abs(offset) - clock.delay / 2 > Self.offsetWarning else { return }
        let due = warned.withLock { warned in
            if let last = warned[kiosk], now - last < 600 { return false }
            warned[kiosk] = now
            return true
        }
        if due {
            logger.warning(
                "kiosk \(kiosk)'s clock is \(String(format: "%+.1f", offset)) s off this server's: co-location across kiosks is only as good as their clocks (check NTP: timedatectl timesync-status)",
                metadata: ["kiosk": "\(kiosk)", "clock.offset": "\(offset)"]
            )
        }
    }
}

import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import Synchronization
import TracerAPI
import TracerModel
import TracerStore

/// glibc's `malloc_trim` (malloc.h, which Swift's Glibc module does not bring): gives the pages
/// of freed memory back to the system.
@_silgen_name("malloc_trim") private func mallocTrim(_ pad: Int) -> Int32

/// `POST /v1/sync`: a kiosk's batch, committed in one transaction before the answer, with the
/// kiosk's sync state (`kiosks/{anchor}`) in the same transaction.
///
/// A kiosk token writes only `beacons/{anchor}` and its interactions; anything else is refused
/// per document (403 in the answer, an entry in the audit log) and acknowledged, so the kiosk
/// does not retry it. An admin token may replicate anything (moving a site by hand).
final class SyncEndpoint: Sendable {
    /// The largest batch body taken: a kiosk sends 5,000 documents (about 2.3 MB) at most.
    static let maxBody = 32 << 20
    /// The thread kiosks' batches are decoded on, for the process's life (started on first use).
    static let decoder: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        return pool
    }()
    /// Clock offsets above this are warned about (co-location across kiosks needs their clocks).
    static let offsetWarning = 2.0

    let store: DocumentStore
    let logger: Logger
    /// The site's retention (seconds): interactions that ended longer ago are not stored.
    let retention: Double
    /// Whether a key is one of the published site's anchors: a batch refused for a kiosk the
    /// site has is counted on that kiosk's document (`/v1/kiosks`); for any other name, only in
    /// the audit log (a token holder cannot make kiosks up).
    let isAnchor: @Sendable (String) -> Bool
    /// When each kiosk's clock was last warned about, so a wrong clock is one line per 10 minutes.
    private let warned = Mutex<[String: Double]>([:])

    init(
        store: DocumentStore,
        logger: Logger,
        retention: Double = Retention.defaultSeconds,
        isAnchor: @escaping @Sendable (String) -> Bool = { _ in false }
    ) {
        self.store = store
        self.logger = logger
        self.retention = retention
        self.isAnchor = isAnchor
    }

    func handle(_ request: Request, _ who: Principal) async throws -> Response {
        var size = 0
        defer {
            // A large batch's documents are freed by now, but glibc keeps freed memory for later
            // allocations unless told: 366 MiB stayed resident after two 28.6 MiB batches. Only
            // past 8 MiB (a kiosk's usual batch is 2.3 MB): trimming costs a walk of the heap.
            // Once now, and once a second later for what is freed after the answer is written
            // (the connection's buffers of the body): with the first alone, 0.27-0.72 of what
            // two 30 MiB batches took stayed resident, by when those buffers went.
            // Then SQLite's page caches, which a connection keeps until it closes (80 MiB of the
            // 87-93 left after two 30 MiB batches), each time (a reader in use keeps its cache),
            // and again 1 and 5 s later, for a busy machine's later frees.
            if size > 8 << 20 {
                _ = mallocTrim(0)
                let store = self.store
                Task.detached {
                    for wait in [0, 1, 4] {
                        try? await Task.sleep(for: .seconds(wait))
                        await store.releaseMemory()
                        _ = mallocTrim(0)
                    }
                }
            }
        }
        return try await apply(request, who, size: &size)
    }

    private func apply(_ request: Request, _ who: Principal, size: inout Int) async throws -> Response {
        let received = Date().timeIntervalSince1970
        let body = try await request.body.collect(upTo: Self.maxBody)
        size = body.readableBytes
        // Decoded on a thread of its own, one batch at a time: a 32 MiB batch is seconds of one
        // core's work, and two of them on Swift's cooperative threads (two on a small server)
        // held every other request, `/health` among them, for over 5 s.
        let batch: SyncBatch = try await Self.decoder.runIfActive {
            do throws(SyncError) { return try SyncBatch(json: Array(body.readableBytesView)) } catch {
                throw APIError.badRequest(error.message)
            }
        }
        let kiosk = try await self.kiosk(of: batch, who)
        let sorted = sort(batch.documents, who, cutoff: received - retention)
        var refused = sorted.refused
        if sorted.expired > 0 {
            refused.append(
                .init(
                    path: "\(sorted.expired) interactions",
                    reason: "older than the site's retention (\(Self.days(retention)) days): not stored"
                )
            )
        }
        // The commit (an fsync) runs on the store's writer thread, not on the event loop or the
        // cooperative pool that every other request shares.
        let store = self.store
        let (entries, bookkeeping) = (sorted.accepted, try self.bookkeeping(kiosk, batch, sorted, who))
        let sequence = ReplicaSequence(
            path: try Collections.kiosk(kiosk),
            field: "acknowledged",
            through: batch.through
        )
        let result = try await store.writing { db in
            try db.applyReplica(entries, also: bookkeeping, sequence: sequence)
        }
        log(kiosk, batch, sorted, stale: result.stale ? result.previous ?? 0 : nil, who)
        if let clock = batch.clock { warnAboutClock(kiosk, clock, now: received) }
        let answer = SyncAnswer(
            // A stale batch is answered with what the server has: the kiosk sees it is behind.
            acknowledged: result.stale ? result.previous ?? batch.through : batch.through,
            applied: result.applied,
            unchanged: result.unchanged,
            refused: refused,
            receivedAt: received,
            serverTime: Date().timeIntervalSince1970,
            clockOffset: batch.clock?.offset
        )
        return JSONBody.response(bytes: Data(answer.json.utf8), status: .ok)
    }

    /// The kiosk the batch is for: the token's anchor (a kiosk token speaks for its own only; one
    /// without an anchor may not replicate), else the batch's own word (an admin's).
    private func kiosk(of batch: SyncBatch, _ who: Principal) async throws -> String {
        if who.role == .kiosk, who.anchor == nil {
            // Nor may it speak for a kiosk: its state would land under whatever name it gave.
            throw APIError.forbidden(
                "a kiosk token without an anchor may not replicate (tracer token create --role kiosk --anchor KEY)"
            )
        }
        if !batch.kiosk.isEmpty, (try? Collections.kiosk(batch.kiosk)) == nil {
            throw APIError.badRequest("kiosk: not an anchor key: '\(batch.kiosk.prefix(80))'")
        }
        if who.role == .kiosk, let anchor = who.anchor, !batch.kiosk.isEmpty, batch.kiosk != anchor {
            // Another kiosk's token: its documents would all be refused, one by one, and its sync
            // state would land on the token's kiosk. The whole batch is refused, once, saying why.
            let reason =
                "this token is for \(anchor), not \(batch.kiosk): give \(batch.kiosk) its own token (tracer token create --role kiosk --anchor \(batch.kiosk))"
            try await refuse(batch, reason: reason, who)
            throw APIError(.forbidden, .wrongKiosk, reason)
        }
        let kiosk = who.anchor ?? batch.kiosk
        guard (try? Collections.kiosk(kiosk)) != nil else {
            throw APIError.badRequest("kiosk: not an anchor key: '\(kiosk.prefix(80))'")
        }
        return kiosk
    }

    /// A batch's documents sorted: taken, refused (outside the token's anchor, or not a document
    /// the site can use: audited), or past the site's retention already (counted only).
    struct Sorted {
        var accepted: [Replica] = []
        var refused: [SyncAnswer.Refusal] = []
        var expired = 0
    }

    private func sort(_ documents: [Replica], _ who: Principal, cutoff: Double) -> Sorted {
        var sorted = Sorted()
        for entry in documents {
            if who.role == .kiosk, let reason = SyncScope.refusal(of: entry.path, anchor: who.anchor) {
                sorted.refused.append(.init(path: entry.path.description, reason: reason))
            } else if let reason = SyncScope.problem(with: entry) {
                sorted.refused.append(.init(path: entry.path.description, reason: reason))
            } else if SyncScope.isInteraction(entry.path), let end = entry.data?["end"]?.timestampValue,
                end.seconds < cutoff
            {
                // Already past the site's retention (a kiosk back after weeks away): the site
                // would purge it within the minute, so it is never stored. Acknowledged, not audited.
                sorted.expired += 1
            } else {
                sorted.accepted.append(entry)
            }
        }
        return sorted
    }

    /// What the batch's commit also writes: the kiosk's sync state (the kiosk's clock as the
    /// kiosk measured it over its exchanges, NTP's way, sent with each batch) and the first 100
    /// refusals in the audit log.
    private func bookkeeping(
        _ kiosk: String,
        _ batch: SyncBatch,
        _ sorted: Sorted,
        _ who: Principal
    ) throws
        -> WriteBatch
    {
        let status = KioskSync.batch(
            acknowledged: batch.through,
            backlog: batch.backlog,
            backlogOldest: batch.backlogOldest.map { Timestamp(seconds: $0) },
            clockOffset: batch.clock?.offset,
            applied: sorted.accepted.count,
            refused: sorted.refused.count,
            tokenID: who.tokenID
        )
        var also = WriteBatch()
        also.set(try Collections.kiosk(kiosk), status, merge: true)
        for r in sorted.refused.prefix(100) {
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
        return also
    }

    /// A stale batch (`stale`: what was acknowledged before), expired and refused documents, said.
    private func log(_ kiosk: String, _ batch: SyncBatch, _ sorted: Sorted, stale previous: Int64?, _ who: Principal) {
        if let previous {
            logger.warning(
                "kiosk \(kiosk) sent a batch through change \(batch.through), behind the \(previous) acknowledged: nothing of it applied",
                metadata: [
                    "kiosk": "\(kiosk)", "through": "\(batch.through)", "acknowledged": "\(previous)",
                ]
            )
        }
        if sorted.expired > 0 {
            logger.notice(
                "kiosk \(kiosk) sent \(sorted.expired) interactions older than the site's retention: not stored",
                metadata: ["kiosk": "\(kiosk)", "expired": "\(sorted.expired)"]
            )
        }
        if let first = sorted.refused.first {
            logger.warning(
                "refused \(sorted.refused.count) replicated documents: outside the token's anchor, or not an interaction or hearing the site can use",
                metadata: [
                    "kiosk": "\(kiosk)", "token.id": "\(who.tokenID)",
                    "first": "\(first.path): \(first.reason)",
                ]
            )
        }
    }

    static func days(_ seconds: Double) -> String {
        let days = seconds / 86_400
        return days == days.rounded() ? "\(Int(days))" : String(format: "%.2f", days)
    }

    /// A refused batch: in the audit log, on the kiosk's document when the site has that kiosk
    /// (`refusedBatches`, `lastRefusal`: shown by `/v1/kiosks`), and one warning.
    func refuse(_ batch: SyncBatch, reason: String, _ who: Principal) async throws {
        var write = WriteBatch()
        let entry = AuditEntry(
            tokenID: who.tokenID,
            tokenName: who.name,
            role: who.role,
            method: "POST",
            path: "/v1/sync " + batch.kiosk.prefix(80),
            outcome: "refused (403): " + reason
        )
        write.set(Collections.audit.newDocument(), entry.data)
        if isAnchor(batch.kiosk), let path = try? Collections.kiosk(batch.kiosk) {
            write.set(path, KioskSync.refusal(reason), merge: true)
        }
        let store = self.store
        let commit = write
        try await store.writing { db in try db.commit(commit) }
        logger.warning(
            "refused a batch from kiosk \(batch.kiosk.prefix(80)): \(reason)",
            metadata: ["kiosk": "\(batch.kiosk.prefix(80))", "token.id": "\(who.tokenID)"]
        )
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

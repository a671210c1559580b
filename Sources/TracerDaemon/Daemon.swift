import Foundation
import Logging
import Synchronization
import TracerBadges
import TracerModel
import TracerRanging
import TracerSite
import TracerStore

/// `tracer daemon`: ranges adverts from a source and writes interaction documents.
public final class Daemon: Sendable {
    /// The site it started with.
    public let site: Site
    /// A newer site, once published (a kiosk following its site server): the daemon writes
    /// what it has under the old site and goes on under the new one, without a restart.
    private let newerSite = Mutex<Site?>(nil)
    /// The site the kiosk ranges under now, or will at its next batch (the site server's fit
    /// of its receiver is judged against it).
    let currentSite: Mutex<Site>
    /// The site server's fit of the kiosk's receiver, once taken and until the ranging takes it,
    /// with the map's offset for this kiosk it was taken under (a map published since with
    /// another sets it aside); and what the last fit offered was found to be (said once each
    /// time it changes).
    let followed = Mutex<(offset: Double, mapOffset: Double)?>(nil)
    let lastFit = Mutex<SiteFit.Decision?>(nil)
    public let mode: DaemonMode
    public let store: DocumentStore
    public let source: any AdvertSource
    let logger: Logger
    /// Interaction documents per transaction (a shutdown or the end of a replay writes the rest).
    public let batchSize: Int
    /// Herald-style CSV logs, when asked for.
    public let csvLog: CSVLog?
    /// Live sources: what has ended is written at least this often (seconds), so listeners and
    /// the exposure engine see it promptly.
    public let flushInterval: Double
    /// Live counters, for the status line and the metrics.
    public let progress = DaemonProgress()
    /// Live sources: interactions older than this many seconds are purged at start and hourly
    /// (nil: never). A replay is never purged: its times are its recording's.
    public let retention: Double?
    /// A replicating kiosk's acknowledged change token: retention keeps everything after it.
    let acknowledged: (@Sendable () -> Int64?)?
    /// What resolves the site's rotating badges (a site with `settings: badgeUUID`).
    public let badges: BadgeSupply?

    public init(
        site: Site,
        mode: DaemonMode,
        store: DocumentStore,
        source: any AdvertSource,
        batchSize: Int = 500,
        csvLog: CSVLog? = nil,
        flushInterval: Double = 2,
        retention: Double? = 14 * 86_400,
        acknowledged: (@Sendable () -> Int64?)? = nil,
        badges: BadgeSupply? = nil,
        logger: Logger
    ) {
        self.acknowledged = acknowledged
        self.badges = badges
        self.flushInterval = flushInterval
        self.retention = retention
        self.site = site
        self.currentSite = Mutex(site)
        self.mode = mode
        self.store = store
        self.source = source
        self.batchSize = batchSize
        self.csvLog = csvLog
        self.logger = logger
    }

    /// Ranges under `site` from the next round of adverts on. Refused (false, nothing changes)
    /// when the new site does not have this daemon's anchor.
    @discardableResult
    public func replaceSite(_ site: Site) async -> Bool {
        do { _ = try Ranger(site: site, mode: mode) } catch {
            logger.error(
                "the newly published site cannot be used here; ranging goes on under the old one",
                metadata: ["error": "\(error)"]
            )
            return false
        }
        newerSite.withLock { $0 = site }
        currentSite.withLock { $0 = site }
        // The anchors as the new site has them, at once; the ranging takes the site at its
        // next round of adverts.
        do { try await store.writing { db in try self.writeAnchors(site, in: db) } } catch {
            logger.error("writing the new site's anchors failed", metadata: ["error": "\(error)"])
        }
        return true
    }

    /// What a run did.
    public struct Report: Sendable {
        public var counts: RangingCounts
        public var written: Int
        public var seconds: Double
        public var interrupted: Bool
    }

    /// Runs until the source ends, the task is cancelled (SIGTERM, SIGINT), or the source or the
    /// store fails. Every way out ends the same: the source stopped (a live one stops scanning),
    /// every open window closed and written, the CSV log closed; then a failure is thrown (the
    /// first, when the last write fails too: what it could not write is logged).
    public func run() async throws -> Report {
        let started = DispatchTime.now().uptimeNanoseconds
        var run = try await DaemonRun(self)
        logger.info(
            "ranging",
            metadata: ["source": "\(source.name)", "mode": "\(mode)", "site": "\(site.name)"]
        )
        // The next epoch's table is built a minute before it starts, so that no advert waits.
        let bits = site.badgeEpochBits
        let ahead = run.live ? badges.map { b in Task { await b.buildAhead(bits: bits) } } : nil
        defer { ahead?.cancel() }
        var failure: (any Error)?
        do {
            for try await batch in source.batches() {
                try await run.take(batch)
                if Task.isCancelled { break }
            }
        } catch is CancellationError {
        } catch {
            failure = error
        }
        let interrupted = Task.isCancelled
        await source.stop(timeout: .seconds(1))
        do {
            try await run.finish()
        } catch {
            logger.error(
                "the last write failed: the windows ranged since the last one are lost",
                metadata: ["windows": "\(run.unwritten)", "error": "\(error)"]
            )
            failure = failure ?? error
        }
        do { try csvLog?.close() } catch { failure = failure ?? error }
        if let failure { throw failure }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        return run.report(seconds: seconds, interrupted: interrupted)
    }

    /// The site published since the last batch, once (nil when there is none).
    func takeNewerSite() -> Site? {
        newerSite.withLock { s in
            defer { s = nil }
            return s
        }
    }

    /// Deletes interactions that started before `cutoff`, and the change log as old. A failure
    /// is logged, not fatal: ranging goes on and the next hour tries again.
    func purge(olderThan cutoff: Double, in db: StoreWriter) {
        do {
            // What the site server has not acknowledged stays, however old.
            let acknowledged = self.acknowledged?()
            let n = try db.purge(
                collectionGroup: Interaction.collectionID,
                field: Interaction.Field.start,
                olderThan: Timestamp(seconds: cutoff),
                keepingChangesAfter: acknowledged
            )
            try db.purge(
                collectionGroup: Hearing.collectionID,
                field: Hearing.Field.end,
                olderThan: Timestamp(seconds: cutoff),
                keepingChangesAfter: acknowledged
            )
            try db.pruneChanges(olderThan: Timestamp(seconds: cutoff), keepingAfter: acknowledged ?? .max)
            if n > 0 { logger.notice("purged interactions past the retention period", metadata: ["count": "\(n)"]) }
            if let acknowledged, let oldest = try db.backlog(after: acknowledged).oldest,
                oldest.seconds < cutoff
            {
                let days = Int((Date().timeIntervalSince1970 - oldest.seconds) / 86_400)
                logger.critical(
                    "the replication backlog is \(days) days old, older than the retention period: nothing unacknowledged is purged, so this kiosk's store grows until the site server takes it",
                    metadata: ["backlog.oldest": "\(oldest.iso8601Seconds)"]
                )
            }
        } catch {
            logger.error("purge failed; retrying in an hour", metadata: ["error": "\(error)"])
        }
    }

    /// `beacons/{key}` for every anchor of the map, merged so that other fields stay.
    func writeAnchors(_ site: Site, in db: StoreWriter) throws {
        var batch = WriteBatch()
        for anchor in site.anchors {
            batch.set(try Collections.beacon(anchor.key), Beacon(anchor, of: site).data, merge: true)
        }
        try db.commit(batch)
    }

    /// Writes summaries as interaction documents in one transaction, with the kiosk's
    /// calibration when it changed (so that both replicate together), on the store's writer
    /// thread: the ranging's task never waits on a commit's fsync on a cooperative thread.
    func write(
        _ summaries: [InteractionSummary],
        calibration: DocumentData? = nil,
        hearings: [KioskHearing] = []
    ) async throws -> Int {
        guard !summaries.isEmpty || calibration != nil || !hearings.isEmpty else { return 0 }
        let store = self.store
        return try await store.writing { db in
            try self.commit(summaries, calibration: calibration, hearings: hearings, in: db)
        }
    }

    /// The transaction itself, on the writer thread (`write` skips it when there is nothing).
    func commit(
        _ summaries: [InteractionSummary],
        calibration: DocumentData?,
        hearings: [KioskHearing] = [],
        in db: StoreWriter
    ) throws -> Int {
        var batch = WriteBatch()
        for s in summaries {
            batch.set(try Collections.interactions(at: s.anchorKey).newDocument(), Interaction(s).data)
        }
        for h in hearings {
            batch.set(try Collections.hearings(at: h.receiver).document(Hearing.id(h)), Hearing.data(h))
        }
        if case .gateway(let kiosk) = mode, let calibration {
            batch.set(try Collections.beacon(kiosk), ["calibration": .map(calibration)], merge: true)
        }
        try db.commit(batch)
        return summaries.count
    }

    /// The receiver offset this kiosk fitted or followed and stored last (`beacons/{key}`'s
    /// calibration), under `site`: nil when there is none, or when it was made under another
    /// `receiverOffset` of the map's for this kiosk. An operator published that one (after
    /// `tracer site calibration --write`, or by hand), so it wins: the calibration is removed,
    /// the journal says so, and the kiosk calibrates again from the new offset.
    func storedCalibration(in db: StoreWriter, site: Site) throws -> Double? {
        guard case .gateway(let kiosk) = mode else { return nil }
        let path = try Collections.beacon(kiosk)
        guard let c = Beacon.Calibration(try db.get(path)) else { return nil }
        let given = Self.mapOffset(of: kiosk, in: site)
        guard c.isSetAside(byMapOffset: given) else { return c.receiverOffset }
        try db.update(path, ["calibration": .sentinel(.delete)])
        logger.notice(
            "the published map gives this kiosk a new receiver offset: it ranges with it, and sets aside the calibration it had under the old one",
            metadata: [
                "offset.dB": "\(Self.dB(given))", "was.dB": "\(Self.dB(c.receiverOffset))",
                "calibrated.from": "\(c.source ?? "beacons")",
            ]
        )
        return nil
    }

    /// The `receiverOffset` a site's map gives a kiosk's anchor (0 when none): what a stored
    /// calibration was made under (`Beacon.Calibration.mapOffset`).
    static func mapOffset(of kiosk: String, in site: Site) -> Double { site.anchor(kiosk)?.receiverOffset ?? 0 }

    /// An offset as the journal says it: signed, to 0.1 dB.
    static func dB(_ x: Double) -> String { (x >= 0 ? "+" : "") + String(format: "%.1f", x) }

    /// The kiosk's calibration to store, when its fit moved 0.2 dB or more from the stored one.
    func calibrationUpdate(_ ranger: Ranger, stored: inout Double?) -> DocumentData? {
        guard let c = ranger.calibration, let offset = c.offset else { return nil }
        if let s = stored, abs(s - offset) < 0.2 { return nil }
        stored = offset
        logger.info(
            "receiver offset fitted from the fixed beacons",
            metadata: ["offset.dB": "\((offset * 10).rounded() / 10)", "windows": "\(c.windowsSeen)"]
        )
        var calibration = Beacon.Calibration(
            receiverOffset: offset,
            windows: c.windowsSeen,
            references: c.references.count
        )
        if case .gateway(let kiosk) = mode { calibration.mapOffset = Self.mapOffset(of: kiosk, in: ranger.site) }
        return calibration.data
    }

    /// An interaction document: docs/design.md's fields, plus the least distance and the anchor's key.
    public static func document(_ s: InteractionSummary) -> DocumentData { Interaction(s).data }
}

/// What a daemon resolves rotating badges with: the resolver, and (a kiosk's days of ids from its
/// site server) what fetches the days around a replay's time before its table is built.
public struct BadgeSupply: Sendable {
    public let resolver: BadgeResolver
    public let prepare: (@Sendable (Double) async -> Void)?

    public init(resolver: BadgeResolver, prepare: (@Sendable (Double) async -> Void)? = nil) {
        self.resolver = resolver
        self.prepare = prepare
    }

    /// Builds each epoch's table a minute before the epoch starts (live sources), until cancelled.
    func buildAhead(bits: Int) async {
        let length = Double(1 << bits)
        while !Task.isCancelled {
            let now = Date().timeIntervalSince1970
            let next = Double(RotatingID.epochStart(now, bits: bits)) + length
            let wait = max(0, next - 60 - now)
            do { try await Task.sleep(for: .seconds(wait)) } catch { return }
            await prepare?(next)
            _ = resolver.table(at: next)
            do { try await Task.sleep(for: .seconds(61)) } catch { return }
        }
    }
}

/// The daemon's counters as it runs, readable from other threads.
public final class DaemonProgress: Sendable {
    public struct Snapshot: Sendable {
        public var counts = RangingCounts()
        /// (device, anchor) pairs with an open window.
        public var inRange = 0
        public var written = 0
        /// Unix seconds of the last write, once there has been one.
        public var lastWrite: Double?
    }

    private let current = Mutex(Snapshot())

    public var snapshot: Snapshot { current.withLock { $0 } }

    func update(_ ranger: Ranger, before: RangingCounts, written: Int, wroteAt: Double?) {
        var counts = before
        counts.add(ranger.counts)
        let inRange = ranger.windows.openCount
        current.withLock { current in
            current.counts = counts
            current.inRange = inRange
            if written != current.written || current.lastWrite == nil, let wroteAt, written > 0 {
                current.lastWrite = wroteAt
            }
            current.written = written
        }
    }
}

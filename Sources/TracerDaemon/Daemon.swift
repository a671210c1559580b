import Foundation
import Logging
import Synchronization
import TracerModel
import TracerRanging
import TracerSite
import TracerStore

/// `tracer daemon`: ranges adverts from a source and writes interaction documents.
public final class Daemon: Sendable {
    public let site: Site
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

    public init(
        site: Site,
        mode: DaemonMode,
        store: DocumentStore,
        source: any AdvertSource,
        batchSize: Int = 500,
        csvLog: CSVLog? = nil,
        flushInterval: Double = 2,
        retention: Double? = 14 * 86_400,
        logger: Logger
    ) {
        self.flushInterval = flushInterval
        self.retention = retention
        self.site = site
        self.mode = mode
        self.store = store
        self.source = source
        self.batchSize = batchSize
        self.csvLog = csvLog
        self.logger = logger
    }

    /// What a run did.
    public struct Report: Sendable {
        public var counts: RangingCounts
        public var written: Int
        public var seconds: Double
        public var interrupted: Bool
    }

    /// Runs until the source ends, or until the task is cancelled (SIGTERM, SIGINT); either way
    /// every window is closed and written before it returns.
    public func run() async throws -> Report {
        let started = DispatchTime.now().uptimeNanoseconds
        var ranger = try Ranger(site: site, mode: mode)
        if let csvLog { ranger.onReading = { csvLog.reading($0, smoothed: $1, distance: $2) } }
        try writeAnchors()
        // Every index of the product, so that the exposure engine's covering indexes are built as
        // interactions are written, not all at once at the first report.
        try Indexes.declare(in: store)
        logger.info(
            "ranging",
            metadata: ["source": "\(source.name)", "mode": "\(mode)", "site": "\(site.name)"]
        )

        var pending: [InteractionSummary] = []
        var written = 0
        var interrupted = false
        var lastWrite = Date().timeIntervalSince1970
        let live = !source.isReplay
        var nextPurge = 0.0
        do {
            for try await batch in source.batches() {
                for advert in batch { ranger.add(advert, into: &pending) }
                let now = live ? Date().timeIntervalSince1970 : 0
                if live { ranger.expire(now: now, into: &pending) }
                if pending.count >= batchSize || (live && !pending.isEmpty && now - lastWrite >= flushInterval) {
                    written += try write(pending)
                    pending.removeAll(keepingCapacity: true)
                    lastWrite = now
                }
                if live, let retention, now >= nextPurge {
                    nextPurge = now + 3600
                    purge(olderThan: now - retention)
                }
                progress.update(ranger, written: written, wroteAt: live ? lastWrite : nil)
                if Task.isCancelled {
                    interrupted = true
                    break
                }
            }
        } catch is CancellationError {
            interrupted = true
        }
        if Task.isCancelled { interrupted = true }
        source.stop(timeout: .seconds(1))
        // What is buffered is flushed on every way out but a failed write.
        ranger.closeAll(into: &pending)
        written += try write(pending)
        progress.update(ranger, written: written, wroteAt: Date().timeIntervalSince1970)
        try csvLog?.close()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        return Report(counts: ranger.counts, written: written, seconds: seconds, interrupted: interrupted)
    }

    /// Deletes interactions that started before `cutoff`, and the change log as old. A failure
    /// is logged, not fatal: ranging goes on and the next hour tries again.
    func purge(olderThan cutoff: Double) {
        do {
            let n = try store.purge(
                collectionGroup: Interaction.collectionID,
                field: Interaction.Field.start,
                olderThan: Timestamp(seconds: cutoff)
            )
            try store.pruneChanges(olderThan: Timestamp(seconds: cutoff))
            if n > 0 { logger.notice("purged interactions past the retention period", metadata: ["count": "\(n)"]) }
        } catch {
            logger.error("purge failed; retrying in an hour", metadata: ["error": "\(error)"])
        }
    }

    /// `beacons/{key}` for every anchor of the map, merged so that other fields stay.
    func writeAnchors() throws {
        var batch = WriteBatch()
        for anchor in site.anchors {
            batch.set(try Collections.beacon(anchor.key), Beacon(anchor, of: site).data, merge: true)
        }
        try store.commit(batch)
    }

    /// Writes summaries as interaction documents in one transaction.
    func write(_ summaries: [InteractionSummary]) throws -> Int {
        guard !summaries.isEmpty else { return 0 }
        var batch = WriteBatch()
        for s in summaries {
            batch.set(try Collections.interactions(at: s.anchorKey).newDocument(), Interaction(s).data)
        }
        try store.commit(batch)
        return summaries.count
    }

    /// An interaction document: DESIGN.md's fields, plus the least distance and the anchor's key.
    public static func document(_ s: InteractionSummary) -> DocumentData { Interaction(s).data }
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

    func update(_ ranger: Ranger, written: Int, wroteAt: Double?) {
        let (counts, inRange) = (ranger.counts, ranger.windows.openCount)
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

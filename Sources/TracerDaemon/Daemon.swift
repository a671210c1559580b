import Foundation
import Logging
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

    /// The indexes the daemon's and the admins' queries use.
    public static let indexes = [
        IndexDefinition(collectionID: "interactions", "start"),
        IndexDefinition(collectionID: "interactions", scope: .collectionGroup, "deviceId", "start"),
        IndexDefinition(collectionID: "interactions", scope: .collectionGroup, "start"),
        // The exposure engine's presence index (ExposureEngine.presenceIndex): declared here so
        // that it is built as interactions are written, not all at once at the first report.
        IndexDefinition(collectionID: "interactions", "start", "deviceId", "end", "distance"),
        // And its whereabouts index (ExposureEngine.whereaboutsIndex), for room attribution.
        IndexDefinition(collectionID: "interactions", scope: .collectionGroup, "deviceId", "start", "end", "distance"),
    ]

    /// Runs until the source ends, or until the task is cancelled (SIGTERM, SIGINT); either way
    /// every window is closed and written before it returns.
    public func run() async throws -> Report {
        let started = DispatchTime.now().uptimeNanoseconds
        var ranger = try Ranger(site: site, mode: mode)
        if let csvLog { ranger.onReading = { csvLog.reading($0, smoothed: $1, distance: $2) } }
        try writeAnchors()
        for index in Self.indexes { try store.declareIndex(index) }
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
                collectionGroup: "interactions",
                field: FieldPath("start"),
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
            let room = site.room(anchor.room)
            var data: DocumentData = [
                "kind": .string(anchor.kind.rawValue), "room": .string(anchor.room),
                "name": .string(
                    anchor.kind == .kiosk ? "\(room?.name ?? anchor.room) kiosk" : "\(room?.name ?? anchor.room) beacon"
                ),
                "position": [.double(anchor.position.x), .double(anchor.position.y)],
                "site": .string(site.name), "ts": .serverTimestamp,
            ]
            if let id = anchor.identity {
                data["uuid"] = .string(id.uuid.description)
                data["major"] = .integer(Int64(id.major))
                data["minor"] = .integer(Int64(id.minor))
            }
            if let p = anchor.measuredPower { data["measuredPower"] = .integer(Int64(p)) }
            batch.set(try DocumentPath("beacons/\(anchor.key)"), data, merge: true)
        }
        try store.commit(batch)
    }

    /// Writes summaries as interaction documents in one transaction.
    func write(_ summaries: [InteractionSummary]) throws -> Int {
        guard !summaries.isEmpty else { return 0 }
        var batch = WriteBatch()
        for s in summaries {
            let collection = try CollectionPath("beacons/\(s.anchorKey)/interactions")
            batch.set(collection.newDocument(), Self.document(s))
        }
        try store.commit(batch)
        return summaries.count
    }

    /// An interaction document: DESIGN.md's fields, plus the least distance and the anchor's key.
    public static func document(_ s: InteractionSummary) -> DocumentData {
        [
            "deviceId": .string(s.deviceID),
            "anchor": .string(s.anchorKey),
            "beacon": [
                "uuid": .string(s.beacon.uuid.description), "major": .integer(Int64(s.beacon.major)),
                "minor": .integer(Int64(s.beacon.minor)),
            ],
            "proximity": .string(s.proximity.rawValue),
            "proximityCode": .integer(Int64(s.proximity.code)),
            "distance": s.distance.map { .double(($0 * 100).rounded() / 100) } ?? .null,
            "minDistance": s.minDistance.map { .double(($0 * 100).rounded() / 100) } ?? .null,
            "rssi": .double((s.rssi * 10).rounded() / 10),
            "measuredPower": .integer(Int64(s.measuredPower.rounded())),
            "start": .timestamp(Timestamp(seconds: s.start)),
            "end": .timestamp(Timestamp(seconds: s.end)),
            "samples": .integer(Int64(s.samples)),
            "testResult": false,
            "ts": .serverTimestamp,
        ]
    }
}

/// The daemon's counters as it runs, readable from other threads.
public final class DaemonProgress: @unchecked Sendable {
    public struct Snapshot: Sendable {
        public var counts = RangingCounts()
        /// (device, anchor) pairs with an open window.
        public var inRange = 0
        public var written = 0
        /// Unix seconds of the last write, once there has been one.
        public var lastWrite: Double?
    }

    private let lock = NSLock()
    private var current = Snapshot()

    public var snapshot: Snapshot {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    func update(_ ranger: Ranger, written: Int, wroteAt: Double?) {
        lock.lock()
        current.counts = ranger.counts
        current.inRange = ranger.windows.openCount
        if written != current.written || current.lastWrite == nil, let wroteAt, written > 0 {
            current.lastWrite = wroteAt
        }
        current.written = written
        lock.unlock()
    }
}

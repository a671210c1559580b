import Foundation
import TracerBadges
import TracerModel
import TracerRanging
import TracerSite
import TracerStore

/// One run of the daemon: the ranging and what it has not written yet, fed a batch of adverts at
/// a time. `Daemon.run` owns the loop and its ways out; this owns what happens to each batch.
struct DaemonRun {
    let daemon: Daemon
    var site: Site
    var ranger: Ranger
    /// The kiosk's receiver offset as stored last (nil until it has one).
    var stored: Double?
    /// Closed windows not yet written.
    var pending: [InteractionSummary] = []
    /// The counts of the rangers before a site change.
    var counts = RangingCounts()
    var written = 0
    var lastWrite = Date().timeIntervalSince1970
    var nextPurge = 0.0
    var badgeRevision = -1
    let live: Bool

    /// The ranging under the daemon's site, seeded with the kiosk's stored offset, the map's
    /// anchors written and every index of the product declared (so the exposure engine's covering
    /// indexes are built as interactions are written, not all at once at the first report).
    init(_ daemon: Daemon) async throws {
        self.daemon = daemon
        let site = daemon.site
        self.site = site
        live = !daemon.source.isReplay
        ranger = try Ranger(site: site, mode: daemon.mode)
        stored = try await daemon.store.writing { db in
            try daemon.writeAnchors(site, in: db)
            try Indexes.declare(in: db)
            return try daemon.storedCalibration(in: db, site: site)
        }
        prepareRanger()
    }

    /// The CSV log and the stored offset on a new ranger.
    private mutating func prepareRanger() {
        if let stored { ranger.seed(offset: stored) }
        if let csvLog = daemon.csvLog { ranger.onReading = { csvLog.reading($0, smoothed: $1, distance: $2) } }
    }

    /// One batch: a newly published site taken first, the badges' table for the batch's time,
    /// the adverts ranged, what has ended written when it is due, and the hourly purge.
    mutating func take(_ batch: [Advert]) async throws {
        if let newer = daemon.takeNewerSite() { try await change(to: newer) }
        if let offset = daemon.takeFollowed(under: site) {
            // Stored by `Daemon.follow` already; a new site's ranging starts from it too.
            stored = offset
            ranger.seed(offset: offset)
        }
        if let badges = daemon.badges, site.badgeUUID != nil, let first = batch.first {
            let t = live ? Date().timeIntervalSince1970 : first.time
            let epoch = RotatingID.epochStart(t, bits: site.badgeEpochBits)
            if epoch != ranger.badges?.epochStart || badges.resolver.revision != badgeRevision {
                if !live { await badges.prepare?(t) }
                badgeRevision = badges.resolver.revision
                ranger.badges = badges.resolver.table(at: t)
            }
        }
        for advert in batch { ranger.add(advert, into: &pending) }
        let now = live ? Date().timeIntervalSince1970 : 0
        if live { ranger.expire(now: now, into: &pending) }
        // A kiosk in an empty room still writes what it heard of the others.
        let due = !pending.isEmpty || ranger.hasClosedHearings
        if pending.count >= daemon.batchSize || (live && due && now - lastWrite >= daemon.flushInterval) {
            try await writePending()
            lastWrite = now
        }
        if live, let retention = daemon.retention, now >= nextPurge {
            nextPurge = now + 3600
            let daemon = self.daemon
            try await daemon.store.writing { db in daemon.purge(olderThan: now - retention, in: db) }
        }
        daemon.progress.update(ranger, before: counts, written: written, wroteAt: live ? lastWrite : nil)
    }

    /// What was ranged under the old site is closed and written under it; the ranging goes on
    /// under the new one.
    private mutating func change(to newer: Site) async throws {
        ranger.closeAll(into: &pending)
        try await writePending(calibration: false)
        counts.add(ranger.counts)
        site = newer
        ranger = try Ranger(site: site, mode: daemon.mode)
        badgeRevision = -1
        // A calibration made under another offset of the map's for this kiosk is set aside.
        let daemon = self.daemon
        stored = try await daemon.store.writing { db in try daemon.storedCalibration(in: db, site: newer) }
        prepareRanger()
        daemon.logger.notice("ranging under the newly published site", metadata: ["site": "\(site.name)"])
    }

    /// Every open window closed and everything buffered written: the run's last write.
    mutating func finish() async throws {
        ranger.closeAll(into: &pending)
        try await writePending()
        daemon.progress.update(ranger, before: counts, written: written, wroteAt: Date().timeIntervalSince1970)
    }

    /// Closed windows, hearings and a moved calibration in one transaction. The windows stay
    /// pending until it commits, so that a failed write leaves them for the run's last one.
    private mutating func writePending(calibration: Bool = true) async throws {
        let update = calibration ? daemon.calibrationUpdate(ranger, stored: &stored) : nil
        written += try await daemon.write(pending, calibration: update, hearings: ranger.drainHearings())
        pending.removeAll(keepingCapacity: true)
    }

    /// The windows that would be lost if nothing more could be written: those closed and not
    /// written, and those still open.
    var unwritten: Int { pending.count + ranger.windows.openCount }

    func report(seconds: Double, interrupted: Bool) -> Daemon.Report {
        var counts = self.counts
        counts.add(ranger.counts)
        return Daemon.Report(counts: counts, written: written, seconds: seconds, interrupted: interrupted)
    }
}

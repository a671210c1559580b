import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TracerExposure
import TracerModel
import TracerStore

/// The site server forgets on time: every `every` (30 s), what is past the site's retention
/// (`settings: retentionDays`, default 14) is deleted from the site's store, on SQLite and
/// PostgreSQL alike, so nothing outlives its expiry by more than a minute (Firestore's TTL takes
/// up to a day):
///
/// - interactions, by their start (`/v1/sync` does not store one already past it);
/// - exposures, by their start, the devices' status recomputed (a person exposed 15 days ago
///   is clear again);
/// - push subscriptions their browser has not renewed within it (the person's page renews its
///   subscription each time it is opened; one that keeps failing goes after 24 h: `PushDelivery`);
/// - the store's change log, which names what changed (hourly);
/// - the hold a denied report puts on a device's next reports (`SelfReportDesk.retention`).
///
/// Every server of a site runs it; the deletions are idempotent, so two at once only share work.
public final class SitePurge: Service, Sendable {
    let store: DocumentStore
    let engine: ExposureEngine
    public let retention: Double
    public let every: Duration
    let clock: @Sendable () -> Date
    let logger: Logger

    public init(
        store: DocumentStore,
        engine: ExposureEngine,
        retention: Double,
        every: Duration = .seconds(30),
        clock: @escaping @Sendable () -> Date = { Date() },
        logger: Logger
    ) {
        self.store = store
        self.engine = engine
        self.retention = retention
        self.every = every
        self.clock = clock
        self.logger = logger
    }

    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                while !Task.isCancelled {
                    do {
                        let purged = try await self.purgeOnce()
                        if purged.total > 0 {
                            self.logger.notice(
                                "purged what is past the site's retention",
                                metadata: [
                                    "interactions": "\(purged.interactions)", "exposures": "\(purged.exposures)",
                                    "subscriptions": "\(purged.subscriptions)",
                                    "retention.days": "\(self.retention / 86_400)",
                                ]
                            )
                        }
                    } catch is CancellationError {
                        throw CancellationError()
                    } catch {
                        // A store gone for a while: the next round tries again.
                        self.logger.error("purge failed; trying again", metadata: ["error": "\(error)"])
                    }
                    try await Task.sleep(for: self.every)
                }
            }
        } catch is CancellationError {}
    }

    private let lastPrune = Mutex<Double>(0)

    private func pruneDue() -> Bool {
        let now = clock().timeIntervalSince1970
        return lastPrune.withLock { last in
            guard now - last >= 3600 else { return false }
            last = now
            return true
        }
    }

    public struct Purged: Sendable, Equatable {
        public var interactions = 0
        public var exposures = 0
        public var subscriptions = 0
        public var total: Int { interactions + exposures + subscriptions }
    }

    /// One round: everything that began before now minus the retention.
    public func purgeOnce() async throws -> Purged {
        let cutoff = Timestamp(seconds: clock().timeIntervalSince1970 - retention)
        let engine = self.engine
        return try await store.writing { db in
            var purged = Purged()
            try Indexes.declare(in: db)
            purged.interactions = try db.purge(
                collectionGroup: Interaction.collectionID,
                field: Interaction.Field.start,
                olderThan: cutoff
            )
            purged.exposures = try engine.expire(olderThan: cutoff, in: db)
            // What kiosks heard of each other: no person in it, kept as long as the rest.
            try db.purge(collectionGroup: Hearing.collectionID, field: Hearing.Field.end, olderThan: cutoff)
            purged.subscriptions = try db.purge(
                collectionGroup: "push",
                field: "createdAt",
                olderThan: cutoff
            )
            // The change log names what changed (paths, not data): trimmed hourly, as its scan
            // by time reads the whole log.
            if self.pruneDue() { try db.pruneChanges(olderThan: cutoff) }
            return purged
        }
    }
}

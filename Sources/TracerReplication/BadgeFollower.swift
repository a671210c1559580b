import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TracerAPI
import TracerBadges
import TracerModel
import TracerStore

/// What a daemon resolves rotating badges with, kept current:
///
/// - on a store that holds the site's badge keys (the site server's, or a simulated site's), the
///   keys, read again when a badge is issued, revoked or rekeyed;
/// - on a kiosk, days of ids from its site server (`GET /v1/badges/ids`), kept in the kiosk's
///   store so that it starts offline: today and the `BadgeIDDay.horizon − 1` days after (a
///   weekend without a network), asked again every `interval` (304 until a badge changes), and
///   the days of a replay's times before they are ranged.
public final class BadgeFollower: Service, Sendable {
    public let resolver: BadgeResolver
    let upstream: Upstream?
    let store: DocumentStore
    let interval: Duration
    let logger: Logger
    let clock: @Sendable () -> Double
    struct State {
        var etags: [UInt32: String] = [:]
        var version: Int64?
        var said = Set<String>()
        /// Days asked for in this run: a replay asks once for each day it ranges (304 when the
        /// day held is current), so that a badge revoked since is not resolved from an old copy.
        var asked = Set<UInt32>()
    }
    let state = Mutex(State())
    let reloading = Mutex(())

    init(
        resolver: BadgeResolver,
        upstream: Upstream?,
        store: DocumentStore,
        interval: Duration,
        logger: Logger,
        clock: @escaping @Sendable () -> Double
    ) {
        self.resolver = resolver
        self.upstream = upstream
        self.store = store
        self.interval = interval
        self.logger = logger
        self.clock = clock
    }

    /// On a store with the site's badge keys: nil when it has none.
    public static func keys(
        store: DocumentStore,
        bits: Int,
        interval: Duration = .seconds(30),
        logger: Logger
    ) async throws -> BadgeFollower? {
        guard let material = try await store.reading({ db in try BadgeRegistry.material(in: db) }) else { return nil }
        let follower = BadgeFollower(
            resolver: BadgeResolver(.keys(material.badges, version: material.version), bits: bits),
            upstream: nil,
            store: store,
            interval: interval,
            logger: logger,
            clock: { Date().timeIntervalSince1970 }
        )
        follower.state.withLock { $0.version = material.version }
        // This epoch's table now, before the daemon's first advert.
        _ = follower.resolver.table(at: follower.clock())
        return follower
    }

    /// On a kiosk: the days its store holds now, followed from `upstream`.
    public static func kiosk(
        upstream: Upstream,
        store: DocumentStore,
        bits: Int,
        interval: Duration = .seconds(30),
        logger: Logger,
        clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) async throws -> BadgeFollower {
        let days = try await store.reading { db in try BadgeIDDays.load(from: db) }
        let follower = BadgeFollower(
            resolver: BadgeResolver(.days(days), bits: bits),
            upstream: upstream,
            store: store,
            interval: interval,
            logger: logger,
            clock: clock
        )
        follower.state.withLock { s in
            for d in days { s.etags[d.day] = BadgeIDDay.etag(version: d.version, bits: d.bits, day: d.day) }
            // The newest version held: a day from a newer one means every day held is asked again.
            s.version = days.map(\.version).max()
        }
        _ = follower.resolver.table(at: clock())
        return follower
    }

    /// The days a live kiosk holds: today and the horizon's.
    func wanted(now: Double) -> [UInt32] {
        let today = BadgeIDDay.day(of: now)
        return (0..<BadgeIDDay.horizon).map { today + UInt32($0) * 86_400 }
    }

    /// Before a replay's epoch at `time` is ranged: the days its table needs (a kiosk's).
    @Sendable public func prepare(_ time: Double) async {
        guard upstream != nil else { return }
        let span = Double(2 << resolver.bits)
        let days = Set([time - span, time, time + span].map(BadgeIDDay.day(of:)))
        let new = state.withLock { s in days.filter { s.asked.insert($0).inserted }.sorted() }
        if !new.isEmpty { await refresh(new) }
    }

    /// Asks the server for `days` (304 for those unchanged), keeps what changed, and gives the
    /// resolver the days held. A day from an older version is asked again.
    func refresh(_ days: [UInt32]) async {
        guard let upstream else { return }
        var changed = false
        var newer = false
        for day in days {
            let etag = state.withLock { $0.etags[day] }
            do {
                guard let (got, tag) = try await upstream.badgeDay(day, etag: etag) else { continue }
                try await store.writing { db in try db.set(BadgeIDDays.path(day), BadgeIDDays.data(got)) }
                let older = state.withLock { s in
                    s.etags[day] = tag
                    defer { s.version = max(s.version ?? got.version, got.version) }
                    return s.version.map { $0 < got.version } ?? false
                }
                newer = newer || older
                changed = true
            } catch let e as SyncError where e.code == .notFound {
                once("none", "the site server has no badges yet (\(e.message)); rotating badges are not resolved here")
                return
            } catch let e as SyncError where e.code == .unavailable {
                once("away", "badge ids: the site server is away (\(e.message)); resolving with the days kept here")
                return
            } catch {
                once("\(error)", "badge ids for \(BadgeIDDay.name(day)) cannot be used: \(error)")
            }
        }
        _ = state.withLock { $0.said.remove("away") }
        guard changed else { return }
        if newer {
            // A badge changed (issued, revoked, rekeyed): every day held is asked again.
            let rest = state.withLock { s in s.etags.keys.filter { !days.contains($0) } }
            if !rest.isEmpty { await refresh(Array(rest)) }
        }
        await reload()
    }

    /// The resolver gets the days the store holds. One reload at a time: the days are read and
    /// handed over under one lock, so that a reload that read the store earlier (the live loop's,
    /// beside a replay's) cannot hand over older days after a newer reload did.
    func reload() async {
        do {
            // On the reader thread: the lock is never held on a cooperative thread.
            try await store.reading { db in
                try self.reloading.withLock { _ in
                    self.resolver.replace(.days(try BadgeIDDays.load(from: db)), around: self.clock())
                }
            }
        } catch {
            logger.error("the badge ids kept here cannot be read: \(error)")
        }
    }

    /// Says `message` once, until the condition `key` names passes.
    func once(_ key: String, _ message: String) {
        let first = state.withLock { $0.said.insert(key).inserted }
        if first { logger.warning("\(message)") }
    }

    /// A kiosk's days: asked again every `interval`; days older than 14 days are deleted. A
    /// store with keys: read again when their version moves.
    public func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            if upstream != nil {
                let now = clock()
                await refresh(wanted(now: now))
                await forget(before: BadgeIDDay.day(of: now) - 14 * 86_400)
            } else {
                await follow()
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.interval) }
        }
    }

    /// A store with keys: the badges again when their version moved.
    func follow() async {
        do {
            let known = state.withLock { $0.version }
            let changed = try await store.reading { db in
                let version = try BadgeRegistry.version(in: db)
                return version == known ? nil : try BadgeRegistry.material(in: db)
            }
            guard let material = changed else { return }
            state.withLock { $0.version = material.version }
            resolver.replace(.keys(material.badges, version: material.version), around: clock())
            logger.notice("the site's badges changed: resolving \(material.badges.count) badges")
        } catch {
            logger.error("the site's badges cannot be read: \(error)")
        }
    }

    /// Deletes the days before `cutoff`.
    func forget(before cutoff: UInt32) async {
        let old = resolver.days.filter { $0 < cutoff }
        guard !old.isEmpty else { return }
        do {
            try await store.writing { db in
                for day in old { try db.delete(BadgeIDDays.path(day)) }
            }
            state.withLock { s in for day in old { s.etags[day] = nil } }
            await reload()
        } catch {
            logger.error("old badge ids could not be deleted: \(error)")
        }
    }
}

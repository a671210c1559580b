import Logging
import ServiceLifecycle
import TracerAPI
import TracerModel
import TracerStore

/// A kiosk's copy of the site: fetched from the site server (`GET /v1/site`), kept in the
/// kiosk's own store (so that it starts offline), and followed: a newly published site reaches
/// the running daemon within `interval`, without a restart.
public struct SiteFollower: Service {
    let upstream: Upstream
    let store: DocumentStore
    let interval: Duration
    let logger: Logger
    let changed: @Sendable (PublishedSite) async -> Void

    public init(
        upstream: Upstream,
        store: DocumentStore,
        interval: Duration = .seconds(30),
        logger: Logger,
        changed: @escaping @Sendable (PublishedSite) async -> Void
    ) {
        self.upstream = upstream
        self.store = store
        self.interval = interval
        self.logger = logger
        self.changed = changed
    }

    /// The site to start with: the server's, kept locally; else (the server away) the copy kept
    /// from before; else it waits for the server, saying so once. Nil only on shutdown.
    public static func initial(upstream: Upstream, store: DocumentStore, logger: Logger) async throws -> PublishedSite?
    {
        var said = false
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                if let (source, file, _, trustList) = try await upstream.site(etag: nil) {
                    let site = try PublishedSite(source: source, file: file, served: true, trustList: trustList)
                    try await store.writing { db in try site.publish(to: db) }
                    return site
                }
            } catch let e as SyncError where e.code == .unavailable {
                if let kept = try await store.reading({ db in try PublishedSite.load(from: db) }) {
                    logger.warning(
                        "the site server is unreachable (\(e.message)): starting with the site kept from \(kept.publishedAt?.iso8601Seconds ?? "before")"
                    )
                    return kept
                }
                if !said {
                    logger.warning(
                        "waiting for the site from \(upstream.base) (\(e.message)); no copy is kept here yet"
                    )
                    said = true
                }
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(2)) }
        }
        return nil
    }

    public func run() async throws {
        var digest = try await store.reading { db in try PublishedSite.load(from: db)?.digest }
        while true {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            if Task.isShuttingDownGracefully || Task.isCancelled { return }
            do {
                guard let (source, file, new, trustList) = try await upstream.site(etag: digest) else { continue }
                let site = try PublishedSite(source: source, file: file, served: true, trustList: trustList)
                try await store.writing { db in try site.publish(to: db) }
                digest = new
                logger.notice("the site server published a new site", metadata: ["site.digest": "\(new.prefix(12))"])
                await changed(site)
            } catch let e as SyncError where e.code == .unavailable {
                continue  // the replicator says when the server is away
            } catch {
                logger.error("the published site cannot be used here: \(error)")
            }
        }
    }
}

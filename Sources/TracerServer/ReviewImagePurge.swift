import Foundation
import Logging
import ServiceLifecycle
import TracerReports
import TracerStore

/// Deletes the review images no report waits on any more, every `every`, while the server runs:
/// past their 72 hours (the reports nobody decided in time), and decided by another server of the
/// site. A decision deletes the deciding server's image at once; with several `tracer serve` on
/// one PostgreSQL store, the server that received the image deletes its copy here, within `every`.
public struct ReviewImagePurge: Service {
    let desk: SelfReportDesk
    let store: DocumentStore
    public let every: Duration
    let logger: Logger

    public init(api: API, every: Duration = .seconds(30), logger: Logger) {
        self.desk = api.desk
        self.store = api.store
        self.every = every
        self.logger = logger
    }

    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                while !Task.isCancelled {
                    let desk = self.desk
                    let n = try await store.reading { db in desk.sweepImages(in: db) }
                    if n > 0 {
                        logger.notice(
                            "review images deleted: decided, or past their time",
                            metadata: ["count": "\(n)", "directory": "\(desk.images?.directory ?? "")"]
                        )
                    }
                    try await Task.sleep(for: every)
                }
            }
        } catch is CancellationError {}
    }
}

import Foundation
import Logging
import ServiceLifecycle
import TracerReports

/// Deletes review images past their 72 hours, every `every` seconds, while the server runs (a
/// decision deletes its image at once; this is for the reports nobody decided in time).
public struct ReviewImagePurge: Service {
    public let images: ReviewImages
    public let every: Duration
    let logger: Logger

    public init(images: ReviewImages, every: Duration = .seconds(600), logger: Logger) {
        self.images = images
        self.every = every
        self.logger = logger
    }

    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                while !Task.isCancelled {
                    let n = images.purge()
                    if n > 0 {
                        logger.notice(
                            "review images past their time deleted",
                            metadata: ["count": "\(n)", "directory": "\(images.directory)"]
                        )
                    }
                    try await Task.sleep(for: every)
                }
            }
        } catch is CancellationError {}
    }
}

import Logging
import ServiceLifecycle
import TracerAPI

/// A kiosk following the site server's fit of its own receiver (`GET /v1/site/calibration?
/// exponent=map`): every `interval` (±10%, so that kiosks restarted together do not ask
/// together), the kiosk's offset, its standard error and whether the server names it as moved
/// go to `offered`, which judges them (`Daemon.follow`). A server away, or with no fit yet,
/// is asked again at the next interval: the kiosk ranges on with what it has.
public struct FitFollower: Service {
    let upstream: Upstream
    let kiosk: String
    let interval: Duration
    let logger: Logger
    let offered: @Sendable (_ offset: Double, _ uncertainty: Double, _ moved: Bool) async -> Void

    public init(
        upstream: Upstream,
        kiosk: String,
        interval: Duration = .seconds(600),
        logger: Logger,
        offered: @escaping @Sendable (_ offset: Double, _ uncertainty: Double, _ moved: Bool) async -> Void
    ) {
        self.upstream = upstream
        self.kiosk = kiosk
        self.interval = interval
        self.logger = logger
        self.offered = offered
    }

    public func run() async throws {
        // The first ask a random part of an interval after the start.
        var wait = interval * Double.random(in: 0.1..<1)
        while true {
            let sleep = wait
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: sleep) }
            if Task.isShuttingDownGracefully || Task.isCancelled { return }
            wait = interval * Double.random(in: 0.9..<1.1)
            do {
                guard let fit = try await upstream.siteCalibration() else {
                    logger.debug("the site server has no fit of the kiosks yet")
                    continue
                }
                guard let mine = fit.kiosks.first(where: { $0.key == kiosk }), let offset = mine.receiverOffset,
                    let uncertainty = mine.uncertainty
                else {
                    logger.debug("the site server's fit has nothing of this kiosk")
                    continue
                }
                await offered(offset, uncertainty, fit.changes.contains { $0.key == kiosk })
            } catch let e where e.code == .unavailable {
                continue  // the replicator says when the server is away
            } catch {
                logger.warning("the site server's fit of the kiosks cannot be read: \(error.message)")
            }
        }
    }
}

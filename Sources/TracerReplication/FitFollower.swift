import Logging
import ServiceLifecycle
import TracerAPI
import TracerModel
import TracerStore

/// A kiosk following the site server's fit of its own receiver (`GET /v1/site/calibration?
/// exponent=map`): every `interval` (±10%, so that kiosks restarted together do not ask
/// together), what the server's fit says of this kiosk (`SiteFit`: its offset and standard
/// error, the shift when the server names it as moved, whether it names any kiosk) goes to
/// `offered`, which judges it (`Daemon.follow`). A server away, or with no fit yet, is asked again at the next interval:
/// the kiosk ranges on with what it has.
public struct FitFollower: Service {
    let upstream: Upstream
    let kiosk: String
    let interval: Duration
    let logger: Logger
    let offered: @Sendable (SiteFit) async -> Void

    public init(
        upstream: Upstream,
        kiosk: String,
        interval: Duration = .seconds(600),
        logger: Logger,
        offered: @escaping @Sendable (SiteFit) async -> Void
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
                guard let to = Timestamp(parsing: fit.to) else {
                    logger.warning("the site server's fit of the kiosks has no time it is up to: '\(fit.to)'")
                    continue
                }
                let moved = fit.changes.first { $0.key == kiosk }
                await offered(
                    SiteFit(
                        offset: offset,
                        uncertainty: uncertainty,
                        shift: moved.map { ($0.shift, $0.uncertainty) },
                        siteMoved: !fit.changes.isEmpty,
                        at: to.seconds
                    )
                )
            } catch let e where e.code == .unavailable {
                continue  // the replicator says when the server is away
            } catch {
                logger.warning("the site server's fit of the kiosks cannot be read: \(error.message)")
            }
        }
    }
}

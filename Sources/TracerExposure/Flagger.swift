import Logging
import ServiceLifecycle
import TracerModel
import TracerStore

/// Flags every accepted report as it arrives (from any kiosk or the API): every report at start
/// (a re-run changes nothing), then each one that is added or changes, until shut down. One
/// flagger runs per store: a second one waits, and takes over (flagging every report again, which
/// changes nothing already flagged) when the first dies. A report that the desk recording it is
/// flagging too (a self-report, a review's approval) is decided once between them, and one
/// flagged within the engine's `claimLife` is not decided again (`flag(reportID:on:sharing:)`).
public struct Flagger: Service {
    public let store: DocumentStore
    public let engine: ExposureEngine
    let logger: Logger
    /// Told of each report whose exposures changed: its id and what flagging did.
    let flagged: @Sendable (String, FlagResult) -> Void

    public init(
        store: DocumentStore,
        engine: ExposureEngine,
        logger: Logger,
        flagged: @escaping @Sendable (String, FlagResult) -> Void = { _, _ in }
    ) {
        self.store = store
        self.engine = engine
        self.logger = logger
        self.flagged = flagged
    }

    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                try await store.whileSoleInstance(of: "flagger", logger: logger) { try await flagArriving() }
            }
        } catch is CancellationError {}
    }

    func flagArriving() async throws {
        for try await snap in store.snapshots(Query(collection: Collections.reports), from: .now) {
            for change in snap.changes where change.kind != .removed {
                guard Report.is(change.document, .accepted) else { continue }
                let id = change.document.id
                do {
                    let (engine, store) = (self.engine, self.store)
                    let r = try await engine.flag(reportID: id, on: store, sharing: true)
                    if r.skipped > 0 {
                        logger.warning(
                            "skipped \(r.skipped) interaction windows flagging cannot use (unreadable, or times or distance out of range); the rest flagged",
                            metadata: ["report.id": "\(id)", "skipped": "\(r.skipped)"]
                        )
                    }
                    if r.changed > 0 { flagged(id, r) }
                } catch {
                    // One report's failure is not the others': it is logged, and flagged
                    // again when it changes or the flagger restarts.
                    logger.error("flagging failed", metadata: ["report.id": "\(id)", "error": "\(error)"])
                }
            }
        }
    }
}

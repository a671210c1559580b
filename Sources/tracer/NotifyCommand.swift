import ArgumentParser
import Foundation
import Logging
import TracerExposure
import TracerModel
import TracerReports
import TracerStore

/// `tracer notify --webhook URL`: every status change POSTed, at least once, across restarts.
struct NotifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notify",
        abstract: "POST every device status change to a webhook, at least once, resuming after a restart.",
        discussion: """
            Each change of a device's status, risk or exposure count is POSTed as JSON: {"deviceId", "status", \
            "risk", "exposureCount", "updatedAt", "token"}. A failed POST (no answer, or not 2xx) is retried \
            with backoff (0.5 s doubling to 30 s) until it succeeds; nothing after it is sent first. The store's \
            change token of the last delivered change is kept in --state, so a restarted notifier resumes \
            where it stopped and misses nothing (a receiver may see a change twice: key on deviceId and token).
            """
    )

    @OptionGroup var options: StoreOptions
    @Option(help: "The receiver: an http:// or https:// URL.") var webhook: String
    @Option(help: "Trust this CA's certificate (PEM) for an https:// webhook, instead of the system's.")
    var caFile: String?
    @Option(help: "Where the last delivered token is kept (default: beside the store, one per webhook).")
    var state: String?

    /// Beside a SQLite store; for a PostgreSQL one, in the data directory, named by the
    /// database and the webhook.
    var defaultState: String {
        if options.isPostgres {
            let name = "notify-" + String(Digest.sha256Hex(options.display + " " + webhook).prefix(12)) + ".state"
            return (StoreOptions.dataDirectory as NSString).appendingPathComponent(name)
        }
        return options.resolvedPath + ".notify-" + String(Digest.sha256Hex(webhook).prefix(12)) + ".state"
    }

    func run() async throws {
        let hook = try Webhook(webhook, caFile: caFile)
        let store = try options.open(mustExist: true)
        let notifier = Notifier(
            store: store,
            webhook: hook,
            statePath: state ?? defaultState,
            logger: Logger(label: "tracer.notify")
        )
        Output.line(
            "notifying \(webhook) of status changes"
                + (notifier.savedToken.map { " after change \($0)" }
                    ?? " (first run: every device's current status first)")
        )
        try await Services.run([notifier], logger: Logger(label: "tracer.notify"))
    }
}

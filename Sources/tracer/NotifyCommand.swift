import ArgumentParser
import Foundation
import Logging
import TracerExposure
import TracerModel
import TracerReports
@_spi(Blocking) import TracerStore

/// `tracer notify --webhook URL`: every status change POSTed, at least once, across restarts.
struct NotifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notify",
        abstract: "POST every device status change to a webhook, at least once, resuming after a restart.",
        discussion: """
            Each change of a device's status, risk or exposure count is POSTed as JSON: {"deviceId", "status", \
            "risk", "exposureCount", "updatedAt", "token"}. A failed POST (no answer, or not 2xx) is retried \
            with backoff (0.5 s doubling to 30 s) until it succeeds; nothing after it is sent first. The store's \
            change token of the last delivered change is kept in the store (or --state), so a restarted notifier \
            resumes where it stopped and misses nothing (a receiver may see a change twice: key on deviceId and \
            token). One notifier per webhook runs per store: another one started on the same store (on any \
            machine, for a PostgreSQL store) waits, and takes over within a second or two of the first one's end.
            """
    )

    @OptionGroup var options: StoreOptions
    @Option(help: "The receiver: an http:// or https:// URL.") var webhook: String
    @Option(help: "Trust this CA's certificate (PEM) for an https:// webhook, instead of the system's.")
    var caFile: String?
    @Option(
        help:
            "Keep the last delivered token in this file (default: in the store, where an instance on another machine finds it)."
    )
    var state: String?

    /// One notifier per webhook and store: the lock's name and the saved token's.
    var name: String { "notify-" + String(Digest.sha256Hex(webhook).prefix(12)) }

    /// Where versions before the token moved into the store kept it, beside a SQLite store.
    var legacyState: String? {
        options.isPostgres ? nil : options.resolvedPath + "." + name + ".state"
    }

    func run() async throws {
        // The client is shut down on every path: a wrong --store after it is made is one line.
        try await withShutdown({ try Webhook(webhook, caFile: caFile) }, { try await notify(through: $0) })
    }

    func notify(through hook: Webhook) async throws {
        let store = try options.open()
        let logger = Logger(label: "tracer.notify")
        let name = self.name
        if state == nil, try await store.reading({ db in try db.savedPosition(name) }) == nil, let legacy = legacyState,
            let text = try? String(contentsOfFile: legacy, encoding: .utf8),
            let token = Int64(text.trimmingCharacters(in: .whitespacesAndNewlines))
        {
            try await store.writing { db in try db.savePosition(name, token) }
            try? FileManager.default.removeItem(atPath: legacy)
            logger.notice("the saved token moved into the store", metadata: ["file": "\(legacy)"])
        }
        let notifier = Notifier(
            store: store,
            webhook: hook,
            position: state.map { .file($0) } ?? .store(name),
            role: name,
            logger: logger
        )
        let saved = try await notifier.savedToken()
        Output.line(
            "notifying \(webhook) of status changes"
                + (saved.map { " after change \($0)" }
                    ?? " (first run: every device's current status first)")
        )
        try await Services.run([notifier], logger: logger)
    }
}

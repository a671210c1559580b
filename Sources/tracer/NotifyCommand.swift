import ArgumentParser
import Foundation
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
    @Option(help: "The receiver: an http:// URL.") var webhook: String
    @Option(help: "Where the last delivered token is kept (default: beside the store, one per webhook).")
    var state: String?

    func run() async throws {
        let hook = try Webhook(webhook)
        let store = try options.open(mustExist: true)
        let statePath =
            state ?? options.resolvedPath + ".notify-" + String(Digest.sha256Hex(webhook).prefix(12)) + ".state"
        let saved = (try? String(contentsOfFile: statePath, encoding: .utf8)).flatMap {
            Int64($0.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        for sig in [SIGINT, SIGTERM] { signal(sig) { _ in Foundation.exit(0) } }
        Output.line(
            "notifying \(webhook) of status changes"
                + (saved.map { " after change \($0)" } ?? " (first run: every device's current status first)")
        )
        var last: [String: String] = [:]
        let start: ListenStart = saved.map { .after(token: $0) } ?? .now
        for try await snap in store.snapshots(Query(collection: Collections.devices), from: start) {
            for change in snap.changes where change.kind != .removed {
                let doc = change.document
                let d = DeviceStatus(doc)
                let key = "\(d.status)/\(d.risk)/\(d.exposureCount)"
                if last[doc.id] == key { continue }
                let body: Value = .map([
                    "deviceId": .string(doc.id), "status": .string(d.status.rawValue), "risk": .string(d.risk.rawValue),
                    "exposureCount": .integer(Int64(d.exposureCount)), "updatedAt": ExposureJSON.iso(doc["updatedAt"]),
                    "token": .integer(snap.token),
                ])
                try await deliver(ExposureJSON.json(body), to: hook)
                last[doc.id] = key
            }
            // Only once everything up to this token is delivered.
            try Self.save(snap.token, to: statePath)
        }
    }

    /// POSTs until a 2xx answer, backing off between attempts.
    func deliver(_ body: String, to hook: Webhook) async throws {
        var delay = 0.5
        while true {
            do {
                let code = try hook.post(body)
                if (200..<300).contains(code) { return }
                Output.error("\(hook.url) answered \(code); retrying in \(delay) s")
            } catch {
                Output.error("\(error); retrying in \(delay) s")
            }
            try await Task.sleep(for: .milliseconds(Int(delay * 1000)))
            delay = min(delay * 2, 30)
        }
    }

    static func save(_ token: Int64, to path: String) throws {
        let temporary = path + ".tmp"
        try "\(token)\n".write(toFile: temporary, atomically: false, encoding: .utf8)
        guard rename(temporary, path) == 0 else {
            throw ValidationError("cannot write the notifier's state to \(path): \(String(cString: strerror(errno)))")
        }
    }
}

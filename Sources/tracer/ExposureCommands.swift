import ArgumentParser
import Foundation
import Logging
import TracerAPI
import TracerAPIClient
import TracerColocation
import TracerExposure
import TracerModel
import TracerReplication
import TracerSite
import TracerStore

/// Exposure documents in the contract's JSON shape and as a table.
enum ExposureOutput {
    /// A time to the second, UTC: `2026-11-22 06:32:07Z` (from a timestamp, or its RFC 3339 text).
    static func second(_ v: Value?) -> String {
        guard let t = v?.timestampValue ?? v?.stringValue.flatMap({ Timestamp(parsing: $0) }) else { return "" }
        return t.iso8601Seconds.replacingOccurrences(of: "T", with: " ")
    }

    static func table(_ docs: [DocumentSnapshot]) -> [String] { table(exposures: docs.map(ExposureJSON.exposure)) }

    /// Exposures (from the store here, or the site server) as a table.
    static func table(exposures: [Responses.Exposure]) -> [String] {
        guard !exposures.isEmpty else { return ["no exposures"] }
        var rows = [["device", "report", "beacon", "from", "to", "separation", "together"]]
        for o in exposures {
            rows.append([
                o.deviceId, o.reportId, o.beaconKey, second(o.from.map(Value.string)), second(o.to.map(Value.string)),
                String(format: "%.1f–%.1f m", o.separation.min, o.separation.max), "\(o.overlapSeconds) s",
            ])
        }
        let widths = rows[0].indices.map { i in rows.map { $0[i].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        } + ["\(exposures.count) exposure\(exposures.count == 1 ? "" : "s")"]
    }
}

/// `tracer status --device ID`: what a device is told.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "A device's status (clear, exposed, positive), risk and exposures; --watch follows it live."
    )

    @OptionGroup var options: StoreOptions
    @Option(help: "The anonymous device id (against the site server with a device token: that token's device).")
    var device: String?
    @Flag(help: "Print each change as it happens, until interrupted.") var watch = false
    @Flag(help: "Print JSON: {\"deviceId\", \"status\", \"risk\", \"colocatedMinutes\", \"exposures\": [...]}.")
    var json = false
    @OptionGroup(title: "Against the site server") var serverOptions: ServerOptions

    func run() async throws {
        try await serverOptions.withSite { site in
            if let site { try await remote(site) } else { try await local() }
        }
    }

    func validate() throws {
        if device == nil && serverOptions.url == nil {
            throw ValidationError(
                "give --device ID (against the site server with a device token, --server URL --token-file FILE is enough)"
            )
        }
    }

    func local() async throws {
        let store = try options.open(remote: true)
        let device = self.device ?? ""
        let path = try Collections.device(device)
        if !watch {
            Output.line(try Self.status(device, json: json, store, store.get(path)))
            return
        }
        let json = self.json
        try await Services.untilSignalled(logger: Logger(label: "tracer.status")) {
            var last = ""
            for try await snap in store.snapshots(document: path) {
                let line = try Self.status(device, json: json, store, snap)
                if line != last { Output.line(line) }
                last = line
            }
        }
    }

    static func status(_ device: String, json: Bool, _ store: DocumentStore, _ doc: DocumentSnapshot) throws -> String {
        let status = ExposureJSON.status(
            device,
            document: doc,
            exposures: try ExposureJSON.exposures(of: device, store: store)
        )
        return json ? JSON.string(status.value) : text(status)
    }

    /// `ID: exposed, risk medium; 1 exposure, 4.5 minutes together` and the exposures, from the
    /// status in the contract's JSON (the store's here, or the site server's).
    static func text(_ v: Responses.DeviceStatus) -> String {
        var text = "\(v.deviceId): \(v.status), risk \(v.risk)"
        // The device's own report, while the health team has it and once they denied it: last,
        // after the exposures.
        var said = ""
        if let report = v.report {
            switch report.status {
            case "pending":
                said = "\nyour report \(report.id) is with the health team: nobody is flagged until they approve it"
            case "denied":
                said = "\nyour report \(report.id) was denied at review" + (report.note.map { ": \($0)" } ?? "")
            case "revoked":
                said = "\nyour report \(report.id) was withdrawn by the health team: nobody is flagged for it"
            default: break
            }
        }
        guard !v.exposures.isEmpty else { return text + said }
        text += "; \(v.exposures.count) exposure\(v.exposures.count == 1 ? "" : "s"), "
        text += String(format: "%.1f minutes together", v.colocatedMinutes)
        text += "\n" + ExposureOutput.table(exposures: v.exposures).dropLast().map { "  " + $0 }.joined(separator: "\n")
        return text + said
    }

    /// The same through the site server: `GET /v1/devices/{id}`, and with --watch its SSE watch
    /// (reconnecting, with backoff, when the connection drops).
    func remote(_ site: SiteClient) async throws {
        let device: String
        if let given = self.device {
            device = given
        } else {
            // A device token names its device: the server says which.
            let me = try await site.run { try await $0.ownToken().ok.body.json }
            guard let own = me.deviceId else {
                throw ValidationError(
                    "this is \(me.role.rawValue == "admin" ? "an" : "a") \(me.role.rawValue) token, not a device's: give --device ID"
                )
            }
            device = own
        }
        let (json, up) = (json, site.upstream)
        @Sendable func fetch() async throws -> String {
            let answer = try await site.run { try await $0.deviceStatus(path: .init(id: device)).ok.body.json }
            // As the server made it, so that the text and --json are the local command's.
            let status = try Contract.convert(answer, to: Responses.DeviceStatus.self)
            return json ? JSON.string(status.value) : Self.text(status)
        }
        guard watch else {
            Output.line(try await fetch())
            return
        }
        let watchPath =
            "/v1/watch?path=" + ("devices/\(device)".addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        try await Services.untilSignalled(logger: Logger(label: "tracer.status")) {
            let last = LastLine()
            var backoff = Backoff(first: .seconds(2), longest: .seconds(30))
            while !Task.isCancelled {
                do {
                    last.print(try await fetch())
                    try await up.events(watchPath) { last.print(try await fetch()) }
                } catch let e as SyncError where e.code == .unavailable {
                    let delay = backoff.failed()
                    if backoff.failures == 1 { Output.error("the site server went away (\(e.message)); reconnecting") }
                    try await Task.sleep(for: delay)
                    continue
                } catch let e as SyncError {
                    throw ValidationError("the site server refused the watch: \(e.message)")
                }
                backoff.succeeded()
            }
        }
    }

    /// Prints a line unless it is the one printed last.
    final class LastLine: @unchecked Sendable {
        private let lock = NSLock()
        private var last = ""

        func print(_ line: String) {
            lock.lock()
            defer { lock.unlock() }
            if line != last { Output.line(line) }
            last = line
        }
    }
}

/// `tracer exposure --beacon KEY | --device ID`: the admin's view.
struct ExposureCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "exposure",
        abstract: "Exposures at a beacon, or of a device (served by indexes, never a full scan)."
    )

    @OptionGroup var options: StoreOptions
    @Option(help: "A beacon's (anchor's) key.") var beacon: String?
    @Option(help: "A device id.") var device: String?
    @Option(help: "Only exposures from this time on: \(When.examples).") var since: String?
    @Flag(help: "Print a JSON array.") var json = false

    func validate() throws {
        if (beacon == nil) == (device == nil) {
            throw ValidationError("give exactly one of --beacon KEY and --device ID")
        }
    }

    func run() throws {
        let store = try options.open()
        try Indexes.declare(in: store)
        var cutoff: Timestamp?
        if let since {
            guard let t = When.parse(since) else {
                throw ValidationError("--since takes \(When.examples), not '\(since)'")
            }
            cutoff = t
        }
        let docs: [DocumentSnapshot]
        if let beacon {
            try Self.known(beacon, in: store)
            docs = try ExposureJSON.atBeacon(beacon, since: cutoff, store: store)
        } else {
            let query = Query(collection: try Collections.exposures(of: device ?? ""))
                .where(Exposure.Field.from, .greaterThanOrEqual, .timestamp(cutoff ?? Timestamp(seconds: 0)))
                .order(by: Exposure.Field.from)
            docs = try store.getDocuments(query)
        }
        if json {
            Output.line(JSON.string(.array(docs.map { ExposureJSON.exposure($0).value })))
        } else {
            for line in ExposureOutput.table(docs) { Output.line(line) }
        }
    }
}

extension ExposureCommand {
    /// A beacon the site has (published) or the store has ranged at; else a one-line error with
    /// the closest known keys (a typo printed "no exposures").
    static func known(_ beacon: String, in store: DocumentStore) throws {
        var keys = Set(try PublishedSite.load(from: store)?.site.anchors.map(\.key) ?? [])
        keys.formUnion(try store.getDocuments(Query(collection: CollectionPath(Beacon.collectionID))).map(\.id))
        guard !keys.contains(beacon) else { return }
        throw ValidationError(
            keys.isEmpty
                ? "no beacon \(beacon): this store knows none (no site published, nothing ranged yet)"
                : "no beacon \(beacon): the closest known are \(Closest.to(beacon, in: keys).joined(separator: ", ")) (tracer map show lists the site's)"
        )
    }
}

/// `tracer report flag|revoke|follow`: the exposure engine by hand, and as a listener.
struct ReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract:
            "Review held reports (pending, approve, deny), flag exposures for a report again, revoke one, or follow reports as they arrive.",
        subcommands: [
            ReviewCommands.Pending.self, ReviewCommands.Approve.self, ReviewCommands.Deny.self, FlagReport.self,
            Revoke.self, Follow.self,
        ]
    )

    /// The exposure policy: the site's (from --map, else the one published in the store), else
    /// DESIGN.md's defaults; options override.
    struct PolicyOptions: ParsableArguments {
        @Option(help: "The site's BeaconMap (default: the site published in the store, if any).") var map: String?
        @Option(help: "Separation radius, metres (default 6).") var radius: Double?
        @Option(help: "Minutes between windows that still count (default 5).") var window: Double?
        @Option(help: "Days looked back from the collection date (default 14).") var lookbackDays: Double?
        @Option(
            help:
                "sum (d1 + d2 <= radius), possible (|d1 - d2| <= radius) or geometric (by the kiosk's room; needs a site)."
        ) var separation: String?

        /// The site: --map's (an error when its anchors disagree with the store's published
        /// site; with `publish`, written to the store), else the store's, else none.
        func site(in store: DocumentStore, publish: Bool = false) throws -> Site? {
            try SiteResolution.site(map: map, store: store, publish: publish)
        }

        /// The exposure engine under `site`'s policy and these options.
        func engine(site: Site?) throws -> ExposureEngine {
            var p = site.map { ExposurePolicy(site: $0) } ?? ExposurePolicy()
            if let separation {
                guard let rule = ExposurePolicy.Separation(rawValue: separation) else {
                    throw ValidationError("--separation takes sum, possible or geometric, not '\(separation)'")
                }
                p.separation = rule
            }
            if let radius {
                guard radius > 0 else { throw ValidationError("--radius takes metres above 0") }
                p.radius = radius
            }
            if let window {
                guard window >= 0 else { throw ValidationError("--window takes minutes, 0 or more") }
                p.window = window * 60
            }
            if let lookbackDays {
                guard lookbackDays > 0 else { throw ValidationError("--lookback-days takes days above 0") }
                p.lookback = lookbackDays * 86_400
            }
            return ExposureEngine(policy: p)
        }
    }

    struct FlagReport: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "flag",
            abstract: "Flag exposures for an accepted report (again): idempotent."
        )
        @OptionGroup var options: StoreOptions
        @OptionGroup var policy: PolicyOptions
        @Argument(help: "The report id.") var id: String

        func run() throws {
            let store = try options.open()
            let r = try policy.engine(site: policy.site(in: store)).flag(reportID: id, store: store)
            Output.line(
                "report \(id): \(ExposureEngine.count(r.exposedDevices.count, "device")) exposed, \(ExposureEngine.count(r.exposures, "exposure")) "
                    + "(\(r.changed) written or removed) from \(r.reporterWindows) interaction windows"
                    + (r.skipped > 0 ? "; \(r.skipped) windows skipped (unreadable, or out of range)" : "")
            )
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke a report: its exposures are removed and statuses recomputed."
        )
        @OptionGroup var options: StoreOptions
        @Argument(help: "The report id.") var id: String

        func run() throws {
            let n = try ExposureEngine().revoke(reportID: id, store: try options.open())
            Output.line("report \(id) revoked; \(n) exposure\(n == 1 ? "" : "s") removed")
        }
    }

    struct Follow: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Flag every accepted report as it arrives (from any kiosk or the API), until interrupted."
        )
        @OptionGroup var options: StoreOptions
        @OptionGroup var policy: PolicyOptions

        func run() async throws {
            let logger = Logger(label: "tracer.flagger")
            let store = try options.open()
            let engine = try policy.engine(site: policy.site(in: store))
            let flagger = Flagger(store: store, engine: engine, logger: logger) { id, r in
                Output.line(
                    "report \(id): \(ExposureEngine.count(r.exposedDevices.count, "device")) exposed, \(ExposureEngine.count(r.exposures, "exposure"))"
                )
            }
            try await Services.run([flagger], logger: logger)
        }
    }
}

import ArgumentParser
import Foundation
import Logging
import TracerColocation
import TracerExposure
import TracerModel
import TracerSite
import TracerStore

/// Exposure documents in the contract's JSON shape and as a table.
enum ExposureOutput {
    /// Compact JSON with sorted keys, for the few outputs built from Foundation values.
    static func json(_ object: Any) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// A time to the second, UTC: `2026-11-22 06:32:07Z`.
    static func second(_ v: Value?) -> String {
        guard let t = v?.timestampValue else { return "" }
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyy-MM-dd HH:mm:ss'Z'"
        return f.string(from: t.date)
    }

    static func table(_ docs: [DocumentSnapshot]) -> [String] {
        guard !docs.isEmpty else { return ["no exposures"] }
        var rows = [["device", "report", "beacon", "from", "to", "separation", "together"]]
        for d in docs {
            let o = ExposureJSON.value(d)
            rows.append([
                o["deviceId"]?.stringValue ?? "", o["reportId"]?.stringValue ?? "", o["beaconKey"]?.stringValue ?? "",
                second(d["from"]), second(d["to"]),
                String(
                    format: "%.1f–%.1f m",
                    o["separation.min"]?.doubleValue ?? 0,
                    o["separation.max"]?.doubleValue ?? 0
                ),
                "\(Int(o["overlapSeconds"]?.doubleValue ?? 0)) s",
            ])
        }
        let widths = rows[0].indices.map { i in rows.map { $0[i].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        } + ["\(docs.count) exposure\(docs.count == 1 ? "" : "s")"]
    }
}

/// `tracer status --device ID`: what a device is told.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "A device's status (clear, exposed, positive), risk and exposures; --watch follows it live."
    )

    @OptionGroup var options: StoreOptions
    @Option(help: "The anonymous device id.") var device: String
    @Flag(help: "Print each change as it happens, until interrupted.") var watch = false
    @Flag(help: "Print JSON: {\"deviceId\", \"status\", \"risk\", \"exposures\": [...]}.") var json = false

    func run() async throws {
        let store = try options.open(mustExist: true)
        let path = try Collections.device(device)
        if !watch {
            print(try status(store, store.get(path)))
            return
        }
        let (device, json) = (device, json)
        try await Services.untilSignalled(logger: Logger(label: "tracer.status")) {
            var last = ""
            for try await snap in store.snapshots(document: path) {
                let line = try Self.status(device, json: json, store, snap)
                if line != last { Output.line(line) }
                last = line
            }
        }
    }

    func status(_ store: DocumentStore, _ doc: DocumentSnapshot) throws -> String {
        try Self.status(device, json: json, store, doc)
    }

    static func status(_ device: String, json: Bool, _ store: DocumentStore, _ doc: DocumentSnapshot) throws -> String {
        let exposures = try ExposureJSON.exposures(of: device, store: store)
        let d = DeviceStatus(doc)
        if json { return ExposureJSON.json(ExposureJSON.status(device, document: doc, exposures: exposures)) }
        var text = "\(device): \(d.status.rawValue), risk \(d.risk.rawValue)"
        if !exposures.isEmpty {
            let minutes = d.colocatedMinutes
            text += "; \(exposures.count) exposure\(exposures.count == 1 ? "" : "s"), "
            text += String(format: "%.1f minutes together", minutes)
            text += "\n" + ExposureOutput.table(exposures).dropLast().map { "  " + $0 }.joined(separator: "\n")
        }
        return text
    }

    func print(_ text: String) { Output.line(text) }
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
    @Option(help: "Only exposures from this date or time on (2026-11-20 or 2026-11-20T10:00:00Z).") var since: String?
    @Flag(help: "Print a JSON array.") var json = false

    func validate() throws {
        if (beacon == nil) == (device == nil) {
            throw ValidationError("give exactly one of --beacon KEY and --device ID")
        }
    }

    func run() throws {
        let store = try options.open(mustExist: true)
        try Indexes.declare(in: store)
        var cutoff: Timestamp?
        if let since {
            guard let t = Timestamp(parsing: since) else {
                throw ValidationError(
                    "--since takes a date (2026-11-20) or a time (2026-11-20T10:00:00Z), not '\(since)'"
                )
            }
            cutoff = t
        }
        let docs: [DocumentSnapshot]
        if let beacon {
            docs = try ExposureJSON.atBeacon(beacon, since: cutoff, store: store)
        } else {
            let query = Query(collection: try Collections.exposures(of: device ?? ""))
                .where(Exposure.Field.from, .greaterThanOrEqual, .timestamp(cutoff ?? Timestamp(seconds: 0)))
                .order(by: Exposure.Field.from)
            docs = try store.getDocuments(query)
        }
        if json {
            Output.line(ExposureJSON.json(.array(docs.map(ExposureJSON.value))))
        } else {
            for line in ExposureOutput.table(docs) { Output.line(line) }
        }
    }
}

/// `tracer report flag|revoke|follow`: the exposure engine by hand, and as a listener.
struct ReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Flag exposures for a report again, revoke one, or follow reports as they arrive.",
        subcommands: [FlagReport.self, Revoke.self, Follow.self]
    )

    /// The exposure policy: the site's (from --map), else DESIGN.md's defaults; options override.
    struct PolicyOptions: ParsableArguments {
        @Option(help: "The site's BeaconMap: its settings give the policy.") var map: String?
        @Option(help: "Separation radius, metres (default 6).") var radius: Double?
        @Option(help: "Minutes between windows that still count (default 5).") var window: Double?
        @Option(help: "Days looked back from the collection date (default 14).") var lookbackDays: Double?
        @Option(
            help:
                "sum (d1 + d2 <= radius), possible (|d1 - d2| <= radius) or geometric (by the kiosk's room; needs --map)."
        ) var separation: String?

        /// The site of --map, if given.
        var site: Site? {
            get throws { try map.map { try Site.load(file: $0) } }
        }

        var engine: ExposureEngine {
            get throws {
                var p = try site.map { ExposurePolicy(site: $0) } ?? ExposurePolicy()
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
            let r = try policy.engine.flag(reportID: id, store: try options.open(mustExist: true))
            Output.line(
                "report \(id): \(ExposureEngine.count(r.exposedDevices.count, "device")) exposed, \(ExposureEngine.count(r.exposures, "exposure")) "
                    + "(\(r.changed) written or removed) from \(r.reporterWindows) interaction windows"
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
            let n = try ExposureEngine().revoke(reportID: id, store: try options.open(mustExist: true))
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
            let flagger = Flagger(store: try options.open(), engine: try policy.engine, logger: logger) { id, r in
                Output.line(
                    "report \(id): \(ExposureEngine.count(r.exposedDevices.count, "device")) exposed, \(ExposureEngine.count(r.exposures, "exposure"))"
                )
            }
            try await Services.run([flagger], logger: logger)
        }
    }
}

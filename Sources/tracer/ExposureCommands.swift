import ArgumentParser
import Foundation
import Logging
import TracerAPI
import TracerColocation
import TracerExposure
import TracerModel
import TracerReplication
import TracerServer
import TracerSite
@_spi(Blocking) import TracerStore

/// Exposures as a person reads them (a table that fits 100 columns) and as the health authority
/// takes them (CSV), from the store here or the site server alike.
enum ExposureOutput {
    /// What the table says things in: the site's radius and window (to say what was decided),
    /// its rooms, and the time zone (this machine's).
    struct Context {
        var radius = 6.0
        var window = 5.0
        var rooms: [String: String] = [:]
        let timeZone = TimeZone.current
        /// `Tue 24 Nov 10:05` and `10:48` in `timeZone`: made once for a whole table.
        let day = Context.formatter("EEE d MMM HH:mm")
        let time = Context.formatter("HH:mm")

        static func formatter(_ format: String) -> DateFormatter {
            let f = DateFormatter()
            f.locale = Locale(identifier: "en_GB")
            f.timeZone = TimeZone.current
            f.dateFormat = format
            return f
        }

        init(radius: Double = 6, window: Double = 5, rooms: [String: String] = [:]) {
            (self.radius, self.window, self.rooms) = (radius, window, rooms)
        }

        /// The site server's (its exposure policy, its rooms by beacon).
        init(_ site: SiteClient) async throws {
            let features = try await site.run { try await $0.features().ok.body.json }
            let page = try await site.run { try await $0.personPageSettings().ok.body.json }
            self.init(
                radius: features.exposure.radiusMetres,
                window: features.exposure.windowMinutes,
                rooms: page.rooms.additionalProperties
            )
        }

        /// The site's, from a site (the store's, or --map's).
        init(site: Site?) {
            let policy = site.map { ExposurePolicy(site: $0) } ?? ExposurePolicy()
            self.init(radius: policy.radius, window: policy.window / 60)
            for anchor in site?.anchors ?? [] { rooms[anchor.key] = site?.room(anchor.room)?.name ?? anchor.room }
        }
    }

    /// A time to the second, UTC: `2026-11-22 06:32:07Z` (from a timestamp, or its RFC 3339 text).
    static func second(_ v: Value?) -> String {
        guard let t = v?.timestampValue ?? v?.stringValue.flatMap({ Timestamp(parsing: $0) }) else { return "" }
        return t.iso8601Seconds.replacingOccurrences(of: "T", with: " ")
    }

    static func date(_ text: String?) -> Date? {
        text.flatMap { Timestamp(parsing: $0) }.map { Date(timeIntervalSince1970: $0.seconds) }
    }

    /// `Tue 24 Nov 10:05–10:48` in the context's time zone.
    static func when(_ e: Components.Schemas.Exposure, _ c: Context) -> String {
        guard let from = date(e.from) else { return "?" }
        return c.day.string(from: from) + (date(e.to).map { "–" + c.time.string(from: $0) } ?? "")
    }

    /// What was decided: within the radius for certain (`≤ 2.5 m`), with the pair decision's
    /// chance (`80% ≤ 6 m`), or possibly (`maybe ≤ 6 m`, the site's rule flagged what the two
    /// readings allow).
    static func close(_ e: Components.Schemas.Exposure, _ c: Context) -> String {
        if e.separation.max <= c.radius { return "≤ \(metres(e.separation.max)) m" }
        if let chance = e.chance { return "\(Int((chance * 100).rounded()))% ≤ \(metres(c.radius)) m" }
        return "maybe ≤ \(metres(c.radius)) m"
    }

    static func metres(_ x: Double) -> String { x == x.rounded() ? String(Int(x)) : String(format: "%.1f", x) }

    /// How long both were heard at once; none: within the window of each other.
    static func together(_ e: Components.Schemas.Exposure, _ c: Context) -> String {
        let s = e.overlapSeconds
        if s >= 60 { return "\(Int((Double(s) / 60).rounded())) min" }
        if s > 0 { return "\(s) s" }
        return "≤ \(metres(c.window)) min apart"
    }

    /// Device ids shortened without ambiguity among `ids`: `f7826da6…:1:17` (the UUID's first
    /// digits, as many as it takes, and the badge's major:minor).
    static func short(_ ids: some Sequence<String>) -> [String: String] {
        let all = Set(ids)
        var out: [String: String] = [:]
        for width in [4, 8, 12, 16, 24] {
            func cut(_ id: String) -> String {
                let parts = id.split(separator: ":", maxSplits: 1)
                guard parts.count == 2, parts[0].count > width + 2 else { return id }
                return parts[0].prefix(width) + "…:" + parts[1]
            }
            let cuts = Dictionary(grouping: all, by: cut)
            if cuts.values.allSatisfy({ $0.count == 1 }) {
                for (cut, ids) in cuts { out[ids[0]] = cut }
                return out
            }
        }
        return Dictionary(uniqueKeysWithValues: all.map { ($0, $0) })
    }

    /// The table: device (shortened), report, where, when, how close, how long together. A
    /// column every row shares (one report, one beacon) is said once above, not in each row.
    /// `device: false`: the person's own view (no device or report column, no footer).
    static func table(
        exposures: [Components.Schemas.Exposure],
        _ c: Context = Context(),
        device: Bool = true
    ) -> [String] {
        guard !exposures.isEmpty else { return ["no exposures"] }
        let names = short(exposures.map(\.deviceId))
        let zone = c.timeZone.abbreviation() ?? c.timeZone.identifier
        let reports = Set(exposures.map(\.reportId))
        var header = device ? ["device"] : []
        if reports.count > 1, device { header.append("report") }
        header += ["where", "when (\(zone))", "how close", "together"]
        var rows = [header]
        for e in exposures {
            var row = device ? [names[e.deviceId] ?? e.deviceId] : []
            if reports.count > 1, device { row.append(e.reportId) }
            let room = c.rooms[e.beaconKey]
            row += [room.map { "\($0) (\(e.beaconKey))" } ?? e.beaconKey, when(e, c), close(e, c), together(e, c)]
            rows.append(row)
        }
        let widths = rows[0].indices.map { i in rows.map { $0[i].count }.max() ?? 0 }
        var lines = rows.map { row in
            row.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        guard device else { return lines }
        let devices = Set(exposures.map(\.deviceId)).count
        var footer = "\(ExposureEngine.count(exposures.count, "exposure"))"
        footer += " of \(ExposureEngine.count(devices, "device"))"
        if reports.count == 1 { footer += ", for report \(exposures[0].reportId)" }
        lines.append(footer)
        if exposures.contains(where: { $0.separation.max > c.radius && $0.chance != nil }) {
            lines.append(
                "80% ≤ \(metres(c.radius)) m: the chance, from all the pair's readings over the episode, that they were within \(metres(c.radius)) m in one room"
            )
        }
        if exposures.contains(where: { $0.separation.max > c.radius && $0.chance == nil }) {
            lines.append(
                "maybe: the two readings allow within \(metres(c.radius)) m, and the site's rule counts it (--format csv gives the range)"
            )
        }
        return lines
    }

    /// CSV for the health authority: one row per exposure, full ids, UTC times (RFC 3339).
    static let csvHeader =
        "device_id,report_id,beacon,room,from,to,separation_min_m,separation_max_m,contact,together_s,chance"

    /// UTF-8's byte-order mark, first: without it Excel reads the file as the machine's code page
    /// ("Café" as "CafÃ©"); LibreOffice, pandas and Python's `utf-8-sig` take it.
    static let byteOrderMark = "\u{FEFF}"

    /// How the two met, in the CSV: `at_once` (both heard at the same moment, for `together_s`
    /// seconds), or `within_5_min` (never at once, but within the window of each other; its
    /// `together_s` is empty, not 0, which read as "no contact").
    static func contact(_ e: Components.Schemas.Exposure, _ c: Context) -> String {
        e.overlapSeconds > 0 ? "at_once" : "within_\(metres(c.window))_min"
    }

    static func csv(_ exposures: [Components.Schemas.Exposure], _ c: Context) -> [String] {
        [byteOrderMark + csvHeader]
            + exposures.map { e in
                [e.deviceId, e.reportId, e.beaconKey, c.rooms[e.beaconKey] ?? "", e.from ?? "", e.to ?? ""].map(
                    CSV.text
                )
                .joined(separator: ",") + ","
                    + [
                        String(format: "%.2f", e.separation.min), String(format: "%.2f", e.separation.max),
                        contact(e, c), e.overlapSeconds > 0 ? "\(e.overlapSeconds)" : "",
                        e.chance.map { String(format: "%.2f", $0) } ?? "",
                    ].joined(separator: ",")
            }
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
        let json = self.json
        if !watch {
            Output.line(try await store.reading { db in try Self.status(device, json: json, try db.get(path), in: db) })
            return
        }
        try await Services.untilSignalled(logger: Logger(label: "tracer.status")) {
            var last = ""
            for try await snap in store.snapshots(document: path) {
                let line = try await store.reading { db in try Self.status(device, json: json, snap, in: db) }
                if line != last { Output.line(line) }
                last = line
            }
        }
    }

    static func status(_ device: String, json: Bool, _ doc: DocumentSnapshot, in db: StoreReader) throws -> String {
        let status = Components.Schemas.DeviceStatus(
            device,
            document: doc,
            exposures: try ExposureViews.exposures(of: device, in: db)
        )
        return json
            ? JSON.string(status.value)
            : text(status, ExposureOutput.Context(site: try PublishedSite.load(from: db)?.site))
    }

    /// `ID: exposed, risk medium; 1 exposure, 4.5 minutes together` and the exposures, from the
    /// status in the contract's JSON (the store's here, or the site server's).
    static func text(_ v: Components.Schemas.DeviceStatus, _ context: ExposureOutput.Context) -> String {
        var text = "\(v.deviceId): \(v.status.rawValue), risk \(v.risk.rawValue)"
        // The device's own report, while the health team has it and once they denied it: last,
        // after the exposures.
        var said = ""
        if let report = v.report {
            switch report.status {
            case .pending:
                said = "\nyour report \(report.id) is with the health team: nobody is flagged until they approve it"
            case .denied:
                said = "\nyour report \(report.id) was denied at review" + (report.note.map { ": \($0)" } ?? "")
            case .revoked:
                said = "\nyour report \(report.id) was withdrawn by the health team: nobody is flagged for it"
            default: break
            }
        }
        guard !v.exposures.isEmpty else { return text + said }
        text += "; \(v.exposures.count) exposure\(v.exposures.count == 1 ? "" : "s"), "
        text += String(format: "%.1f minutes together", v.colocatedMinutes)
        text +=
            "\n"
            + ExposureOutput.table(exposures: v.exposures, context, device: false).map { "  " + $0 }
            .joined(separator: "\n")
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
        let context = json ? ExposureOutput.Context() : try await ExposureOutput.Context(site)
        @Sendable func fetch() async throws -> String {
            let answer = try await site.run { try await $0.deviceStatus(path: .init(id: device)).ok.body.json }
            // As the server wrote it, so that the text and --json are the local command's.
            return json ? JSON.string(answer.value) : Self.text(answer, context)
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

/// `tracer exposure --beacon KEY | --device ID | --report ID`: the health team's view, from
/// the store here or the site server (`--server`, an admin token).
struct ExposureCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "exposure",
        abstract:
            "Exposures at a beacon, of a device, or for a report: a table, JSON, or CSV for the health authority.",
        discussion: """
            The table fits 100 columns: devices shortened without ambiguity, times in this machine's time zone, \
            and what was decided ("≤ 2.5 m" for certain; "80% ≤ 6 m": the pair decision's chance over the \
            episode; "maybe ≤ 6 m" where the site's rule counts what two readings allow). --format csv writes one row per exposure with full ids and UTC times, UTF-8 with a byte-order mark first (for Excel): \
            \(ExposureOutput.csvHeader). --format json (or --json) the API's objects.
            """
    )

    enum Format: String, ExpressibleByArgument, CaseIterable { case table, json, csv }

    @OptionGroup var options: StoreOptions
    @Option(help: "A beacon's (anchor's) key.") var beacon: String?
    @Option(help: "A device id.") var device: String?
    @Option(help: "A report id: who was flagged for it, where, when, how close, for how long.") var report: String?
    @Option(help: "Only exposures from this time on: \(When.examples).") var since: String?
    @Option(help: "table, json or csv.") var format: Format = .table
    @Flag(help: "Print a JSON array (--format json).") var json = false
    @OptionGroup(title: "Against the site server") var serverOptions: ServerOptions

    func validate() throws {
        if [beacon, device, report].compactMap({ $0 }).count != 1 {
            throw ValidationError("give exactly one of --beacon KEY, --device ID and --report ID")
        }
        if json && format != .table && format != .json {
            throw ValidationError("--json is --format json: give one of them")
        }
    }

    func run() async throws {
        var cutoff: Timestamp?
        if let since {
            guard let t = When.parse(since) else {
                throw ValidationError("--since takes \(When.examples), not '\(since)'")
            }
            cutoff = t
        }
        let (exposures, context) = try await serverOptions.withSite { site in
            if let site { try await remote(site, since: cutoff) } else { try local(since: cutoff) }
        }
        switch json ? .json : format {
        case .json: Output.line(JSON.string(.array(exposures.map(\.value))))
        case .csv: ExposureOutput.csv(exposures, context).forEach(Output.line)
        case .table: ExposureOutput.table(exposures: exposures, context).forEach(Output.line)
        }
    }

    func local(since cutoff: Timestamp?) throws -> ([Components.Schemas.Exposure], ExposureOutput.Context) {
        let store = try options.open(remote: true)
        try store.write { try Indexes.declare(in: $0) }
        let context = ExposureOutput.Context(site: try store.read { try PublishedSite.load(from: $0) }?.site)
        if let beacon {
            if let unknown = try store.read({ try ExposureViews.unknownBeacon(beacon, in: $0) }) {
                throw ValidationError(unknown + " (tracer map show lists the site's)")
            }
            return (
                try store.read { try ExposureViews.atBeacon(beacon, since: cutoff, in: $0) }.map(
                    Components.Schemas.Exposure.init
                ),
                context
            )
        }
        if let report {
            guard let found = try store.read({ try ExposureViews.forReport(report, in: $0) }) else {
                throw ValidationError("no report \(report) (tracer report pending --status all lists them)")
            }
            Self.say(found)
            return (Self.since(cutoff, found.exposures), context)
        }
        let query = Query(collection: try Collections.exposures(of: device ?? ""))
            .where(Exposure.Field.from, .greaterThanOrEqual, .timestamp(cutoff ?? Timestamp(seconds: 0)))
            .order(by: Exposure.Field.from)
        return (try store.getDocuments(query).map(Components.Schemas.Exposure.init), context)
    }

    func remote(
        _ site: SiteClient,
        since cutoff: Timestamp?
    ) async throws -> (
        [Components.Schemas.Exposure], ExposureOutput.Context
    ) {
        let context = try await ExposureOutput.Context(site)
        let since = cutoff?.iso8601Seconds
        if let beacon {
            let answer = try await site.run {
                try await $0.beaconExposures(path: .init(key: beacon), query: .init(since: since)).ok.body.json
            }
            return (answer.exposures, context)
        }
        if let report {
            let answer = try await site.run { try await $0.reportExposures(path: .init(id: report)).ok.body.json }
            Self.say(answer)
            return (Self.since(cutoff, answer.exposures), context)
        }
        let answer = try await site.run { try await $0.deviceStatus(path: .init(id: device ?? "")).ok.body.json }
        return (Self.since(cutoff, answer.exposures), context)
    }

    static func since(_ cutoff: Timestamp?, _ exposures: [Components.Schemas.Exposure]) -> [Components.Schemas.Exposure]
    {
        guard let cutoff else { return exposures }
        return exposures.filter { ($0.from.flatMap { Timestamp(parsing: $0) } ?? .min) >= cutoff }
    }

    /// A report's own line, on stderr (stdout is the table, JSON or CSV a program reads).
    static func say(_ r: Components.Schemas.ReportExposures) {
        let devices = Set(r.exposures.map(\.deviceId)).count
        Output.error(
            "report \(r.reportId) (\(r.status.rawValue)) from device \(r.deviceId): \(ExposureEngine.count(devices, "device")) flagged"
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
    /// docs/design.md's defaults; options override.
    struct PolicyOptions: ParsableArguments {
        @Option(help: "The site's BeaconMap (default: the site published in the store, if any).") var map: String?
        @Option(help: "Separation radius, metres (default 6).") var radius: Double?
        @Option(help: "Minutes between windows that still count (default 5).") var window: Double?
        @Option(help: "Days looked back from the collection date (default 14).") var lookbackDays: Double?
        @Option(
            help:
                "sum (d1 + d2 <= radius), possible (|d1 - d2| <= radius) or geometric (by the kiosk's room; needs a site)."
        ) var separation: String?

        /// Whether any option was given (the site server applies the site's own policy).
        var given: Bool { map != nil || radius != nil || window != nil || lookbackDays != nil || separation != nil }

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

    struct FlagReport: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "flag",
            abstract: "Flag exposures for an accepted report (again): idempotent."
        )
        @OptionGroup var options: StoreOptions
        @OptionGroup var policy: PolicyOptions
        @Argument(help: "The report id.") var id: String
        @OptionGroup(title: "Against the site server") var serverOptions: ServerOptions

        func run() async throws {
            let line: String = try await serverOptions.withSite { site in
                guard let site else {
                    let store = try options.open(remote: true)
                    let engine = try policy.engine(site: policy.site(in: store))
                    let r = try await engine.flag(reportID: id, on: store)
                    return ExposureEngine.line(id, r)
                }
                if policy.given {
                    throw ValidationError(
                        "the site server flags under the site's policy: leave out --map, --radius, --window, --lookback-days and --separation"
                    )
                }
                return try await site.run { try await $0.flagReport(path: .init(id: id)).ok.body.json }.line
            }
            Output.line(line)
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Revoke a report: its exposures are removed, statuses recomputed, and the reporter told it was withdrawn."
        )
        @OptionGroup var options: StoreOptions
        @Argument(help: "The report id.") var id: String
        @OptionGroup(title: "Against the site server") var serverOptions: ServerOptions

        func run() async throws {
            let line: String = try await serverOptions.withSite { site in
                guard let site else {
                    let store = try options.open(remote: true)
                    let n = try await store.writing { db in try ExposureEngine().revoke(reportID: id, in: db) }
                    return "report \(id) revoked; \(ExposureEngine.count(n, "exposure")) removed"
                }
                return try await site.run { try await $0.revokeReport(path: .init(id: id)).ok.body.json }.line
            }
            Output.line(line)
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

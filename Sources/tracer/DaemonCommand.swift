import ArgumentParser
import Foundation
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import Synchronization
import TracerAPI
import TracerDaemon
import TracerModel
import TracerReplication
import TracerServer
import TracerSite
@_spi(Blocking) import TracerStore

/// `tracer daemon`: ranging into the store until the source ends or a signal comes.
struct DaemonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "Range iBeacon adverts and write interaction documents.",
        discussion: """
            A kiosk runs `tracer daemon --map FILE --anchor KEY`: it is the anchor, and adverts from the site's \
            personal-device UUIDs are people. A person's own host runs `--device ID`: adverts from the map's \
            fixed beacons are the anchors. The default source is BlueZ on the system bus: the daemon waits for \
            bluetoothd and an adapter, re-arms discovery when either comes back, restarts a scan that stalls, and \
            keeps BlueZ's device cache small. With --source replay:FILE it ranges a recorded capture on the \
            file's own clock and exits at its end. SIGTERM and SIGINT stop discovery, write what is buffered and \
            exit 0. With --upstream URL --token-file FILE a kiosk also replicates what it records to the site \
            server (taking the site from it when --map is left out), keeps everything while the server is away, \
            and at exit waits up to --drain-timeout for the server to acknowledge the rest.
            """
    )

    @OptionGroup var options: StoreOptions
    @Option(help: "The site's BeaconMap file, published into the store (default: the store's published site).")
    var map: String?
    @OptionGroup var modeOptions: ModeOptions
    @Option(help: "bluez, or replay:FILE.") var source = "bluez"
    @Option(help: "The Bluetooth adapter, like hci0 (bluez source; default the first powered one).") var adapter:
        String?
    @Option(help: "Restart discovery after this many seconds with nothing heard (bluez source).")
    var stallTimeout: Double = 60
    @Option(help: "Remove devices unseen for this many seconds from BlueZ's cache (bluez source).")
    var forgetAfter: Double = 60
    @Option(help: "Print a status line every this many seconds (live sources; 0: never).") var statusInterval: Double =
        60
    @Option(help: "Serve counters in Prometheus's text format on HOST:PORT.") var metrics: String?
    @Option(help: "Purge interactions older than this many days, at start and hourly (live sources; 0: never).")
    var retentionDays: Double = 14
    @Option(help: "Also write Herald-style contacts.csv and detection.csv here.") var logDir: String?
    @OptionGroup(title: "Replication to the site server") var replication: ReplicationOptions

    /// `--upstream URL --token-file FILE [--ca-file F] [--drain-timeout S]`.
    struct ReplicationOptions: ParsableArguments {
        @Option(
            help:
                "The site server's URL (https://…): replicate what this kiosk records to it. Several, comma-separated: servers of one site, each used in turn when the one before fails."
        ) var upstream: String?
        @Option(help: "A file holding this kiosk's token (tracer token create --role kiosk --anchor KEY).")
        var tokenFile: String?
        @Option(help: "A PEM CA certificate to verify the site server by (default: the system's trust store).")
        var caFile: String?
        @Option(help: "Seconds to wait at exit for the server to acknowledge what was recorded.")
        var drainTimeout: Double = 60
        @Option(help: ArgumentHelp("Seconds between checks for a newly published site.", visibility: .hidden))
        var siteInterval: Double = 30
        @Option(
            help: ArgumentHelp(
                "Seconds between asks for the site server's fit of this kiosk's receiver.",
                visibility: .hidden
            )
        )
        var fitInterval: Double = 600

        func validate() throws {
            if upstream != nil, tokenFile == nil {
                throw ValidationError(
                    "--upstream needs --token-file FILE (tracer token create --role kiosk --anchor KEY)"
                )
            }
            if upstream == nil, tokenFile != nil || caFile != nil {
                throw ValidationError("--token-file and --ca-file go with --upstream URL")
            }
            // Bounded: seconds become milliseconds in an Int, which 1e300 would trap.
            guard drainTimeout >= 0, drainTimeout <= 86_400, siteInterval > 0, siteInterval <= 86_400,
                fitInterval > 0, fitInterval <= 86_400
            else {
                throw ValidationError(
                    "--drain-timeout takes seconds from 0 to 86400, --site-interval and --fit-interval above 0 up to 86400"
                )
            }
        }
    }

    func validate() throws {
        if replication.upstream != nil, modeOptions.anchor == nil {
            throw ValidationError("--upstream replicates a kiosk: give --anchor KEY")
        }
        guard stallTimeout > 0, stallTimeout <= 86_400, forgetAfter > 0, forgetAfter <= 86_400, statusInterval >= 0,
            statusInterval <= 86_400
        else {
            throw ValidationError(
                "--stall-timeout and --forget-after take seconds above 0, --status-interval 0 or more, each up to 86400"
            )
        }
    }

    func run() async throws {
        // The store and the client are shut down on every path out: a wrong --map after they are
        // made is one line, and the store's threads have ended when the daemon exits.
        let open = { try options.open(creating: true) }
        try await withShutdown(open) { store in
            let make = {
                try replication.upstream.map {
                    try Upstream($0, tokenFile: replication.tokenFile ?? "", caFile: replication.caFile)
                }
            }
            try await withShutdown(make, { try await range(store: store, upstream: $0) })
        }
    }

    func range(store: DocumentStore, upstream: Upstream?) async throws {
        let logger = Logger(label: "tracer.daemon")
        let site: Site?
        if map == nil, let upstream {
            // The server's site first; the copy kept here when the server cannot be reached.
            site = try await SiteFollower.initial(upstream: upstream, store: store, logger: logger)?.site
            if site == nil { return }  // stopped while waiting for the server
        } else {
            if let map, let upstream { try await agrees(map, with: upstream) }
            site = try SiteResolution.site(map: map, store: store, publish: true)
        }
        guard let site else {
            throw ValidationError(
                "no site: give --map FILE, or publish one into \(options.display) (tracer map publish FILE)"
            )
        }
        let mode = modeOptions.mode
        _ = try Ranger(site: site, mode: mode)  // the map and the mode first: their errors are the useful ones
        let advertSource = try self.advertSource()
        // Metrics first: the replicator's gauges are made against the bootstrapped backend.
        let registry = metrics.map { _ in PrometheusCollectorRegistry() }
        if let registry { MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry)) }
        let replicator = upstream.map {
            var o = Replicator.Options()
            o.drainTimeout = .milliseconds(Int(replication.drainTimeout * 1000))
            return Replicator(
                store: store,
                upstream: $0,
                kiosk: modeOptions.anchor ?? "",
                options: o,
                logger: Logger(label: "tracer.sync")
            )
        }
        let badges = try await badgeFollower(site: site, store: store, upstream: upstream, logger: logger)
        let daemon = Daemon(
            site: site,
            mode: mode,
            store: store,
            source: advertSource,
            csvLog: try logDir.map { try CSVLog(directory: $0) },
            retention: retentionDays > 0 ? retentionDays * 86_400 : nil,
            acknowledged: replicator.map { r in { @Sendable in r.status.snapshot.acknowledged } },
            badges: badges.map { BadgeSupply(resolver: $0.resolver, prepare: $0.prepare) },
            logger: logger
        )
        let bluez = advertSource as? BlueZSource
        let finished = Mutex<Daemon.Report?>(nil)
        let notifier = SystemdNotifier()
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        // The replicator comes first: the group stops services last-first, so it drains after
        // the ranging has written its last windows.
        if let replicator, let upstream {
            services.append(.init(service: replicator))
            if map == nil {
                services.append(
                    .init(
                        service: SiteFollower(
                            upstream: upstream,
                            store: store,
                            interval: .milliseconds(Int(replication.siteInterval * 1000)),
                            logger: Logger(label: "tracer.sync")
                        ) { published in await daemon.replaceSite(published.site) }
                    )
                )
            }
        }
        if let upstream, let kiosk = modeOptions.anchor {
            // The site server's fit of this kiosk's receiver, from the kiosks hearing each other.
            services.append(
                .init(
                    service: FitFollower(
                        upstream: upstream,
                        kiosk: kiosk,
                        interval: .milliseconds(Int(replication.fitInterval * 1000)),
                        logger: Logger(label: "tracer.sync")
                    ) { fit in await daemon.follow(fit) }
                )
            )
        }
        if let badges { services.append(.init(service: badges)) }
        services.append(Services.ending(DaemonService(daemon) { report in finished.withLock { $0 = report } }))
        if let metrics, let registry {
            let published = DaemonMetrics()
            let endpoint = try MetricsEndpoint(
                registry: registry,
                bind: metrics,
                logger: logger,
                refresh: { published.publish(daemon.progress.snapshot, bluez?.status) },
                onRunning: { port in
                    let host = metrics.split(separator: ":").dropLast().joined(separator: ":")
                    Output.line("metrics on http://\(host.isEmpty ? "127.0.0.1" : host):\(port)/metrics")
                }
            )
            services.append(.init(service: endpoint))
        }
        if !advertSource.isReplay {
            services.append(
                .init(
                    service: StatusLines(
                        daemon: daemon,
                        bluez: bluez,
                        replication: replicator?.status,
                        interval: statusInterval,
                        notifier: notifier
                    )
                )
            )
        }
        services.append(.init(service: SystemdService(notifier)))
        try await Services.run(services, logger: logger)
        guard let report = finished.withLock({ $0 }) else { return }
        try summarize(report, replicator: replicator, source: advertSource)
    }

    /// `--source`: BlueZ (with the watchdog's and the cache's timings), or a replay file.
    func advertSource() throws -> any AdvertSource {
        if source.hasPrefix("replay:") {
            return try ReplaySource(path: String(source.dropFirst("replay:".count)))
        }
        guard source == "bluez" else {
            throw ValidationError("--source takes bluez or replay:FILE, not '\(source)'")
        }
        var options = BlueZSource.Options(adapter: adapter)
        options.stallTimeout = .milliseconds(Int(stallTimeout * 1000))
        options.forgetAfter = .milliseconds(Int(forgetAfter * 1000))
        return BlueZSource(options: options, logger: Logger(label: "tracer.bluez"))
    }

    /// What the run did, in a few lines: the ranging, the badges, the replication, a replay's
    /// skipped lines. A replay whose documents the server refused fails (exit 1).
    func summarize(_ report: Daemon.Report, replicator: Replicator?, source advertSource: any AdvertSource) throws {
        let c = report.counts
        let rate = report.seconds > 0 ? Int(Double(c.adverts) / report.seconds) : 0
        Output.line(
            "\(report.interrupted ? "stopped after" : "ranged") \(c.adverts) adverts (\(c.iBeacons) iBeacon, "
                + "\(c.attributed) attributed, \(c.references) from fixed beacons) in \(String(format: "%.2f", report.seconds)) s, "
                + "\(rate) adverts/s; wrote \(report.written) interaction documents"
        )
        if c.badgesUnresolved + c.badgeCollisions > 0 {
            Output.line(
                "  rotating badges: \(c.badgesUnresolved) adverts matched no badge of the site (another site's, revoked, or a clock far off), \(c.badgeCollisions) an id two badges shared"
            )
        }
        var refused = false
        if let replicator {
            let s = replicator.status.snapshot
            if s.state == .tokenRefused {
                // The reason was said once, when the server refused it.
                Output.error(
                    "replication: the site server refused the token in \(replicator.upstream.tokenFile) (above): \(s.backlog) changes kept here, sent once the file holds a token for \(modeOptions.anchor ?? "this kiosk")"
                )
                refused = true
            } else {
                Output.line(
                    s.backlog == 0
                        ? "replicated to \(replicator.upstream.base): everything acknowledged (\(s.sent) documents this run)"
                        : "replication: \(s.backlog) changes not acknowledged by \(replicator.upstream.base); kept here, sent at the next start"
                )
            }
            if s.refused > 0 {
                Output.error(
                    "replication: the site server refused \(s.refused) documents outside this kiosk's anchor (kept here, not sent again)"
                )
                refused = true
            }
        }
        if let replay = advertSource as? ReplaySource {
            let r = replay.report
            if r.skipped > 0 {
                Output.error("warning: skipped \(r.skipped) of \(r.lines) lines that are not adverts; the first:")
                for p in r.problems { Output.error("  \(p)") }
            }
            // A replay is a run that ends: what the server refused makes it a failure. (A live
            // daemon keeps recording: its status line, metrics and the server's /v1/kiosks say it.)
            if refused { throw ExitCode(1) }
        }

    }

    /// What resolves a site's rotating badges at a kiosk: the keys, on a store that has them (the
    /// site server's, a simulated site's); else the days of ids from the site server. A site with
    /// rotating badges and neither would record none of them: refused, in one line.
    func badgeFollower(
        site: Site,
        store: DocumentStore,
        upstream: Upstream?,
        logger: Logger
    ) async throws -> BadgeFollower? {
        guard site.badgeUUID != nil, modeOptions.anchor != nil else { return nil }
        let log = Logger(label: "tracer.badges")
        if let keys = try await BadgeFollower.keys(store: store, bits: site.badgeEpochBits, logger: log) {
            return keys
        }
        if let upstream {
            return try await BadgeFollower.kiosk(
                upstream: upstream,
                store: store,
                bits: site.badgeEpochBits,
                interval: .milliseconds(Int(replication.siteInterval * 1000)),
                logger: log
            )
        }
        throw ValidationError(
            "\(site.file) has rotating badges (settings: badgeUUID) but \(options.display) has no badges to resolve them: "
                + "give --upstream URL --token-file FILE (the site server sends its kiosks the badges' ids), or issue them here (tracer badge issue)"
        )
    }

    /// `--map FILE --upstream URL`: the map must agree with the site the server publishes, as
    /// `serve --map` must with its store's (the kiosk would write its anchor's document under
    /// the old room, and replicate it). Asked once, for 5 s at most; a server that cannot be
    /// asked (down, no site yet, the token refused) does not stop a kiosk from recording: the
    /// replicator says why.
    func agrees(_ map: String, with upstream: Upstream) async throws {
        let local = try PublishedSite(source: try SiteResolution.read(map), file: map)
        let served = await Self.withDeadline(.seconds(5)) { try? await upstream.site(etag: nil) }
        guard let served = served ?? nil,
            let theirs = try? PublishedSite(source: served.source, file: served.file, served: true)
        else { return }
        let differences = local.site.anchorDifferences(from: theirs.site)
        guard !differences.isEmpty else { return }
        throw ValidationError(
            "\(map) disagrees with the site \(upstream.base) publishes (from \(served.file)): "
                + differences.prefix(3).joined(separator: "; ")
                + (differences.count > 3 ? "; and \(differences.count - 3) more" : "")
                + "; leave out --map to take the server's site, or publish this map on the server (tracer map publish \(map))"
        )
    }

    /// `body`'s result, or nil when `limit` passes first (`body` is cancelled).
    static func withDeadline<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async -> T?) async -> T? {
        await withTaskGroup(of: T?.self) { group in
            group.addTask { await body() }
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// Every `interval` seconds: a status line on stdout (unless 0) and to systemd.
    struct StatusLines: Service {
        let daemon: Daemon
        let bluez: BlueZSource?
        let replication: ReplicationStatus?
        let interval: Double
        let notifier: SystemdNotifier

        func run() async throws {
            try? await cancelWhenGracefulShutdown { try await lines() }
        }

        func lines() async throws {
            var last = daemon.progress.snapshot
            var lastTime = ContinuousClock.now
            let every = Duration.milliseconds(Int((interval > 0 ? interval : 5) * 1000))
            while true {
                try await Task.sleep(for: every)
                let now = daemon.progress.snapshot
                let elapsed = (ContinuousClock.now - lastTime) / .seconds(1)
                var line = DaemonCommand.statusLine(now, previous: last, seconds: elapsed, bluez: bluez?.status)
                if let replication { line += "; " + ReplicationStatus.line(replication.snapshot) }
                if interval > 0 { Output.line("status: " + line) }
                notifier.notify("STATUS=" + line)
                last = now
                lastTime = ContinuousClock.now
            }
        }
    }

    /// `scanning on hci0; 412 adverts/s; 23 in range; 1204 written, the last 3 s ago`.
    static func statusLine(
        _ now: DaemonProgress.Snapshot,
        previous: DaemonProgress.Snapshot,
        seconds: Double,
        bluez: BlueZSource.Status?
    ) -> String {
        let rate = seconds > 0 ? Int((Double(now.counts.adverts - previous.counts.adverts) / seconds).rounded()) : 0
        var parts: [String] = []
        if let bluez { parts.append(bluez.state.description) }
        parts.append("\(rate) adverts/s")
        parts.append("\(now.inRange) in range")
        let ago = now.lastWrite.map { ", the last \(Int(Date().timeIntervalSince1970 - $0)) s ago" } ?? ""
        parts.append("\(now.written) written" + ago)
        return parts.joined(separator: "; ")
    }
}

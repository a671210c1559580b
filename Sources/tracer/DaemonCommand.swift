import ArgumentParser
import Foundation
import Logging
import TracerDaemon
import TracerSite

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
            exit 0.
            """
    )

    @OptionGroup var options: StoreOptions
    @Option(help: "The site's BeaconMap file.") var map: String
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

    func validate() throws {
        guard stallTimeout > 0, forgetAfter > 0, statusInterval >= 0 else {
            throw ValidationError(
                "--stall-timeout and --forget-after take seconds above 0, --status-interval 0 or more"
            )
        }
    }

    func run() async throws {
        let site = try Site.load(file: map)
        let mode = modeOptions.mode
        _ = try Ranger(site: site, mode: mode)  // the map and the mode first: their errors are the useful ones
        let advertSource: any AdvertSource
        if source.hasPrefix("replay:") {
            advertSource = try ReplaySource(path: String(source.dropFirst("replay:".count)))
        } else if source == "bluez" {
            var options = BlueZSource.Options(adapter: adapter)
            options.stallTimeout = .milliseconds(Int(stallTimeout * 1000))
            options.forgetAfter = .milliseconds(Int(forgetAfter * 1000))
            advertSource = BlueZSource(options: options, logger: Logger(label: "tracer.bluez"))
        } else {
            throw ValidationError("--source takes bluez or replay:FILE, not '\(source)'")
        }
        let daemon = Daemon(
            site: site,
            mode: mode,
            store: try options.open(),
            source: advertSource,
            csvLog: try logDir.map { try CSVLog(directory: $0) },
            retention: retentionDays > 0 ? retentionDays * 86_400 : nil,
            logger: Logger(label: "tracer.daemon")
        )
        let bluez = advertSource as? BlueZSource
        let metricsServer = try metrics.map { bind in
            try MetricsServer(bind: bind) { Self.metricsText(daemon.progress.snapshot, bluez?.status) }
        }
        if let metricsServer, let host = metrics?.split(separator: ":").first {
            Output.line("metrics on http://\(host):\(metricsServer.port)/metrics")
        }
        let notifier = SystemdNotifier()
        let task = Task { try await daemon.run() }
        let signals = [SIGINT, SIGTERM].map { sig in
            signal(sig, SIG_IGN)
            let s = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            s.setEventHandler {
                notifier.notify("STOPPING=1")
                task.cancel()
            }
            s.resume()
            return s
        }
        notifier.notify("READY=1")
        let statusTask: Task<Void, Never>? =
            advertSource.isReplay
            ? nil
            : Task {
                var last = daemon.progress.snapshot
                var lastTime = ContinuousClock.now
                let interval = statusInterval > 0 ? statusInterval : 5
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(Int(interval * 1000)))
                    if Task.isCancelled { break }
                    let now = daemon.progress.snapshot
                    let elapsed = (ContinuousClock.now - lastTime) / .seconds(1)
                    let line = Self.statusLine(now, previous: last, seconds: elapsed, bluez: bluez?.status)
                    if statusInterval > 0 { Output.line("status: " + line) }
                    notifier.notify("STATUS=" + line)
                    last = now
                    lastTime = ContinuousClock.now
                }
            }
        let report = try await task.value
        statusTask?.cancel()
        for s in signals { s.cancel() }
        let c = report.counts
        let rate = report.seconds > 0 ? Int(Double(c.adverts) / report.seconds) : 0
        Output.line(
            "\(report.interrupted ? "stopped after" : "ranged") \(c.adverts) adverts (\(c.iBeacons) iBeacon, "
                + "\(c.attributed) attributed, \(c.references) from fixed beacons) in \(String(format: "%.2f", report.seconds)) s, "
                + "\(rate) adverts/s; wrote \(report.written) interaction documents"
        )
        if let replay = advertSource as? ReplaySource {
            let r = replay.report
            if r.skipped > 0 {
                Output.error("warning: skipped \(r.skipped) of \(r.lines) lines that are not adverts; the first:")
                for p in r.problems { Output.error("  \(p)") }
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
        if let bluez { parts.append(bluez.state) }
        parts.append("\(rate) adverts/s")
        parts.append("\(now.inRange) in range")
        let ago = now.lastWrite.map { ", the last \(Int(Date().timeIntervalSince1970 - $0)) s ago" } ?? ""
        parts.append("\(now.written) written" + ago)
        return parts.joined(separator: "; ")
    }

    /// The counters in Prometheus's text format.
    static func metricsText(_ p: DaemonProgress.Snapshot, _ bluez: BlueZSource.Status?) -> String {
        var out = ""
        func metric(_ name: String, _ type: String, _ help: String, _ value: Double) {
            out += "# HELP tracer_\(name) \(help)\n# TYPE tracer_\(name) \(type)\ntracer_\(name) \(value)\n"
        }
        metric("adverts_total", "counter", "Adverts ranged.", Double(p.counts.adverts))
        metric("ibeacon_adverts_total", "counter", "Adverts carrying an iBeacon frame.", Double(p.counts.iBeacons))
        metric(
            "attributed_adverts_total",
            "counter",
            "Adverts attributed to a device and an anchor.",
            Double(p.counts.attributed)
        )
        metric("interactions_written_total", "counter", "Interaction documents written.", Double(p.written))
        metric("devices_in_range", "gauge", "Device-anchor pairs with an open window.", Double(p.inRange))
        metric("last_write_timestamp_seconds", "gauge", "Unix time of the last write.", p.lastWrite ?? 0)
        if let b = bluez {
            metric("bluez_scanning", "gauge", "1 while discovery is on.", b.state.hasPrefix("scanning") ? 1 : 0)
            metric("bluez_device_signals_total", "counter", "Device signals from BlueZ.", Double(b.deviceSignals))
            metric("bluez_discovery_starts_total", "counter", "Times discovery was started.", Double(b.discoveryStarts))
            metric("bluez_watchdog_restarts_total", "counter", "Stalled scans restarted.", Double(b.watchdogRestarts))
            metric(
                "bluez_devices_removed_total",
                "counter",
                "Devices removed from BlueZ's cache.",
                Double(b.devicesRemoved)
            )
            metric("bluez_devices", "gauge", "Devices in BlueZ's cache for the adapter.", Double(b.devices))
            metric("bluez_reconnects_total", "counter", "Reconnections to the system bus.", Double(b.reconnects))
        }
        return out
    }
}

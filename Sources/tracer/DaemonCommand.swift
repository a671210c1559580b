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
            fixed beacons are the anchors. With --source replay:FILE it ranges a recorded capture on the \
            file's own clock and exits at its end. SIGTERM and SIGINT write what is buffered and exit 0.
            """
    )

    @OptionGroup var options: StoreOptions
    @Option(help: "The site's BeaconMap file.") var map: String
    @OptionGroup var modeOptions: ModeOptions
    @Option(help: "bluez, or replay:FILE.") var source = "bluez"
    @Option(help: "The Bluetooth adapter (bluez source).") var adapter = "hci0"
    @Option(help: "Also write Herald-style contacts.csv and detection.csv here.") var logDir: String?

    func run() async throws {
        let site = try Site.load(file: map)
        let mode = modeOptions.mode
        _ = try Ranger(site: site, mode: mode)  // the map and the mode first: their errors are the useful ones
        let advertSource: any AdvertSource
        if source.hasPrefix("replay:") {
            advertSource = try ReplaySource(path: String(source.dropFirst("replay:".count)))
        } else if source == "bluez" {
            throw ValidationError("the BlueZ source is not built yet; use --source replay:FILE")
        } else {
            throw ValidationError("--source takes bluez or replay:FILE, not '\(source)'")
        }
        let daemon = Daemon(
            site: site,
            mode: mode,
            store: try options.open(),
            source: advertSource,
            csvLog: try logDir.map { try CSVLog(directory: $0) },
            logger: Logger(label: "tracer.daemon")
        )
        let task = Task { try await daemon.run() }
        let signals = [SIGINT, SIGTERM].map { sig in
            signal(sig, SIG_IGN)
            let s = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            s.setEventHandler { task.cancel() }
            s.resume()
            return s
        }
        let report = try await task.value
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
}

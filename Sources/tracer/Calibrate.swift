import ArgumentParser
import Foundation
import TracerDaemon
import TracerRanging
import TracerSite

/// `tracer calibrate`: the distance model fitted to a capture at known distances.
struct Calibrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fit the path-loss exponent and receiver offset to a capture at known distances.",
        discussion: """
            Without --truth, a kiosk (--anchor) is calibrated from the map's fixed beacons it hears: their true \
            distances are their plan distances from the kiosk. The truth file has one JSON object a line: {"from": T0, "to": T1, "deviceId": ID, "distance": METRES}. \
            Readings the truth covers are fitted to rssi − P = offset − 10·n·log10(d); then the capture is ranged \
            again through the whole pipeline (filter, 30 s windows) and each window's distance is compared with the \
            truth, before and after the fit. --write stores n and the offset in the map's settings.
            """
    )

    @Option(help: "The site's BeaconMap file.") var map: String
    @OptionGroup var modeOptions: ModeOptions
    @Option(help: "The capture, in the replay format.") var replay: String
    @Option(help: "The true distances, JSON lines (without it: the map's fixed beacons the kiosk hears).")
    var truth: String?
    @Flag(help: "Write the fit into the map's settings.") var write = false

    func run() async throws {
        let site = try Site.load(file: map)
        let mode = modeOptions.mode
        let calibrator = Calibrator(site: site, mode: mode)
        let source = try ReplaySource(path: replay)
        let result =
            if let truth {
                try await calibrator.run(replay: source, truth: try TruthSpan.load(file: truth))
            } else {
                try await calibrator.runWithFixedBeacons(replay: source)
            }
        let f = result.fit
        Output.line(
            String(
                format: "fitted to %d readings (of %d adverts): path-loss exponent n = %.2f, receiver offset %+.1f dB; "
                    + "single readings scatter %.1f dB around the fit",
                f.samples,
                result.adverts,
                f.exponent,
                f.receiverOffset,
                f.residual
            )
        )
        Output.line("distance of 30 s windows, median |estimate − truth| (median estimate), before → after the fit:")
        for d in [1.0, 3.0, 6.0] {
            guard let before = result.before.at(d), let after = result.after.at(d) else {
                Output.line(String(format: "  at %.0f m: no windows in the truth within ±0.25 m", d))
                continue
            }
            Output.line(
                String(
                    format: "  at %.0f m: %.2f m (%.2f m) → %.2f m (%.2f m), %d windows",
                    d,
                    before.medianError,
                    before.medianEstimate,
                    after.medianError,
                    after.medianEstimate,
                    after.count
                )
            )
        }
        if write {
            guard (1.0...6.0).contains(f.exponent), (-40.0...40.0).contains(f.receiverOffset) else {
                throw ValidationError(
                    String(
                        format: "not written: n = %.2f and an offset of %+.1f dB are outside what a site can use "
                            + "(n 1–6, offset ±40 dB); the readings hardly follow distance here",
                        f.exponent,
                        f.receiverOffset
                    )
                )
            }
            let stamp = ISO8601DateFormatter().string(from: Date())
            try SiteFile.updateSettings(
                file: map,
                [
                    ("pathLossExponent", String(format: "%.2f", f.exponent)),
                    ("receiverOffset", String(format: "%.1f", f.receiverOffset)),
                ],
                comment:
                    "pathLossExponent and receiverOffset: tracer calibrate, \(stamp), from \((replay as NSString).lastPathComponent) (\(f.samples) readings)"
            )
            Output.line("wrote pathLossExponent and receiverOffset into the settings of \(map)")
        }
    }
}

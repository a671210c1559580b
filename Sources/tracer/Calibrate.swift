import ArgumentParser
import Foundation
import TracerDaemon
import TracerRanging
import TracerSite
@_spi(Blocking) import TracerStore

/// `tracer calibrate`: the distance model fitted to a capture at known distances.
struct Calibrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fit a receiver's offset (and the path-loss exponent) to a capture at known distances.",
        discussion: """
            Without --truth, a kiosk (--anchor) is calibrated from the map's fixed beacons it hears: their true \
            distances are their plan distances from the kiosk. The truth file has one JSON object a line: {"from": T0, "to": T1, "deviceId": ID, "distance": METRES}. \
            Readings the truth covers are fitted to rssi − P = offset − 10·n·log10(d) by least squares. When n is \
            one a building has (1.5–4.5) that fit is used; else (a body shadowing the receiver) only the offset is \
            fitted, at the site's n (the median, so that shadowed readings move it little). Then the capture is \
            ranged again through the whole pipeline (filter, 30 s windows) and each window's distance is compared \
            with the truth, before and after the fit. --write stores the fit on the kiosk's anchor in the map \
            (receiverOffset, on top of the site's, and pathLossExponent when fitted); with --site it goes into \
            the site's settings instead.
            """
    )

    @Option(help: "The site's BeaconMap file.") var map: String
    @OptionGroup var modeOptions: ModeOptions
    @Option(help: "The capture, in the replay format.") var replay: String
    @Option(help: "The true distances, JSON lines (without it: the map's fixed beacons the kiosk hears).")
    var truth: String?
    @Flag(help: "Write the fit into the map: on the kiosk's anchor (with --site: into the site's settings).")
    var write = false
    @Flag(help: "With --write: write pathLossExponent and receiverOffset into the site's settings, for every receiver.")
    var site = false
    @Flag(help: "Fit only the receiver's offset, at the site's path-loss exponent.") var fixedExponent = false

    func run() async throws {
        let site = try Site.load(file: map)
        let mode = modeOptions.mode
        let calibrator = Calibrator(site: site, mode: mode, fitsExponent: !fixedExponent)
        let source = try ReplaySource(path: replay)
        let result =
            if let truth {
                try await calibrator.run(replay: source, truth: try TruthSpan.load(file: truth))
            } else {
                try await calibrator.runWithFixedBeacons(replay: source)
            }
        let f = result.fit
        if let free = result.free {
            Output.line(
                String(
                    format:
                        "least squares over %d readings (of %d adverts): path-loss exponent n = %.2f, offset %+.1f dB%@",
                    free.samples,
                    result.adverts,
                    free.exponent,
                    free.receiverOffset,
                    free.isPlausible
                        ? ""
                        : " (no building has that n: a body shadows this receiver, so its readings hardly fall with distance)"
                )
            )
        }
        Output.line(
            String(
                format: "fitted: receiver offset %+.1f dB at n = %.2f%@; single readings scatter %.1f dB around it",
                f.receiverOffset,
                f.exponent,
                result.fittedExponent ? " (both fitted)" : " (the receiver's n so far)",
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
            let stamp = Timestamp.now().iso8601Seconds
            let note =
                "tracer calibrate, \(stamp), from \((replay as NSString).lastPathComponent) (\(f.samples) readings)"
            if self.site {
                guard result.fittedExponent else {
                    throw ValidationError(
                        String(
                            format:
                                "not written: n = %.2f is outside what a building has (1.5–4.5); the readings hardly "
                                + "follow distance here. Without --site the receiver's offset is written on its anchor",
                            result.free?.exponent ?? 0
                        )
                    )
                }
                try SiteFile.updateSettings(
                    file: map,
                    [
                        ("pathLossExponent", String(format: "%.2f", f.exponent)),
                        ("receiverOffset", String(format: "%.1f", f.receiverOffset)),
                    ],
                    comment: "pathLossExponent and receiverOffset: \(note)"
                )
                Output.line("wrote pathLossExponent and receiverOffset into the settings of \(map)")
                return
            }
            guard case .gateway(let kiosk) = mode else {
                throw ValidationError("--write stores a kiosk's fit: calibrate it with --anchor KIOSK (or add --site)")
            }
            // The kiosk's own offset, on top of the site's: with a truth walk (people's badges)
            // what the site's offset leaves; from fixed beacons (which no body shadows) all of it.
            let own = truth == nil ? f.receiverOffset : f.receiverOffset - site.ranging.receiverOffset
            var values = [(key: "receiverOffset", value: String(format: "%.1f", own))]
            if result.fittedExponent {
                values.append((key: "pathLossExponent", value: String(format: "%.2f", f.exponent)))
            }
            try SiteFile.updateAnchor(file: map, key: kiosk, values, comment: "fit of \(kiosk): \(note)")
            let written = values.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
            Output.line("wrote \(written) on anchor \(kiosk) in \(map)")
        }
    }
}

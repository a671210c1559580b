import ArgumentParser
import Foundation
import TracerModel
import TracerSite
@_spi(Blocking) import TracerStore

/// `tracer site`: what the site server knows of the site as a whole.
struct SiteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "site",
        abstract: "The site as a whole: its calibration.",
        subcommands: [Calibration.self]
    )

    /// `tracer site calibration`: every kiosk's receiver as the kiosks' hearings of each other fit it.
    struct Calibration: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Every kiosk's receive offset, fitted from what the kiosks hear of each other, and those that moved.",
            discussion: """
                Kiosks the map gives a uuid, major and minor advertise as fixed beacons (tracer \
                advertise beside their daemon); every kiosk stores what it hears of the others and \
                of the map's fixed beacons, and the site's radio is fitted from the last hour of it: \
                each kiosk's receive offset (dB to add to its readings, with one standard error), \
                its transmit offset, the path-loss exponent and an interior wall's loss. A kiosk \
                whose offset moved 3 dB or more in the last half hour against the three hours before \
                is named (re-mounted, turned, in a new enclosure). Run it on the site server's store.
                --write stores the fit in the map file given with --map: each kiosk's receiverOffset \
                on its anchor (not a kiosk nothing was heard of, nor one that moved, nor one whose \
                own offset in the map the fit knows to no better than ±3 dB), the exponent \
                and the wall's loss in its settings; publish the map (tracer map publish) and the \
                kiosks range with it and the server places people with it. --exponent map holds \
                the exponent at the map's: the offsets that kiosks following the fit range with \
                (with --write, only those are written).
                """
        )

        @OptionGroup var options: StoreOptions
        @Option(help: "The site's BeaconMap (default: the site published in the store).") var map: String?
        @Option(help: "Fit up to this time: \(When.examples) (default: now, or the last hearing stored if earlier).")
        var at: String?
        @Option(
            help:
                "fitted (the default): the path-loss exponent fitted with the rest; map: held at the map's, as the kiosks that follow the fit range (with --write, only their offsets are written)."
        )
        var exponent: String?
        @Flag(help: "JSON instead of a table.") var json = false
        @Flag(help: "Write the fit into the map file given with --map (then publish it).") var write = false

        func run() throws {
            if write, map == nil {
                throw ValidationError(
                    "--write edits a map file: give --map FILE (the file the site was published from)"
                )
            }
            guard exponent == nil || exponent == "fitted" || exponent == "map" else {
                throw ValidationError("--exponent takes fitted or map, not '\(exponent!)'")
            }
            let store = try options.open()
            guard let site = try SiteResolution.site(map: map, store: store, publish: false) else {
                throw ValidationError(
                    "no site is published in \(options.display): give --map FILE (tracer map publish FILE)"
                )
            }
            guard
                site.anchors.contains(where: { $0.kind == .kiosk && $0.identity != nil })
                    || site.anchors.contains(where: { $0.kind == .beacon })
            else {
                throw ValidationError(
                    "\(site.file): no kiosk advertises and there is no fixed beacon, so there is nothing to calibrate from: give kiosks a uuid, major and minor and run tracer advertise beside each daemon (docs/kiosks.md)"
                )
            }
            let now = Date().timeIntervalSince1970
            let time: Double
            if let at {
                guard let t = When.parse(at) else { throw ValidationError("--at takes \(When.examples), not '\(at)'") }
                time = t.seconds
            } else {
                guard let last = try store.read({ try CalibrationReport.latest(in: $0) }) else {
                    throw ValidationError(
                        "no kiosk in \(options.display) has heard another anchor of the map yet: is tracer advertise running beside each kiosk's daemon?"
                    )
                }
                time = min(now, last)
            }
            var held: Double?
            if exponent == "map", case .logDistance(let n) = site.ranging.model { held = n }
            guard
                let report = try store.read({
                    try CalibrationReport.make(in: $0, site: site, at: time, exponent: held)
                })
            else {
                throw ValidationError(
                    "no kiosk in \(options.display) heard another anchor of the map in the hour before \(Timestamp(seconds: time).iso8601Seconds)"
                )
            }
            Output.line(json ? Self.json(report) : Self.table(report))
            if write, let map {
                // Beside --json's document, not in it.
                let said = try Self.write(report, site: site, to: map, offsetsOnly: held != nil)
                if json { Output.error(said) } else { Output.line(said) }
            }
        }

        /// Stores the fit in the map file (`--write`) and says what it wrote. A kiosk's offset goes
        /// on its anchor whole: kiosks and fixed beacons carry no body, so what the kiosks hear of
        /// each other is the receiver's own error, and the site's `receiverOffset` (what worn badges
        /// lose besides) stays on top of it, as with a fit from fixed beacons (`tracer calibrate`).
        /// A kiosk keeps what it had when it heard nothing and was heard by none, when it moved
        /// within the fit's hour (its hour mixes two mountings), or when the map gives it an offset
        /// (a walk's) and the fit knows it to no better than `looseFit` (few links: the prior's
        /// 0 dB, mostly). A kiosk whose anchor has an exponent of its own keeps it, and is named.
        /// With `offsetsOnly` (the exponent held at the map's), the settings stay as they are.
        static func write(
            _ r: CalibrationReport,
            site: Site,
            to map: String,
            offsetsOnly: Bool = false
        ) throws -> String {
            let f = r.fit
            let stamp = Timestamp(seconds: f.to).iso8601Seconds
            let moved = Set(r.changes.map(\.key))
            var anchors: [(key: String, values: [(key: String, value: String)], comment: String)] = []
            var skipped: [String] = []
            var ownExponent: [String] = []
            for k in f.kiosks {
                let anchor = site.anchor(k.key)
                let loose = k.uncertainty > Self.looseFit && anchor?.receiverOffset != nil
                guard k.heard + k.heardBy > 0, !moved.contains(k.key), !loose else {
                    skipped.append(k.key)
                    continue
                }
                if let n = anchor?.pathLossExponent, abs(n - f.exponent) >= 0.005 {
                    ownExponent.append("\(k.key) (\(String(format: "%.2f", n)))")
                }
                anchors.append(
                    (
                        k.key,
                        [
                            (
                                "receiverOffset",
                                String(format: "%.1f", Self.within(k.receiverOffset, Anchor.receiverOffsets))
                            )
                        ],
                        "receiverOffset: tracer site calibration to \(stamp), ± \(String(format: "%.1f", k.uncertainty)) dB"
                    )
                )
            }
            // What a map takes (the loader's bounds): a fit is a least-squares estimate, and one
            // near a bound can fall past it (a wall of −0.1 ± 0.7 dB where walls barely stop
            // anything), which the map would then refuse to load.
            let exponent = Self.within(f.exponent, Anchor.pathLossExponents)
            let wallLoss = Self.within(f.wallLoss, ExposureSettings.wallLosses)
            try SiteFile.update(
                file: map,
                anchors: anchors,
                settings: offsetsOnly
                    ? []
                    : [
                        ("pathLossExponent", String(format: "%.2f", exponent)),
                        ("wallLoss", String(format: "%.1f", wallLoss)),
                    ],
                comment: "pathLossExponent and wallLoss: tracer site calibration to \(stamp), \(f.links) links"
            )
            var said =
                "wrote the receiverOffset of \(anchors.count) kiosks\(offsetsOnly ? "" : ", pathLossExponent and wallLoss") into \(map): "
                + "publish it (tracer map publish \(map))"
            if !skipped.isEmpty {
                said +=
                    "\nkept as they were (heard nothing, moved in the hour, or an offset of their own the fit knows less well): "
                    + skipped.joined(separator: ", ")
            }
            for (name, fitted, written, format) in [
                ("path-loss exponent", f.exponent, exponent, "%.2f"), ("wall loss", f.wallLoss, wallLoss, "%.1f dB"),
            ]
            where !offsetsOnly && written != fitted {
                said +=
                    "\nthe fit's \(name), \(String(format: format, fitted)), is written as the nearest a map takes: "
                    + String(format: format, written)
            }
            let writtenKeys = Set(anchors.map(\.key))
            let bounded = f.kiosks.filter {
                writtenKeys.contains($0.key) && !Anchor.receiverOffsets.contains($0.receiverOffset)
            }.map(\.key)
            if !bounded.isEmpty {
                said +=
                    "\nwritten at the nearest receiverOffset a map takes (-40 or 40 dB; their fit is past it): "
                    + bounded.joined(separator: ", ")
            }
            // Their offsets were fitted at the site's exponent, which their own overrides: say so
            // rather than drop what the operator (or a walk) put there.
            if !ownExponent.isEmpty {
                said +=
                    "\nrange with a pathLossExponent of their own, though their offsets were fitted at "
                    + String(format: "%.2f", f.exponent) + " (take it off their anchors to use the fit): "
                    + ownExponent.joined(separator: ", ")
            }
            return said
        }

        /// dB: a fit looser than this does not replace an offset the map gives a kiosk.
        static let looseFit = 3.0

        /// `x` brought into `range`.
        static func within(_ x: Double, _ range: ClosedRange<Double>) -> Double {
            min(max(x, range.lowerBound), range.upperBound)
        }

        static func signed(_ x: Double) -> String {
            let r = (x * 10).rounded() / 10
            return (r > 0 ? "+" : r < 0 ? "−" : "") + String(format: "%.1f", abs(r))
        }

        static func table(_ r: CalibrationReport) -> String {
            let f = r.fit
            func fixed(_ x: Double, _ places: Int) -> String { String(format: "%.\(places)f", x) }
            let from = Timestamp(seconds: f.from).iso8601Seconds
            let to = Timestamp(seconds: f.to).iso8601Seconds
            let radio =
                "path-loss exponent \(fixed(f.exponent, 2)) ± \(fixed(f.exponentUncertainty, 2)), a wall "
                + "\(fixed(f.wallLoss, 1)) ± \(fixed(f.wallLossUncertainty, 1)) dB, links' spread \(fixed(f.residual, 1)) dB"
            var lines = ["Fitted \(from) – \(to) from \(f.hearings) hearings on \(f.links) links: " + radio, ""]
            let width = max(5, f.kiosks.map(\.key.count).max() ?? 5)
            func pad(_ s: String, _ n: Int) -> String { s + String(repeating: " ", count: max(0, n - s.count)) }
            lines.append(pad("kiosk", width) + "  receive offset   transmit  heard  heard by")
            for k in f.kiosks {
                let offset =
                    k.heard + k.heardBy == 0
                    ? "—" : "\(signed(k.receiverOffset)) ± \(String(format: "%.1f", k.uncertainty)) dB"
                let tx = k.heardBy == 0 ? "—" : "\(signed(k.transmitOffset)) dB"
                lines.append(
                    pad(k.key, width) + "  " + pad(offset, 17) + pad(tx, 10) + pad("\(k.heard)", 7) + "\(k.heardBy)"
                )
            }
            for k in f.kiosks where k.heard + k.heardBy == 0 {
                lines.append(
                    "\(k.key): heard nothing and was heard by no kiosk: is its adapter up, and tracer advertise running?"
                )
            }
            for c in r.changes {
                lines.append(
                    "\(c.key) reads \(String(format: "%.1f", abs(c.shift))) ± \(String(format: "%.1f", c.uncertainty)) dB "
                        + (c.shift > 0 ? "lower" : "higher")
                        + " in the last half hour than in the three hours before: re-mounted, turned or covered?"
                )
            }
            return lines.joined(separator: "\n")
        }

        static func json(_ r: CalibrationReport) -> String {
            func n(_ x: Double, _ places: Double = 100) -> Value { .double((x * places).rounded() / places) }
            let f = r.fit
            let value: Value = .map([
                "from": .string(Timestamp(seconds: f.from).iso8601Seconds),
                "to": .string(Timestamp(seconds: f.to).iso8601Seconds),
                "hearings": .integer(Int64(f.hearings)), "links": .integer(Int64(f.links)),
                "exponent": n(f.exponent), "exponentUncertainty": n(f.exponentUncertainty),
                "wallLoss": n(f.wallLoss), "wallLossUncertainty": n(f.wallLossUncertainty),
                "residual": n(f.residual),
                "kiosks": .array(
                    f.kiosks.map {
                        .map([
                            "key": .string($0.key), "receiverOffset": n($0.receiverOffset),
                            "uncertainty": n($0.uncertainty), "transmitOffset": n($0.transmitOffset),
                            "heard": .integer(Int64($0.heard)), "heardBy": .integer(Int64($0.heardBy)),
                        ])
                    }
                ),
                "changes": .array(
                    r.changes.map {
                        .map(["key": .string($0.key), "shift": n($0.shift), "uncertainty": n($0.uncertainty)])
                    }
                ),
            ])
            return JSON.string(value, pretty: true)
        }
    }
}

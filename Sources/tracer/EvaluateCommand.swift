import ArgumentParser
import Foundation
import TracerColocation
import TracerExposure
import TracerModel
import TracerReports
import TracerSimulation
import TracerSite
@_spi(Blocking) import TracerStore

/// `tracer evaluate`: what tracer flagged and ranged, against a simulation's truth.
struct EvaluateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evaluate",
        abstract: "Compare exposures and ranging in a store filled from a simulation's replays with its truth.",
        discussion: """
            Reporters are chosen from the simulation's people by its seed (--reporters) or named \
            (--reporter). A reporter with an accepted report in the store keeps it; one without gets a \
            simulated accepted report, collected at the simulation's end. Each report is flagged \
            (again) under the policy, then the flagged exposures are compared with the true pairs: \
            precision and recall overall and by room, and Herald's detection rate, continuity and \
            distance error. Pictures go to --pictures (SVG): distance-error.svg, timeline.svg (the \
            first reporter's day), floorplan.svg, positions.svg (where the reporter with the most \
            positions was placed against where they were).
            """
    )

    @OptionGroup var options: StoreOptions
    @Option(help: "The directory tracer simulate wrote.") var sim: String
    @Option(help: "The BeaconMap (default: the one the simulation ran on).") var map: String?
    @Option(help: "How many reporters to draw (all: everyone).") var reporters = "10"
    @Option(help: "A reporter's device id (repeatable; overrides --reporters).") var reporter: [String] = []
    @Option(
        help:
            "The separation rule (default: the map's): \(ExposurePolicy.Separation.allCases.map(\.rawValue).joined(separator: ", "))."
    )
    var separation: String?
    @Option(
        help:
            "The geometric rule's threshold: the chance of being within the radius that flags (default: the map's, else 0.3)."
    )
    var likelihood: Double?
    @Option(
        help:
            "Under positions, the pair decision's threshold: the chance over the window that flags (default: the map's, else 0.15)."
    )
    var chance: Double?
    @Option(
        help: ArgumentHelp(
            "Write every stretch of evidence the pair decision weighed, with its chance and whether the pair was truly near, as JSON lines.",
            valueName: "file"
        )
    )
    var evidence: String?
    @Option(help: "Under the geometric rule, leave out windows another kiosk heard closer: on (default) or off.")
    var attribution: String?
    @Option(
        help: "Under the geometric rule, judge pairs by positions where several kiosks heard both: on (default) or off."
    )
    var positions: String?
    @Option(help: "Where to draw the pictures (default: SIM/eval).") var pictures: String?
    @Flag(help: "Print the figures as JSON.") var json = false

    func run() throws {
        let truth = try GroundTruth.load(directory: sim)
        let site = try Site.load(file: map ?? truth.map)
        var policy = ExposurePolicy(site: site)
        if let separation {
            guard let rule = ExposurePolicy.Separation(rawValue: separation) else {
                throw ValidationError(
                    "--separation takes \(ExposurePolicy.Separation.allCases.map(\.rawValue).joined(separator: ", ")), not '\(separation)'"
                )
            }
            policy.separation = rule
        }
        if let likelihood {
            guard likelihood > 0, likelihood <= 1 else {
                throw ValidationError("--likelihood takes a chance above 0, at most 1")
            }
            policy.likelihood = likelihood
        }
        if let chance {
            guard chance > 0, chance <= 1 else { throw ValidationError("--chance takes a chance above 0, at most 1") }
            policy.chance = chance
        }
        if let attribution {
            guard ["on", "off"].contains(attribution) else { throw ValidationError("--attribution takes on or off") }
            policy.attribution = attribution == "on"
        }
        if let positions {
            guard ["on", "off"].contains(positions) else { throw ValidationError("--positions takes on or off") }
            policy.positions = positions == "on"
        }
        let chosen: [String]
        if !reporter.isEmpty {
            for r in reporter where truth.segments[r] == nil {
                throw ValidationError("--reporter \(r): nobody in \(sim) has that device id")
            }
            chosen = reporter
        } else if reporters == "all" {
            chosen = Evaluation.reporters(truth, count: .max)
        } else if let n = Int(reporters), n > 0 {
            chosen = Evaluation.reporters(truth, count: n)
        } else {
            throw ValidationError("--reporters takes a number above 0 or all, not '\(reporters)'")
        }

        let store = try options.open()
        let engine = ExposureEngine(policy: policy, keepsEvidence: evidence != nil)
        var weighed: [(reporter: String, evidence: Evidence, chance: Double)] = []
        var reportOf: [String: String] = [:]
        var flagging: [Double] = []
        for (i, device) in chosen.enumerated() {
            Output.progress("evaluate: flagging reports", i, chosen.count)
            let id = try Self.report(for: device, at: truth.end, in: store)
            let began = ContinuousClock.now
            let result = try store.write { try engine.flag(reportID: id, in: $0) }
            weighed += zip(result.evidence, result.chances).map { (device, $0, $1) }
            flagging.append((ContinuousClock.now - began) / .milliseconds(1))
            reportOf[id] = device
        }
        flagging.sort()
        Output.progress("evaluate: flagging reports", chosen.count, chosen.count)
        Output.endProgress()

        var exposures: [FlaggedExposure] = []
        // In report order, so that sums over exposures (the reliability table's mean chances)
        // are the same from run to run (a dictionary's order is not).
        for (id, device) in reportOf.sorted(by: { $0.key < $1.key }) {
            for doc in try store.getDocuments(Exposure.of(report: id)) {
                guard let e = try? Exposure(doc) else { continue }
                exposures.append(
                    FlaggedExposure(
                        reporter: device,
                        device: e.deviceID,
                        anchor: e.beaconKey,
                        from: e.from.seconds,
                        to: e.to.seconds,
                        chance: e.chance
                    )
                )
            }
        }
        var observed: [ObservedWindow] = []
        for doc in try store.getDocuments(Query.interactions) {
            guard let i = try? Interaction(doc) else { continue }
            observed.append(
                ObservedWindow(
                    device: i.deviceID,
                    anchor: i.anchor,
                    start: i.start.seconds,
                    end: i.end.seconds,
                    distance: i.distance
                )
            )
        }
        guard !observed.isEmpty else {
            throw ValidationError(
                "\(options.display): no interactions: run tracer daemon on the replays in \(sim)/replays first"
            )
        }
        var e = Evaluation(truth: truth, site: site, reporters: chosen, exposures: exposures, observed: observed)
        if let evidence { try Self.write(weighed, truth: truth, to: evidence) }
        // The reporters' own positions and rooms (everyone's with --reporters all).
        let reporters = Set(chosen)
        // Placed as flagging places them: with the kiosks' own calibrations in the store.
        let plan = Plan(site: site)
        let offsets = try store.read { try ExposureEngine.kioskOffsets(for: plan, in: $0) }
        let (positions, rooms) = Self.positions(
            observed.filter { reporters.contains($0.device) },
            site: site,
            plan: plan.calibrated(offsets),
            slot: policy.slot
        )
        e.position(positions, truth: truth)
        e.rooms(rooms, truth: truth)
        e.nearestKioskRoom(observed, site: site, slot: policy.slot, window: policy.window)
        e.sortFalseFlags(exposures, truth: truth)

        let dir = pictures ?? (sim as NSString).appendingPathComponent("eval")
        let drawn = try Drawing.write(
            evaluation: e,
            truth: truth,
            site: site,
            exposures: exposures,
            positions: positions,
            to: dir
        )
        if json {
            Output.line(Self.json(e, policy: policy, pictures: drawn, flagging: flagging))
        } else {
            Self.table(e, policy: policy, truth: truth).forEach(Output.line)
            Output.line(
                "flagging: \(flagging.count) report\(flagging.count == 1 ? "" : "s"), median "
                    + String(
                        format: "%.0f ms, worst %.0f ms",
                        flagging.isEmpty ? 0 : flagging[flagging.count / 2],
                        flagging.last ?? 0
                    )
            )
            Output.line("pictures: " + drawn.joined(separator: " "))
        }
    }

    /// Every badge's position in each room where two or more of its kiosks heard it in a slot,
    /// and the room it was attributed to in every slot a kiosk heard it (the point unused).
    static func positions(
        _ observed: [ObservedWindow],
        site: Site,
        plan: Plan,
        slot: Double
    ) -> (positions: [Evaluation.PositionEstimate], rooms: [Evaluation.PositionEstimate]) {
        let positioning = Positioning(plan: plan, slot: slot)
        let roomOf = Dictionary(site.anchors.map { ($0.key, $0.room) }, uniquingKeysWith: { a, _ in a })
        var byDevice: [String: [Window]] = [:]
        for o in observed {
            guard let d = o.distance else { continue }
            byDevice[o.device, default: []].append(
                Window(device: o.device, anchor: o.anchor, start: o.start, end: o.end, distance: d)
            )
        }
        var out: [Evaluation.PositionEstimate] = []
        var rooms: [Evaluation.PositionEstimate] = []
        for device in byDevice.keys.sorted() {
            let windows = byDevice[device]!
            let track = positioning.rooms(windows, device: device)
            for step in track.steps {
                guard let room = track.likeliest(step) else { continue }
                rooms.append(.init(device: device, room: room, from: step.from, to: step.to, point: Point(0, 0)))
            }
            for room in Set(windows.compactMap { roomOf[$0.anchor] }).sorted() {
                for (s, fix) in positioning.track(windows, device: device, room: room, least: 2) {
                    out.append(
                        .init(
                            device: device,
                            room: room,
                            from: Double(s) * slot,
                            to: Double(s + 1) * slot,
                            point: fix.mean
                        )
                    )
                }
            }
        }
        return (out, rooms)
    }

    /// Each stretch of evidence as a JSON line: its features by name (`PairModel.names`), its
    /// chance, whether a pair counted on its own (`counted`), and `trulyNear`: whether the truth
    /// has the two within the radius, in its room, within the window of the stretch.
    static func write(
        _ weighed: [(reporter: String, evidence: Evidence, chance: Double)],
        truth: GroundTruth,
        to path: String
    ) throws {
        var out = ""
        for (reporter, e, chance) in weighed {
            let near = truth.near(reporter, e.device, room: e.room, from: e.from, to: e.to)
            var o: [String: Any] = [
                "reporter": reporter, "device": e.device, "room": e.room, "from": e.from, "to": e.to,
                "chance": chance, "trulyNear": near, "counted": e.counted,
            ]
            for (name, x) in zip(PairModel.names, PairModel.features(e)) { o[name] = x }
            let data = try JSONSerialization.data(withJSONObject: o, options: [.sortedKeys])
            out += String(decoding: data, as: UTF8.self) + "\n"
        }
        do { try out.write(toFile: path, atomically: true, encoding: .utf8) } catch {
            throw ValidationError("--evidence \(path): cannot write it (\(error.localizedDescription))")
        }
    }

    /// The reporter's accepted report, or a simulated one written for it.
    static func report(for device: String, at collected: Double, in store: DocumentStore) throws -> String {
        let existing = try store.getDocuments(Report.of(device: device))
        if let doc = existing.first(where: { Report.is($0, .accepted) }) { return doc.id }
        let id = "sim-" + String(Digest.sha256Hex(device).prefix(16))
        let report = Report(
            id: id,
            deviceID: device,
            status: .accepted,
            collectedAt: Timestamp(seconds: collected),
            imageSHA256: "",
            evidence: [["simulated": true]]
        )
        try store.set(try Collections.report(id), report.data)
        return id
    }

    static func percent(_ x: Double?) -> String {
        x.map { String(format: "%.3f", $0) } ?? "-"
    }

    static func table(_ e: Evaluation, policy: ExposurePolicy, truth: GroundTruth) -> [String] {
        var lines: [String] = []
        lines.append(
            "exposures: \(e.reporters.count) reporter\(e.reporters.count == 1 ? "" : "s"), rule \(policy.separation.rawValue), "
                + "≤ \(Int(policy.radius)) m within \(Int(policy.window / 60)) min (σ \(truth.noise) dB, \(Int((truth.loss * 100).rounded()))% lost)"
        )
        lines.append("  room                  true pos  false pos  false neg  precision  recall")
        func row(_ name: String, _ c: Counts) -> String {
            name.padding(toLength: 20, withPad: " ", startingAt: 0)
                + String(format: "  %8d  %9d  %9d", c.truePositives, c.falsePositives, c.falseNegatives)
                + "  " + percent(c.precision).leftPad(9) + "  " + percent(c.recall).leftPad(6)
        }
        for room in e.byRoom.keys.sorted() { lines.append("  " + row(room, e.byRoom[room]!)) }
        lines.append("  " + row("all (per device)", e.overall))
        if let r = e.roomRule { lines.append("  " + row("nearest-kiosk room", r)) }
        if !e.reliability.isEmpty {
            lines.append(
                "  chance given → truly near: "
                    + e.reliability.map {
                        String(
                            format: "%.1f–%.1f: %.2f → %.2f (%d)",
                            $0.low,
                            $0.low + 0.1,
                            $0.stated,
                            $0.observed,
                            $0.count
                        )
                    }
                    .joined(separator: "; ")
            )
        }
        if !e.falseFlags.isEmpty {
            let names = [
                "sameRoomFarther": "in the room, farther", "otherRoom": "in another room",
                "unmonitored": "where no kiosk is", "away": "gone",
            ]
            lines.append(
                "  false flags: "
                    + e.falseFlags.sorted { $0.key < $1.key }.map { "\($0.value) \(names[$0.key] ?? $0.key)" }
                    .joined(separator: ", ")
            )
        }
        lines.append(
            "ranging: detection \(percent(e.detectionRate)) of \(e.stays) stays; continuity \(percent(e.continuity)) of \(e.windows) 30 s windows; "
                + "\(e.throughWalls) windows heard through a wall"
        )
        lines.append("  true distance   windows  median |error|  p90 |error|  median error")
        for d in e.distanceErrors {
            lines.append(
                "  \(Int(d.nominal)) m ± 0.5".padding(toLength: 16, withPad: " ", startingAt: 0)
                    + String(
                        format: "%8d  %12.2f m  %9.2f m  %+10.2f m",
                        d.count,
                        d.medianAbsolute,
                        d.p90Absolute,
                        d.medianSigned
                    )
            )
        }
        let p = e.positionError
        lines.append(
            "positions (the reporters', 2+ kiosks, badge still): \(p.count) slots, error median \(String(format: "%.2f", p.median)) m, "
                + "p90 \(String(format: "%.2f", p.p90)) m"
        )
        lines.append(
            "rooms: \(percent(e.roomAttribution)) of the reporters' \(Int(e.roomSeconds / 60)) badge-minutes heard in a kiosk's room attributed to it; "
                + "\(percent(e.placeAttribution)) of their \(Int(e.placeSeconds / 60)) heard anywhere on the map (a corridor no kiosk covers included)"
        )
        return lines
    }

    /// `flagging`: milliseconds each report took to flag, in order.
    static func json(_ e: Evaluation, policy: ExposurePolicy, pictures: [String], flagging: [Double]) -> String {
        func counts(_ c: Counts) -> [String: Any] {
            [
                "truePositives": c.truePositives, "falsePositives": c.falsePositives,
                "falseNegatives": c.falseNegatives,
                "precision": c.precision ?? NSNull(), "recall": c.recall ?? NSNull(),
            ]
        }
        let o: [String: Any] = [
            "reporters": e.reporters, "separation": policy.separation.rawValue, "likelihood": policy.likelihood,
            "attribution": policy.attribution, "overall": counts(e.overall),
            "byRoom": e.byRoom.mapValues(counts), "detectionRate": e.detectionRate ?? NSNull(),
            "continuity": e.continuity ?? NSNull(), "stays": e.stays, "windows": e.windows,
            "positions": policy.positions,
            "positionError": [
                "count": e.positionError.count, "median": e.positionError.median, "p90": e.positionError.p90,
                "wrongRoom": e.positionError.wrongRoom,
            ],
            "roomAttribution": e.roomAttribution ?? NSNull(), "roomSeconds": e.roomSeconds,
            "roomsWrong": e.roomsWrong,
            "placeAttribution": e.placeAttribution ?? NSNull(), "placeSeconds": e.placeSeconds,
            "roomRule": e.roomRule.map { counts($0) as Any } ?? NSNull(), "falseFlags": e.falseFlags,
            "distanceError": e.distanceErrors.map {
                [
                    "nominal": $0.nominal, "count": $0.count, "medianAbsolute": $0.medianAbsolute,
                    "p90Absolute": $0.p90Absolute,
                    "medianSigned": $0.medianSigned,
                ]
            },
            "pictures": pictures,
            "chance": policy.chance,
            "reliability": e.reliability.map {
                ["low": $0.low, "count": $0.count, "stated": $0.stated, "observed": $0.observed, "near": $0.near]
            },
            "flagMilliseconds": [
                "median": flagging.isEmpty ? 0 : flagging[flagging.count / 2], "max": flagging.last ?? 0,
            ],
        ]
        let data = (try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}

extension String {
    func leftPad(_ n: Int) -> String {
        count >= n ? self : String(repeating: " ", count: n - count) + self
    }
}

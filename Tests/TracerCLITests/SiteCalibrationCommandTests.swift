import Foundation
import Testing
import TracerTesting

/// `tracer site calibration` by command: a random site whose kiosks advertise, simulated with one
/// kiosk re-mounted, every kiosk's replay ranged into one store, and the site's fit read back.
@Suite struct SiteCalibrationCommandTests {
    let dir = TemporaryDirectory("tracer-site-calibration")

    func tracer(_ arguments: [String]) async throws -> TracerProcess.Result {
        try await TracerProcess.running(arguments)
    }

    @Test func theKiosksHearingsFitTheSiteAndNameTheReMountedKiosk() async throws {
        // Site 5, its kiosk-1 turned 6 dB down after 3 hours.
        let sim = try await tracer([
            "simulate", "--random-site", "5", "--people", "4", "--hours", "3.5", "--start", "2026-11-23T08:00:00Z",
            "--out", dir.file("sim"), "--remount", "kiosk-1@180=-6",
        ])
        #expect(sim.status == 0, "\(sim.stderr)")
        let map = dir.file("sim/map.yaml")
        let store = dir.file("site.sqlite")
        let manifest =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: dir.file("sim/manifest.json")))
            )
            as! [String: Any]
        let kiosks = manifest["kiosks"] as! [[String: Any]]
        for k in kiosks {
            let anchor = k["anchor"] as! String
            let r = try await tracer([
                "daemon", "--map", map, "--anchor", anchor, "--source",
                "replay:\(dir.file("sim/replays/\(anchor).jsonl"))",
                "--store", store,
            ])
            #expect(r.status == 0, "\(r.stderr)")
        }

        // Before it, nothing to fit; the first hour, every kiosk heard and near its truth.
        let early = try await tracer([
            "site", "calibration", "--store", store, "--map", map, "--at", "2026-11-23T07:00:00Z",
        ])
        #expect(early.status == 1 && early.stderr.hasPrefix("Error: no kiosk in \(store) heard another anchor"))
        let first = try await tracer([
            "site", "calibration", "--store", store, "--map", map, "--at", "2026-11-23T09:00:00Z", "--json",
        ])
        #expect(first.status == 0, "\(first.stderr)")
        let fit = try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as! [String: Any]
        let fitted = Dictionary(
            uniqueKeysWithValues: (fit["kiosks"] as! [[String: Any]]).map {
                (
                    $0["key"] as! String,
                    (($0["receiverOffset"] as! NSNumber).doubleValue, ($0["uncertainty"] as! NSNumber).doubleValue)
                )
            }
        )
        #expect(fitted.count == kiosks.count)
        var inside = 0
        for k in kiosks {
            let truth = -(k["receiverError"] as! NSNumber).doubleValue
            let (offset, sd) = fitted[k["anchor"] as! String]!
            if abs(offset - truth) <= 2 * sd + 0.5 { inside += 1 }
        }
        #expect(inside >= kiosks.count - 1, "\(fitted) against \(kiosks)")
        #expect((fit["changes"] as! [Any]).isEmpty)

        // --write: the first hour's fit into a copy of the map, which still loads; each kiosk's
        // offset on its anchor, the exponent and the walls in the settings, as the JSON gave them.
        let copy = dir.file("written.yaml")
        try FileManager.default.copyItem(atPath: map, toPath: copy)
        let wrote = try await tracer([
            "site", "calibration", "--store", store, "--map", copy, "--at", "2026-11-23T09:00:00Z", "--write",
        ])
        #expect(wrote.status == 0, "\(wrote.stderr)")
        #expect(wrote.stdout.contains("wrote the receiverOffset of \(kiosks.count) kiosks"), "\(wrote.stdout)")
        func written(_ file: String) throws -> (kiosks: [String: Double], settings: [String: Double]) {
            let text = try String(contentsOfFile: file, encoding: .utf8)
            var kiosks: [String: Double] = [:]
            var settings: [String: Double] = [:]
            for line in text.split(separator: "\n").map(String.init) {
                if let key = line.firstMatch(of: /key: ([^,]+), kind: kiosk/)?.1,
                    let offset = line.firstMatch(of: /receiverOffset: (-?[0-9.]+)/)?.1
                {
                    kiosks[String(key)] = Double(offset)
                } else if let m = line.firstMatch(of: /^  (pathLossExponent|wallLoss): ([0-9.]+)$/) {
                    settings[String(m.1)] = Double(m.2)
                }
            }
            return (kiosks, settings)
        }
        let stored = try written(copy)
        #expect(stored.kiosks.count == kiosks.count, "\(stored)")
        for (key, (offset, _)) in fitted {
            #expect(abs(stored.kiosks[key]! - offset) <= 0.051, "\(key): \(stored.kiosks[key]!) against \(offset)")
        }
        #expect(abs(stored.settings["pathLossExponent"]! - (fit["exponent"] as! NSNumber).doubleValue) <= 0.0051)
        #expect(abs(stored.settings["wallLoss"]! - (fit["wallLoss"] as! NSNumber).doubleValue) <= 0.051)
        let check = try await tracer(["map", "check", copy])
        #expect(check.status == 0, "\(check.stderr)")

        // --exponent map: the fit the kiosks follow, at the map's exponent; written, the offsets
        // only, and the settings as they were.
        let heldCopy = dir.file("held.yaml")
        try FileManager.default.copyItem(atPath: map, toPath: heldCopy)
        let held = try await tracer([
            "site", "calibration", "--store", store, "--map", heldCopy, "--at", "2026-11-23T09:00:00Z",
            "--exponent", "map", "--json", "--write",
        ])
        #expect(held.status == 0, "\(held.stderr)")
        let heldFit = try JSONSerialization.jsonObject(with: Data(held.stdout.utf8)) as! [String: Any]
        // A random site's map gives no exponent: the default, 2.
        #expect((heldFit["exponent"] as! NSNumber).doubleValue == 2, "\(heldFit["exponent"]!)")
        #expect(held.stderr.contains("wrote the receiverOffset of \(kiosks.count) kiosks into "), "\(held.stderr)")
        let heldWritten = try written(heldCopy)
        #expect(heldWritten.kiosks.count == kiosks.count && heldWritten.settings.isEmpty, "\(heldWritten)")
        let badExponent = try await tracer(["site", "calibration", "--store", store, "--exponent", "2.2"])
        #expect(badExponent.status == 1 && badExponent.stderr.hasPrefix("Error: --exponent takes fitted or map"))

        // Half an hour after the re-mount, kiosk-1 is named, reading lower.
        let later = try await tracer(["site", "calibration", "--store", store, "--map", copy])
        #expect(later.status == 0, "\(later.stderr)")
        #expect(later.stdout.contains("kiosk-1 reads "), "\(later.stdout)")
        #expect(later.stdout.contains("lower in the last half hour than in the three hours before"))
        // Written then into the map as drawn, kiosk-1 keeps what it had (its hour mixes two
        // mountings) and every other kiosk takes its fit. Into the map written before, every
        // kiosk keeps its offset: this hour's fit of each is looser than ±3 dB (its kiosks hear
        // one to three others), too loose to replace one the map gives. The notes above the
        // anchors are replaced, not piled up.
        // One kiosk there ranges with an exponent of its own: it keeps it, and is named.
        let drawn = dir.file("drawn.yaml")
        let own = try #require(fitted.keys.sorted().first { $0 != "kiosk-1" })
        let lines = try String(contentsOfFile: map, encoding: .utf8).split(
            separator: "\n",
            omittingEmptySubsequences: false
        )
        try lines.map { line in
            line.contains("{key: \(own), kind: kiosk") ? line.dropLast() + ", pathLossExponent: 2.6}" : line
        }
        .joined(separator: "\n").write(toFile: drawn, atomically: true, encoding: .utf8)
        let moved = try await tracer(["site", "calibration", "--store", store, "--map", drawn, "--write"])
        #expect(moved.status == 0, "\(moved.stderr)")
        #expect(
            moved.stdout.contains(
                "kept as they were (heard nothing, moved in the hour, or an offset of their own the fit knows less well): kiosk-1\n"
            ),
            "\(moved.stdout)"
        )
        #expect(
            moved.stdout.contains("\nrange with a pathLossExponent of their own, though their offsets were fitted at ")
                && moved.stdout.hasSuffix(" (take it off their anchors to use the fit): \(own) (2.60)\n"),
            "\(moved.stdout)"
        )
        #expect(try String(contentsOfFile: drawn, encoding: .utf8).contains("pathLossExponent: 2.6, receiverOffset: "))
        #expect(try written(drawn).kiosks.keys.sorted() == fitted.keys.filter { $0 != "kiosk-1" }.sorted())
        let again = try await tracer(["site", "calibration", "--store", store, "--map", copy, "--write"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("wrote the receiverOffset of 0 kiosks"), "\(again.stdout)")
        #expect(try written(copy).kiosks == stored.kiosks)
        let notes = try String(contentsOfFile: copy, encoding: .utf8).components(separatedBy: "tracer site calibration")
        #expect(notes.count - 1 == kiosks.count + 1, "one note per kiosk and one for the settings")
        let noMap = try await tracer(["site", "calibration", "--store", store, "--write"])
        #expect(noMap.status == 1 && noMap.stderr.hasPrefix("Error: --write edits a map file: give --map FILE"))

        // Mistakes: one line each.
        let missing = try await tracer(["site", "calibration", "--store", dir.file("nothing.sqlite")])
        #expect(missing.status == 1 && missing.stderr.split(separator: "\n").count == 1)
        let when = try await tracer(["site", "calibration", "--store", store, "--map", map, "--at", "soon"])
        #expect(when.status == 1 && when.stderr.hasPrefix("Error: --at takes "))
    }

    /// A fit past what a map takes is written at the nearest value it does take, and says so: on
    /// a site whose walls stop nothing (random site 4, simulated with no wall loss), the first
    /// hour's wall comes out just under 0 dB, which the map would refuse to load.
    @Test func aFitPastWhatAMapTakesIsWrittenAtTheNearestItTakes() async throws {
        let sim = try await tracer([
            "simulate", "--random-site", "4", "--people", "2", "--hours", "1.05", "--wall-loss", "0",
            "--start", "2026-11-23T08:00:00Z", "--out", dir.file("sim"),
        ])
        #expect(sim.status == 0, "\(sim.stderr)")
        let map = dir.file("sim/map.yaml")
        let store = dir.file("site.sqlite")
        let replays = try FileManager.default.contentsOfDirectory(atPath: dir.file("sim/replays")).sorted()
        for name in replays {
            let r = try await tracer([
                "daemon", "--map", map, "--anchor", String(name.dropLast(".jsonl".count)), "--source",
                "replay:\(dir.file("sim/replays/\(name)"))", "--store", store,
            ])
            #expect(r.status == 0, "\(r.stderr)")
        }
        let json = try await tracer([
            "site", "calibration", "--store", store, "--map", map, "--at", "2026-11-23T09:00:00Z", "--json",
        ])
        let fit = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let wall = try #require((fit["wallLoss"] as? NSNumber)?.doubleValue)
        try #require(wall < 0, "this site's fit no longer puts its walls under 0 dB (\(wall)): choose another")
        let wrote = try await tracer([
            "site", "calibration", "--store", store, "--map", map, "--at", "2026-11-23T09:00:00Z", "--write",
        ])
        #expect(wrote.status == 0, "\(wrote.stderr)")
        #expect(
            wrote.stdout.contains(
                "the fit's wall loss, \(String(format: "%.1f", wall)) dB, is written as the nearest a map takes: 0.0 dB"
            ),
            "\(wrote.stdout)"
        )
        let text = try String(contentsOfFile: map, encoding: .utf8)
        #expect(text.contains("\n  wallLoss: 0.0\n"), "\(text)")
        let check = try await tracer(["map", "check", map])
        #expect(check.status == 0, "\(check.stderr)")
    }

    /// A kiosk's receive error given on the command line moves what it sends with it, keeping the
    /// random site's own difference of its chip.
    @Test func aReceiverErrorMovesTheKiosksTransmitterToo() async throws {
        func kiosk1(_ out: String, _ extra: [String]) async throws -> (rx: Double, tx: Double) {
            let r = try await tracer(
                ["simulate", "--random-site", "5", "--people", "2", "--hours", "0.1", "--out", dir.file(out)] + extra
            )
            #expect(r.status == 0, "\(r.stderr)")
            let m =
                try JSONSerialization.jsonObject(
                    with: Data(contentsOf: URL(fileURLWithPath: dir.file("\(out)/manifest.json")))
                )
                as! [String: Any]
            let k = (m["kiosks"] as! [[String: Any]]).first { $0["anchor"] as? String == "kiosk-1" }!
            return ((k["receiverError"] as! NSNumber).doubleValue, (k["transmitError"] as! NSNumber).doubleValue)
        }
        let drawn = try await kiosk1("drawn", [])
        let given = try await kiosk1("given", ["--receiver-error", "kiosk-1=-3"])
        #expect(given.rx == -3)
        #expect(abs((given.tx - given.rx) - (drawn.tx - drawn.rx)) < 1e-9, "\(drawn) \(given)")
    }

    /// `--badge-offset` bounds each badge's transmit error (0: every badge sends what it claims),
    /// for measuring what knowing the badges' offsets would win; out of range is one line.
    @Test func aBadgeOffsetBoundsEachBadgesTransmitter() async throws {
        func offsets(_ out: String, _ extra: [String]) async throws -> [Double] {
            let r = try await tracer(
                ["simulate", "--random-site", "5", "--people", "12", "--hours", "0.1", "--out", dir.file(out)] + extra
            )
            #expect(r.status == 0, "\(r.stderr)")
            let lines = try String(contentsOfFile: dir.file("\(out)/truth/people.jsonl"), encoding: .utf8)
                .split(separator: "\n")
            return try lines.map {
                let o = try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
                return (o["offsetDb"] as! NSNumber).doubleValue
            }
        }
        let drawn = try await offsets("drawn", [])
        #expect(drawn.count == 12)
        #expect(drawn.allSatisfy { abs($0) <= 6 } && drawn.contains { abs($0) > 1 }, "\(drawn)")
        let none = try await offsets("none", ["--badge-offset", "0"])
        #expect(none == [Double](repeating: 0, count: 12), "\(none)")
        let two = try await offsets("two", ["--badge-offset", "2"])
        #expect(two.allSatisfy { abs($0) <= 2 } && two.contains { $0 != 0 }, "\(two)")
        let bad = try await tracer(["simulate", "--random-site", "5", "--badge-offset", "25", "--out", dir.file("bad")])
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("--badge-offset takes dB from 0 to 20, not 25"), "\(bad.stderr)")
    }

    /// A kiosk ranging with a calibration it stored (what it fitted or followed) is placed as if
    /// the map gave it that offset: every kiosk of random site 4 given its simulated receiver
    /// error, once written into a copy of the map, once stored as each kiosk's calibration under
    /// the map as drawn. The daemons range the same distances, and flagging weighs the same
    /// evidence (`tracer evaluate --evidence`: every stretch's features) and places the reporters
    /// the same; with the calibrations not read where a kiosk stops hearing, the evidence differs.
    @Test func aKioskRangingWithItsStoredCalibrationIsPlacedAsIfTheMapGaveIt() async throws {
        let sim = try await tracer([
            "simulate", "--random-site", "4", "--people", "8", "--hours", "1", "--start", "2026-11-23T08:00:00Z",
            "--out", dir.file("sim"),
        ])
        #expect(sim.status == 0, "\(sim.stderr)")
        let drawn = dir.file("sim/map.yaml")
        let manifest = try #require(
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: dir.file("sim/manifest.json")))
            )
                as? [String: Any]
        )
        var offsets: [String: Double] = [:]
        for k in try #require(manifest["kiosks"] as? [[String: Any]]) {
            let error = try #require((k["receiverError"] as? NSNumber)?.doubleValue)
            offsets[try #require(k["anchor"] as? String)] = (-error * 10).rounded() / 10
        }
        #expect(offsets.values.contains { abs($0) >= 2 }, "\(offsets)")
        let written = dir.file("written.yaml")
        let lines = try String(contentsOfFile: drawn, encoding: .utf8).split(
            separator: "\n",
            omittingEmptySubsequences: false
        )
        try lines.map { line -> String in
            guard let key = line.firstMatch(of: /^  - \{key: ([^,]+), kind: kiosk,/)?.1, let o = offsets[String(key)],
                line.hasSuffix("}")
            else { return String(line) }
            return line.dropLast() + ", receiverOffset: \(o)}"
        }.joined(separator: "\n").write(toFile: written, atomically: true, encoding: .utf8)
        let (byMap, stored) = (dir.file("map.sqlite"), dir.file("stored.sqlite"))
        for (kiosk, o) in offsets {
            let c =
                #"{"calibration": {"receiverOffset": \#(o), "windows": 0, "references": 0, "source": "kiosks", "mapOffset": 0}}"#
            let set = try await tracer(["db", "set", "beacons/\(kiosk)", c, "--merge", "--store", stored])
            #expect(set.status == 0, "\(set.stderr)")
        }
        for kiosk in offsets.keys.sorted() {
            let replay = "replay:\(dir.file("sim/replays/\(kiosk).jsonl"))"
            for (map, store) in [(written, byMap), (drawn, stored)] {
                let r = try await tracer([
                    "daemon", "--map", map, "--anchor", kiosk, "--source", replay, "--store", store,
                ])
                #expect(r.status == 0, "\(kiosk): \(r.stderr)")
            }
        }
        func evaluated(_ map: String, _ store: String, _ name: String) async throws -> ([String: Any], [[String: Any]])
        {
            let e = try await tracer([
                "evaluate", "--sim", dir.file("sim"), "--map", map, "--store", store, "--reporters", "all", "--json",
                "--pictures", dir.file("pictures-\(name)"), "--evidence", dir.file("\(name).jsonl"),
            ])
            #expect(e.status == 0, "\(e.stderr)")
            let o = try #require(try JSONSerialization.jsonObject(with: Data(e.stdout.utf8)) as? [String: Any])
            let evidence = try String(contentsOfFile: dir.file("\(name).jsonl"), encoding: .utf8).split(separator: "\n")
                .map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
            return (o, evidence)
        }
        let (a, aEvidence) = try await evaluated(written, byMap, "map")
        let (b, bEvidence) = try await evaluated(drawn, stored, "stored")
        #expect(
            !aEvidence.isEmpty && aEvidence.count == bEvidence.count,
            "\(aEvidence.count) against \(bEvidence.count)"
        )
        for (x, y) in zip(aEvidence, bEvidence) {
            for (key, value) in x {
                guard let u = value as? NSNumber, let v = y[key] as? NSNumber
                else {
                    #expect("\(value)" == "\(y[key] ?? "none")", "\(key)")
                    continue
                }
                #expect(abs(u.doubleValue - v.doubleValue) < 1e-9, "\(key): \(u) against \(v)")
            }
        }
        for count in ["truePositives", "falsePositives", "falseNegatives"] {
            let (x, y) = ((a["overall"] as? [String: Any])?[count], (b["overall"] as? [String: Any])?[count])
            #expect((x as? NSNumber) != nil && (x as? NSNumber) == (y as? NSNumber), "\(count)")
        }
        let (ra, rb) = (
            (a["roomAttribution"] as? NSNumber)?.doubleValue, (b["roomAttribution"] as? NSNumber)?.doubleValue
        )
        #expect(ra != nil && ra == rb)
        let pa = ((a["positionError"] as? [String: Any])?["median"] as? NSNumber)?.doubleValue ?? -1
        let pb = ((b["positionError"] as? [String: Any])?["median"] as? NSNumber)?.doubleValue ?? 1
        #expect(abs(pa - pb) < 1e-9, "\(pa) against \(pb)")
    }
}

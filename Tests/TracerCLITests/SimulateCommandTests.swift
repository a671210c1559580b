import Foundation
import Testing
import TracerTesting

/// `tracer simulate` and `tracer evaluate` by command: a small morning simulated twice, ranged by
/// every kiosk's daemon, and evaluated against its truth.
@Suite struct SimulateCommandTests {
    let dir = TemporaryDirectory("tracer-simulate")
    static let map = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("BeaconMap/example-campus.yaml").path

    func simulate(_ out: String, seed: String = "5") async throws -> TracerProcess.Result {
        try await TracerProcess.running([
            "simulate", "--map", Self.map, "--people", "8", "--hours", "1", "--seed", seed,
            "--start", "2026-11-23T11:30:00Z", "--out", dir.file(out),
        ])
    }

    /// Async, its commands on threads of their own: it runs for a while, and must not hold one
    /// of the few cooperative threads the async tests share.
    @Test func aMorningSimulatedRangedAndEvaluated() async throws {
        let a = try await simulate("a")
        #expect(a.status == 0, "\(a.stderr)")
        #expect(a.stdout.contains("simulated 8 people for 1 h at Example Campus (seed 5"), "\(a.stdout)")
        #expect(try await simulate("b").status == 0)
        #expect(try await simulate("c", seed: "6").status == 0)

        // Deterministic: the same seed writes the same bytes; another seed, others.
        let fm = FileManager.default
        let replays = try fm.contentsOfDirectory(atPath: dir.file("a/replays")).sorted()
        #expect(replays.count == 16 && replays.contains("kiosk-lecture-2.jsonl"))
        for name in ["replays/kiosk-cafe.jsonl", "truth/positions.jsonl", "truth/pairs.jsonl"] {
            #expect(fm.contents(atPath: dir.file("a/\(name)")) == fm.contents(atPath: dir.file("b/\(name)")), "\(name)")
        }
        #expect(
            fm.contents(atPath: dir.file("a/truth/positions.jsonl"))
                != fm.contents(atPath: dir.file("c/truth/positions.jsonl"))
        )

        // Every line is docs/design.md's replay format, in time order.
        let cafe = String(decoding: fm.contents(atPath: dir.file("a/replays/kiosk-cafe.jsonl"))!, as: UTF8.self)
        var last = 0.0
        var addresses = Set<String>()
        for line in cafe.split(separator: "\n") {
            let o = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            let t = (o["t"] as! NSNumber).doubleValue
            #expect(t >= last)
            last = t
            addresses.insert(o["address"] as! String)
            #expect((o["manufacturerData"] as! [String: String])["76"]!.hasPrefix("0215"))
            #expect((o["rssi"] as! NSNumber).intValue < 0)
        }
        #expect(addresses.count >= 2)

        // Every kiosk's daemon into one store.
        let store = dir.file("campus.sqlite")
        for name in replays {
            let kiosk = String(name.dropLast(".jsonl".count))
            let r = try await TracerProcess.running([
                "daemon", "--map", Self.map, "--anchor", kiosk, "--source", "replay:\(dir.file("a/replays/\(name)"))",
                "--store", store,
            ])
            #expect(r.status == 0, "\(kiosk): \(r.stderr)")
        }
        // No Bluetooth address reaches the store.
        let export = try await TracerProcess.running(["db", "export", "/", "--store", store])
        #expect(!export.stdout.isEmpty && addresses.allSatisfy { !export.stdout.contains($0) })

        let e = try await TracerProcess.running([
            "evaluate", "--sim", dir.file("a"), "--store", store, "--reporters", "all", "--json",
            "--pictures", dir.file("pictures"),
        ])
        #expect(e.status == 0, "\(e.stderr)")
        let o = try JSONSerialization.jsonObject(with: Data(e.stdout.utf8)) as! [String: Any]
        #expect((o["reporters"] as! [String]).count == 8)
        // A kiosk hears a badge in its room in every stay of a minute or more, and ranges it in
        // nearly every 30 s window.
        #expect((o["detectionRate"] as! NSNumber).doubleValue >= 0.95, "\(e.stdout)")
        #expect((o["continuity"] as! NSNumber).doubleValue >= 0.9, "\(e.stdout)")
        let overall = o["overall"] as! [String: Any]
        let counted = ["truePositives", "falsePositives", "falseNegatives"].map { (overall[$0] as! NSNumber).intValue }
        #expect(counted[0] + counted[2] > 0, "the truth has pairs to find")
        // Recall ≥ 0.9 and precision ≥ 0.83 on this CI-sized morning (26 pairs), so that a
        // change that flags worse fails here: 20 right, 4 wrong, 2 missed (0.833 and 0.909).
        // Issue 16's targets (recall 0.95, precision 0.90) were met here until rooms weighed
        // each window's evidence at a tenth (`Positioning.evidenceWeight`, chosen on random
        // sites, where it wins 0.03 of precision and 5 points of rooms right: on this campus,
        // whose simulated radio has none of the errors that weight allows for, two more were
        // flagged from the room next door), and until where a kiosk stops hearing was worked
        // out with its offset's sign right (`Plan.Receiver.floor`: the site's +3 dB had put every
        // kiosk's floor 6 dB further, and on this campus two more were missed; on random sites
        // 1–8 every site's recall and precision are as good or better with it). EFFICACY.md
        // measures both.
        let precision = (overall["precision"] as? NSNumber)?.doubleValue ?? 0
        let recall = (overall["recall"] as? NSNumber)?.doubleValue ?? 0
        #expect(precision >= 0.83 && recall >= 0.9, "precision \(precision), recall \(recall): \(counted)")
        // Positions where two kiosks of a room heard a reporter, and nearly every minute in a
        // kiosk's room attributed to it.
        let positions = try #require(o["positionError"] as? [String: Any])
        #expect((positions["count"] as? NSNumber)?.intValue ?? 0 > 0)
        #expect((o["roomAttribution"] as? NSNumber)?.doubleValue ?? 0 >= 0.95, "\(e.stdout)")
        // Where the minutes attributed wrong went, room by room: all of them, never to the room itself.
        let wrong = try #require(o["roomsWrong"] as? [String: [String: NSNumber]])
        let roomSeconds = (o["roomSeconds"] as? NSNumber)?.doubleValue ?? 0
        let right = (o["roomAttribution"] as? NSNumber)?.doubleValue ?? 0
        let given = wrong.values.flatMap(\.values).reduce(0) { $0 + $1.doubleValue }
        #expect(given > 0 && abs(given - roomSeconds * (1 - right)) < 1e-6 * roomSeconds, "\(wrong)")
        #expect(wrong.allSatisfy { room, places in places[room] == nil })
        for picture in ["distance-error.svg", "timeline.svg", "floorplan.svg", "positions.svg"] {
            let text = String(decoding: fm.contents(atPath: dir.file("pictures/\(picture)")) ?? Data(), as: UTF8.self)
            #expect(text.hasPrefix("<svg") && text.hasSuffix("</svg>\n"), "\(picture)")
        }

        // The table for people names the rule and every room with pairs.
        let table = try await TracerProcess.running([
            "evaluate", "--sim", dir.file("a"), "--store", store, "--reporters", "3",
        ])
        #expect(table.status == 0 && table.stdout.contains("all (per device)") && table.stdout.contains("continuity"))
        #expect(table.stdout.contains("flagging: 3 reports, median "), "\(table.stdout)")
    }

    /// A random site: its map written beside the replays, ranged under that map by every kiosk's
    /// daemon, and evaluated with the nearest-kiosk room rule beside the map's.
    @Test func aRandomSiteIsSimulatedRangedAndEvaluatedOnItsOwnMap() async throws {
        let out = dir.file("random")
        let r = try await TracerProcess.running([
            "simulate", "--random-site", "4", "--people", "10", "--hours", "0.5", "--start", "2026-11-23T09:00:00Z",
            "--out", out,
        ])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("simulated 10 people for 0.5 h at Random Site 4 (seed 4"), "\(r.stdout)")
        #expect(r.stdout.contains("% lost by kiosk"), "\(r.stdout)")
        let manifest =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(out)/manifest.json")))
            as! [String: Any]
        #expect((manifest["map"] as? String)?.hasSuffix("random/map.yaml") == true)
        let kiosks = manifest["kiosks"] as! [[String: Any]]
        #expect(kiosks.count >= 4)
        #expect(kiosks.allSatisfy { (($0["loss"] as? NSNumber)?.doubleValue ?? 0) >= 0.1 })
        let store = dir.file("random.sqlite")
        for k in kiosks {
            let key = k["anchor"] as! String
            let d = try await TracerProcess.running([
                "daemon", "--map", "\(out)/map.yaml", "--anchor", key, "--source", "replay:\(out)/replays/\(key).jsonl",
                "--store", store,
            ])
            #expect(d.status == 0, "\(key): \(d.stderr)")
        }
        let e = try await TracerProcess.running([
            "evaluate", "--sim", out, "--store", store, "--reporters", "all", "--json", "--pictures", dir.file("rp"),
            "--evidence", dir.file("evidence.jsonl"),
        ])
        #expect(e.status == 0, "\(e.stderr)")
        let o = try JSONSerialization.jsonObject(with: Data(e.stdout.utf8)) as! [String: Any]
        // What the pair decision weighed, a stretch a line, with its features, chance and truth;
        // the flagged exposures' chances sorted in tenths from the threshold up.
        let weighed = try String(contentsOfFile: dir.file("evidence.jsonl"), encoding: .utf8).split(separator: "\n")
            .map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        #expect(!weighed.isEmpty)
        for line in weighed {
            #expect(
                Set(line.keys).isSuperset(of: [
                    "constant", "best", "together", "gap", "chance", "trulyNear", "counted", "reporter", "device",
                ])
            )
            let chance = (line["chance"] as! NSNumber).doubleValue
            #expect(chance > 0 && chance < 1)
        }
        let bins = try #require(o["reliability"] as? [[String: Any]])
        #expect(
            bins.allSatisfy {
                (($0["low"] as! NSNumber).doubleValue) >= 0.1 && (($0["count"] as! NSNumber).intValue) > 0
            }
        )
        #expect((o["chance"] as? NSNumber)?.doubleValue == 0.15)
        let bad = try await TracerProcess.running(["evaluate", "--sim", out, "--store", store, "--chance", "0"])
        #expect(bad.status != 0 && bad.stderr.contains("--chance takes a chance above 0, at most 1"), "\(bad.stderr)")
        let unwritable = try await TracerProcess.running([
            "evaluate", "--sim", out, "--store", store, "--reporters", "2", "--evidence", "/nonexistent/e.jsonl",
        ])
        #expect(
            unwritable.status != 0
                && unwritable.stderr.hasPrefix("Error: --evidence /nonexistent/e.jsonl: cannot write it"),
            "\(unwritable.stderr)"
        )
        let room = try #require(o["roomRule"] as? [String: Any])
        let counted = ["truePositives", "falsePositives", "falseNegatives"].map { (room[$0] as! NSNumber).intValue }
        #expect(counted[0] + counted[2] > 0, "the truth has pairs to find")
        #expect(o["falseFlags"] is [String: Any])
        let table = try await TracerProcess.running(["evaluate", "--sim", out, "--store", store, "--reporters", "3"])
        #expect(table.status == 0 && table.stdout.contains("nearest-kiosk room"), "\(table.stdout)")
        // The same seed, the same site and the same adverts.
        let again = try await TracerProcess.running([
            "simulate", "--random-site", "4", "--people", "10", "--hours", "0.5", "--start", "2026-11-23T09:00:00Z",
            "--out", dir.file("again"),
        ])
        #expect(again.status == 0)
        let fm = FileManager.default
        for name in ["map.yaml", "replays/\(kiosks[0]["anchor"] as! String).jsonl", "truth/pairs.jsonl"] {
            #expect(fm.contents(atPath: "\(out)/\(name)") == fm.contents(atPath: dir.file("again/\(name)")), "\(name)")
        }
    }

    /// Phones as scanners: `--phones` writes what each person's phone heard of the fixed beacons,
    /// and `tracer daemon --device` ranges it into windows at the beacons, under the phone's id.
    @Test func phonesHearTheFixedBeaconsAndAreRangedInScannerMode() async throws {
        let r = try await TracerProcess.running([
            "simulate", "--map", Self.map, "--people", "8", "--hours", "1", "--seed", "5",
            "--start", "2026-11-23T11:30:00Z", "--out", dir.file("p"), "--phones",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("16 kiosks' replays and 8 phones'"), "\(r.stdout)")
        let manifest = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir.file("p/manifest.json"))))
                as? [String: Any]
        )
        let phones = try #require(manifest["phones"] as? [[String: Any]])
        #expect(phones.count == 8)
        func adverts(_ p: [String: Any]) -> Int { (p["adverts"] as? NSNumber)?.intValue ?? 0 }
        let busiest = try #require(phones.max { adverts($0) < adverts($1) })
        #expect(adverts(busiest) > 0)
        let device = try #require(busiest["device"] as? String)
        let replay = try #require(busiest["replay"] as? String)
        let store = dir.file("phone.sqlite")
        let daemon = try await TracerProcess.running([
            "daemon", "--map", Self.map, "--device", device, "--source", "replay:\(dir.file("p/\(replay)"))",
            "--store", store,
        ])
        #expect(daemon.status == 0, "\(daemon.stderr)")
        let query = try await TracerProcess.running([
            "db", "query", "interactions", "--group", "--json", "--store", store,
        ])
        let docs = try JSONSerialization.jsonObject(with: Data(query.stdout.utf8)) as? [[String: Any]] ?? []
        let data = docs.compactMap { $0["data"] as? [String: Any] }
        #expect(!data.isEmpty)
        // Every window is this phone's, at one of the map's fixed beacons, with a distance.
        let beacons: Set = [
            "b-lab-door", "b-lab-bench", "b-lab-shelf", "b-seminar", "b-lecture-front", "b-lecture-back", "b-cafe",
            "b-library", "b-clinic",
        ]
        #expect(data.allSatisfy { $0["deviceId"] as? String == device })
        #expect(Set(data.compactMap { $0["anchor"] as? String }).isSubset(of: beacons))
        #expect(data.allSatisfy { ($0["distance"] as? NSNumber)?.doubleValue ?? 0 > 0 })
    }

    @Test func badInputIsOneLineAndExitOne() async throws {
        let people = try await TracerProcess.running([
            "simulate", "--map", Self.map, "--people", "0", "--hours", "1", "--out", dir.file("x"),
        ])
        #expect(people.status == 1 && people.stderr == "Error: --people must be from 1 to 100000, not 0\n")
        let start = try await TracerProcess.running([
            "simulate", "--map", Self.map, "--people", "3", "--hours", "1", "--out", dir.file("x"), "--start", "monday",
        ])
        #expect(start.status == 1 && start.stderr.contains("--start takes a date"))
        let both = try await TracerProcess.running([
            "simulate", "--map", Self.map, "--random-site", "3", "--out", dir.file("x"),
        ])
        #expect(
            both.status == 1
                && both.stderr == "Error: --map and --random-site: give one (a random site writes its own map)\n"
        )
        let placed = try await TracerProcess.running([
            "simulate", "--random-site", "3", "--kiosks-on", "ceiling", "--out", dir.file("x"),
        ])
        #expect(
            placed.status == 1
                && placed.stderr
                    == "Error: --kiosks-on takes drawn, outside, centre or off-shared-walls, not 'ceiling'\n"
        )
        let mapPlaced = try await TracerProcess.running([
            "simulate", "--map", Self.map, "--people", "3", "--hours", "1", "--kiosks-on", "outside", "--out",
            dir.file("x"),
        ])
        #expect(
            mapPlaced.status == 1
                && mapPlaced.stderr == "Error: --kiosks-on is for --random-site (a map places its own kiosks)\n"
        )
        let neither = try await TracerProcess.running(["simulate", "--out", dir.file("x")])
        #expect(neither.status == 1 && neither.stderr == "Error: give --map FILE, or --random-site SEED\n")
        let count = try await TracerProcess.running([
            "simulate", "--map", Self.map, "--hours", "1", "--out", dir.file("x"),
        ])
        #expect(count.status == 1 && count.stderr == "Error: --people is needed with --map\n")
        // A random site's people are checked as any other's.
        let many = try await TracerProcess.running([
            "simulate", "--random-site", "3", "--people", "0", "--out", dir.file("x"),
        ])
        #expect(many.status == 1 && many.stderr == "Error: --people must be from 1 to 100000, not 0\n")
        #expect(!FileManager.default.fileExists(atPath: dir.file("x/map.yaml")), "nothing written for a bad request")
        // --loss replaces every kiosk's own share.
        let even = try await TracerProcess.running([
            "simulate", "--random-site", "3", "--people", "4", "--hours", "0.1", "--loss", "0.5", "--out",
            dir.file("even"),
        ])
        #expect(even.status == 0 && even.stdout.contains(", 50% lost)"), "\(even.stdout)\(even.stderr)")
        let evenManifest = try JSONSerialization.jsonObject(
            with: Data(contentsOf: URL(fileURLWithPath: dir.file("even/manifest.json")))
        )
        let kiosks = (evenManifest as? [String: Any])?["kiosks"] as? [[String: Any]] ?? []
        #expect(!kiosks.isEmpty && kiosks.allSatisfy { ($0["loss"] as? NSNumber)?.doubleValue == 0.5 })
        // Without --start: yesterday, 08:00 UTC (it was a fixed date, which the 14-day rules
        // soon put out of reach).
        let recent = try await TracerProcess.running([
            "simulate", "--map", Self.map, "--people", "2", "--hours", "0.1", "--out", dir.file("recent"),
        ])
        #expect(recent.status == 0, "\(recent.stderr)")
        let manifest = try JSONSerialization.jsonObject(
            with: Data(contentsOf: URL(fileURLWithPath: dir.file("recent/manifest.json")))
        )
        let began = ((manifest as? [String: Any])?["start"] as? NSNumber)?.doubleValue ?? 0
        let yesterday = (Date().timeIntervalSince1970 / 86_400).rounded(.down) * 86_400 - 86_400 + 8 * 3600
        #expect(abs(began - yesterday) < 86_400 * 0.01 || abs(began - yesterday - 86_400) < 1, "\(began)")
        let sim = try await TracerProcess.running([
            "evaluate", "--sim", dir.file("nothing"), "--store", dir.file("s.sqlite"),
        ])
        #expect(sim.status == 1 && sim.stderr.contains("manifest.json: not found"), "\(sim.stderr)")
    }
}

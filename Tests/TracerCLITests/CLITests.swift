import Foundation
import Testing
@_spi(Blocking) import TracerStore
import TracerTesting

/// The `tracer db` contract, run as a person or a script runs it: the built binary, its output
/// and its exit status.
@Suite struct DBCommandTests {
    let dir = TemporaryDirectory("tracer-cli")
    var store: String { dir.file("store.sqlite") }

    func tracer(_ args: String...) async throws -> TracerProcess.Result {
        try await TracerProcess.running(args + ["--store", store])
    }

    @Test func setGetJSONRoundTrip() async throws {
        let set = try await tracer("db", "set", "beacons/b-101", #"{"name": "Lab door", "major": 2, "pos": [0.5, 5]}"#)
        #expect(set.status == 0 && set.stdout.isEmpty, "\(set.stderr)")
        let get = try await tracer("db", "get", "beacons/b-101", "--json")
        #expect(get.status == 0)
        #expect(get.stdout == #"{"path": "beacons/b-101", "data": {"major":2,"name":"Lab door","pos":[0.5,5]}}"# + "\n")
        let human = try await tracer("db", "get", "beacons/b-101")
        #expect(human.stdout.contains("name   \"Lab door\""), "\(human.stdout)")
    }

    @Test func mergeAndSentinels() async throws {
        _ = try await tracer("db", "set", "devices/d1", #"{"status": "clear", "count": 1}"#)
        let r = try await tracer(
            "db",
            "set",
            "devices/d1",
            #"{"count": {"__increment__": 2}, "at": {"__serverTimestamp__": true}}"#,
            "--merge"
        )
        #expect(r.status == 0, "\(r.stderr)")
        let get = try await tracer("db", "get", "devices/d1", "--json")
        #expect(
            get.stdout.contains(#""count":3"#) && get.stdout.contains(#""status":"clear""#)
                && get.stdout.contains("__time__")
        )
    }

    @Test func queryWithFiltersOrderAndLimit() async throws {
        for (id, p, d) in [("a", "near", 1.5), ("b", "far", 7.0), ("c", "immediate", 0.3), ("d", "near", 2.9)] {
            _ = try await tracer(
                "db",
                "set",
                "beacons/b1/interactions/\(id)",
                #"{"proximity": "\#(p)", "distance": \#(d)}"#
            )
        }
        let r = try await tracer(
            "db",
            "query",
            "beacons/b1/interactions",
            "--where",
            #"proximity in ["near", "immediate"]"#,
            "--order-by",
            "distance",
            "--desc",
            "--limit",
            "2",
            "--json"
        )
        #expect(r.status == 0, "\(r.stderr)")
        let paths = r.stdout.split(separator: "\n").compactMap { line in
            line.range(of: #"beacons/b1/interactions/[a-z]"#, options: .regularExpression).map { String(line[$0]) }
        }
        #expect(paths == ["beacons/b1/interactions/d", "beacons/b1/interactions/a"])
        let group = try await tracer("db", "query", "interactions", "--group", "--where", "distance > 2", "--count")
        #expect(group.stdout == "2\n")
        let human = try await tracer("db", "query", "beacons/b1/interactions", "--where", #"proximity == "far""#)
        #expect(human.stdout.contains("beacons/b1/interactions/b") && human.stdout.hasSuffix("1 document\n"))
    }

    @Test(arguments: [
        (["db", "get", "beacons"], "names a collection"),
        (["db", "get", "beacons/none"], "no document"),
        (["db", "set", "beacons/x", "{not json"], "not a JSON object"),
        (["db", "set", "beacons/x", #"{"__x__": 1}"#], "reserved"),
        (["db", "set", "a/./b/c", "{}"], "'.' is not a valid id"),
        (["db", "query", "beacons", "--where", "name == Lab"], "double quotes"),
        (["db", "query", "beacons", "--where", "name ~ 1"], "unknown operator"),
        (["db", "query", "beacons", "--where", "in [] x"], "cannot read the filter"),
        (["db", "import", "/nonexistent.jsonl"], "cannot read /nonexistent.jsonl"),
    ])
    func badInputGivesOneLineAndExitOne(_ args: [String], _ message: String) async throws {
        _ = try await tracer("db", "set", "seed/doc", "{}")  // the store exists: the error is about the input
        let r = try await TracerProcess.running(args + ["--store", store])
        #expect(r.status == 1)
        #expect(r.stdout.isEmpty)
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.count == 1 && r.stderr.contains(message), "\(r.stderr)")
    }

    @Test func exportThenImportIntoAnotherStore() async throws {
        for i in 0..<25 {
            _ = try await tracer(
                "db",
                "set",
                "beacons/b\(i % 3)/interactions/i\(i)",
                #"{"i": \#(i), "t": {"__time__": "2026-11-22T10:00:00Z"}}"#
            )
        }
        _ = try await tracer("db", "set", "other/x", #"{"i": -1}"#)
        let export = try await tracer("db", "export", "beacons")
        #expect(export.status == 0)
        #expect(export.stdout.split(separator: "\n").count == 25)
        let file = dir.file("export.jsonl")
        try export.stdout.write(toFile: file, atomically: true, encoding: .utf8)
        let second = dir.file("second.sqlite")
        let imported = try await TracerProcess.running(["db", "import", file, "--store", second])
        #expect(imported.status == 0 && imported.stdout.contains("imported 25 documents"), "\(imported.stderr)")
        let again = try await TracerProcess.running(["db", "export", "/", "--store", second])
        #expect(again.stdout == export.stdout)
    }

    @Test func importNamesTheBadLine() async throws {
        let file = dir.file("bad.jsonl")
        try """
        {"path": "a/1", "data": {"n": 1}}
        {"path": "a/2", "data": {"n": 2}}
        {"path": "a", "data": {"n": 3}}
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let r = try await tracer("db", "import", file)
        #expect(r.status == 1)
        #expect(r.stderr.contains("bad.jsonl:3") && r.stderr.contains("names a collection"), "\(r.stderr)")
    }

    @Test func watchPrintsCurrentDocumentsThenLiveChanges() async throws {
        _ = try await tracer("db", "set", "beacons/k/interactions/first", #"{"n": 1}"#)
        let watcher = try TracerProcess.start(["db", "watch", "beacons/k/interactions", "--store", store])
        defer { watcher.kill(SIGINT) }
        #expect(await watcher.line() == #"{"type": "added", "path": "beacons/k/interactions/first", "data": {"n":1}}"#)
        _ = try await tracer("db", "set", "beacons/k/interactions/second", #"{"n": 2}"#)
        #expect(await watcher.line() == #"{"type": "added", "path": "beacons/k/interactions/second", "data": {"n":2}}"#)
        _ = try await tracer("db", "set", "beacons/k/interactions/first", #"{"n": {"__increment__": 10}}"#, "--merge")
        #expect(
            await watcher.line() == #"{"type": "modified", "path": "beacons/k/interactions/first", "data": {"n":11}}"#
        )
        _ = try await tracer("db", "delete", "beacons/k/interactions/second")
        #expect(
            await watcher.line() == #"{"type": "removed", "path": "beacons/k/interactions/second", "data": {"n":2}}"#
        )
    }

    @Test func watchADocument() async throws {
        _ = try DocumentStore(path: store)
        let watcher = try TracerProcess.start(["db", "watch", "devices/d9", "--store", store])
        defer { watcher.kill(SIGINT) }
        // Whether the watcher starts before or after this write, it prints the document as added.
        _ = try await tracer("db", "set", "devices/d9", #"{"status": "exposed"}"#)
        #expect(await watcher.line() == #"{"type": "added", "path": "devices/d9", "data": {"status":"exposed"}}"#)
        _ = try await tracer("db", "delete", "devices/d9")
        #expect(await watcher.line() == #"{"type": "removed", "path": "devices/d9", "data": {"status":"exposed"}}"#)
    }

    /// A watch whose store file is deleted (or replaced) ends with a one-line error instead of
    /// waiting forever on an unlinked file.
    @Test func aWatchWhoseStoreIsDeletedEndsWithAnError() async throws {
        _ = try await tracer("db", "set", "a/b", #"{"x": 1}"#)
        let watcher = try TracerProcess.start(["db", "watch", "a", "--store", store])
        defer { watcher.kill() }
        #expect(await watcher.line() == #"{"type": "added", "path": "a/b", "data": {"x":1}}"#)
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: store + suffix) }
        let ended = await watcher.stop(0, timeout: 60)  // signal 0: only wait
        #expect(ended?.status == 1, "still running, or: \(String(describing: ended))")
        let lines = watcher.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines.first?.contains("the store file was deleted or replaced") == true, "\(lines)")
    }

    /// Only the commands that own a store (`daemon`, `serve`, `db set`, `db import`, `token
    /// create`, `map publish`) make one; every other refuses one that is not there in one line,
    /// and the commands that also run against the site server say `--server`. (`self-report`
    /// used to make an empty store in ~/.local/share, record the report there, and exit 0.)
    @Test(arguments: [
        ["db", "get", "beacons/b1"], ["db", "query", "beacons"], ["db", "delete", "beacons/b1"],
        ["db", "export"], ["db", "index", "interactions", "deviceId"],
        ["db", "purge", "interactions", "--field", "start", "--older-than", "14d"], ["db", "watch", "beacons"],
        ["exposure", "--beacon", "b1"], ["report", "pending"], ["report", "follow"], ["report", "revoke", "r-1"],
        ["report", "flag", "r-1"], ["token", "list"], ["token", "revoke", "t-1"], ["map", "show"],
        ["notify", "--webhook", "https://example.org/hook"], ["status", "--device", "u:1:2"],
        ["self-report", ResultImages.file("lab-pcr-positive.png"), "--device", "u:1:2", "--yes"],
    ])
    func commandsThatDoNotOwnAStoreRefuseOneThatIsNotThere(_ command: [String]) async throws {
        let data = dir.file("home-\(command.prefix(2).joined(separator: "-"))")
        // No --store: the default one, under XDG_DATA_HOME, as a person's first try would be.
        let r = try await TracerProcess.running(command, environment: ["XDG_DATA_HOME": data, "TRACER_STORE": ""])
        let lines = r.stderr.split(separator: "\n")
        #expect(
            r.status == 1 && lines.count == 1 && r.stderr.contains("no store at \(data)/tracer/tracer.sqlite"),
            "\(r.stderr)"
        )
        let remote =
            ["self-report", "status", "exposure"].contains(command[0])
            || (command[0] == "report" && ["pending", "flag", "revoke"].contains(command[1]))
        #expect(r.stderr.contains("--server URL") == remote, "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: data), "\(command) made \(data)")
    }

    /// Listing what waits for review flags nobody: it takes no exposure policy.
    @Test func reportPendingTakesNoExposurePolicy() async throws {
        _ = try DocumentStore(path: store)
        for option in ["--radius", "--window", "--separation"] {
            let r = try await tracer("report", "pending", option, "3")
            #expect(r.status != 0 && r.stderr.contains("Unknown option '\(option)'"), "\(r.stderr)")
        }
        #expect(try await tracer("report", "pending").stdout.hasPrefix("no reports wait for review"))
    }

    @Test func watchEndsCleanlyOnSIGTERM() async throws {
        _ = try await tracer("db", "set", "a/b", #"{"x": 1}"#)
        let watcher = try TracerProcess.start(["db", "watch", "a", "--store", store])
        #expect(await watcher.line() != nil)
        watcher.kill(SIGTERM)
        #expect(watcher.process.terminationStatus == 0)
        #expect(watcher.process.terminationReason == .exit)
    }

    @Test func indexExplainAndPurge() async throws {
        _ = try DocumentStore(path: store)
        let r = try await tracer("db", "index", "interactions", "deviceId", "start:desc", "--group")
        #expect(r.stdout == "index interactions (deviceId asc, start desc) [group]\n", "\(r.stderr)")
        let explain = try await tracer(
            "db",
            "query",
            "interactions",
            "--group",
            "--where",
            #"deviceId == "d""#,
            "--order-by",
            "start:desc",
            "--explain"
        )
        #expect(explain.stdout.contains("uses index interactions (deviceId asc, start desc) [group], in order"))
        _ = try await tracer("db", "set", "b/1/interactions/old", #"{"start": {"__time__": "2020-01-01T00:00:00Z"}}"#)
        _ = try await tracer("db", "set", "b/1/interactions/new", #"{"start": {"__time__": "2099-01-01T00:00:00Z"}}"#)
        let purge = try await tracer("db", "purge", "interactions", "--field", "start", "--older-than", "14d")
        #expect(purge.stdout.hasPrefix("deleted 1 document of interactions"), "\(purge.stdout)\(purge.stderr)")
        #expect(purge.stdout.contains("trimmed "))
        #expect(purge.stderr.isEmpty, "logs stay quiet by default: \(purge.stderr)")
    }
}

@Suite struct DecodeAndMapCommandTests {
    @Test func decodeJSONIsExactlyTheContract() async throws {
        let r = try await TracerProcess.running([
            "decode", "02 01 06 1A FF 4C 00 02 15 E2 C5 6D B5 DF FB 48 D2 B0 60 D0 F5 A7 10 96 E0 00 02 00 07 C5",
            "--json",
        ])
        #expect(r.status == 0)
        #expect(
            r.stdout
                == #"{"uuid": "e2c56db5-dffb-48d2-b060-d0f5a71096e0", "major": 2, "minor": 7, "measuredPower": -59}"#
                + "\n"
        )
        let colons = try await TracerProcess.running([
            "decode", "02:01:06:1a:ff:4c:00:02:15:e2:c5:6d:b5:df:fb:48:d2:b0:60:d0:f5:a7:10:96:e0:00:02:00:07:c5",
        ])
        #expect(colons.stdout.contains("major 2 minor 7"))
    }

    @Test(arguments: [("0201", "no iBeacon"), ("zz", "is not hex"), ("0201061AFF4C000216", "no iBeacon")])
    func decodeFailsWithTheReason(_ hex: String, _ reason: String) async throws {
        let r = try await TracerProcess.running(["decode", hex])
        #expect(r.status == 1 && r.stdout.isEmpty && r.stderr.contains(reason), "\(r.stderr)")
    }

    @Test func mapCheck() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let r = try await TracerProcess.running([
            "map", "check", root.appendingPathComponent("BeaconMap/example-campus.yaml").path,
        ])
        #expect(
            r.status == 0 && r.stdout.contains("12 rooms in 2 buildings") && r.stdout.hasSuffix("ok\n"),
            "\(r.stdout)\(r.stderr)"
        )
        let dir = TemporaryDirectory()
        try "site: X\ndeviceUUIDs: [nope]\n".write(toFile: dir.file("bad.yaml"), atomically: true, encoding: .utf8)
        let bad = try await TracerProcess.running(["map", "check", dir.file("bad.yaml")])
        #expect(
            bad.status == 1 && bad.stderr.contains("bad.yaml:2: a device UUID 'nope' is not a UUID"),
            "\(bad.stderr)"
        )
    }
}

@Suite struct DaemonCommandTests {
    let dir = TemporaryDirectory("tracer-daemon")
    static let map = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("BeaconMap/example-campus.yaml").path

    func replay(seconds: Double) throws -> String {
        var f = ReplayFixture()
        f.rate = 10
        f.badges = (0..<20).map { i in
            .init(
                uuid: "f7826da6-4fa2-4e98-8024-bc5b71e0893e",
                major: 1,
                minor: UInt16(i),
                address: "AA:BB:CC:00:00:\(i)",
                distance: 0.5 + Double(i) / 2,
                from: 1_795_341_600,
                to: 1_795_341_600 + seconds
            )
        }
        let path = dir.file("replay-\(Int(seconds)).jsonl")
        try f.write(to: path)
        return path
    }

    @Test func replayRunsToTheEndAndReports() async throws {
        let file = try replay(seconds: 60)
        let r = try await TracerProcess.running([
            "daemon", "--map", Self.map, "--anchor", "kiosk-lab", "--source", "replay:\(file)", "--store",
            dir.file("s.sqlite"),
        ])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasPrefix("ranged 12060 adverts (12000 iBeacon, 12000 attributed"), "\(r.stdout)")
        #expect(r.stdout.contains("wrote 40 interaction documents"), "\(r.stdout)")
        #expect(r.stderr.contains("skipped 1 of 12061 lines") && r.stderr.contains("replay-60.jsonl:"), "\(r.stderr)")
        let count = try await TracerProcess.running([
            "db", "query", "beacons/kiosk-lab/interactions", "--count", "--store", dir.file("s.sqlite"),
        ])
        #expect(count.stdout == "40\n")
    }

    @Test(arguments: [
        (["--anchor", "kiosk-nowhere"], "no anchor 'kiosk-nowhere'"),
        (["--anchor", "b-lab-door"], "is a beacon, not a kiosk"),
        (["--anchor", "kiosk-lab", "--device", "x"], "exactly one of --anchor"),
        (["--anchor", "kiosk-lab", "--source", "replay:/nonexistent.jsonl"], "cannot read the replay file"),
        (["--anchor", "kiosk-lab", "--source", "carrier-pigeon"], "--source takes bluez or replay:FILE"),
    ])
    func badStartsAreOneLine(_ args: [String], _ message: String) async throws {
        let r = try await TracerProcess.running(
            ["daemon", "--map", Self.map] + args + ["--store", dir.file("s.sqlite")]
        )
        #expect(
            r.status == 1 && r.stderr.contains(message) && r.stderr.split(separator: "\n").count == 1,
            "\(r.stderr)"
        )
    }

    @Test func sigtermWritesWhatIsBufferedAndExitsZero() async throws {
        // The replay comes through a pipe the test holds open: the daemon cannot reach the end of
        // its input, however fast it runs, and is signalled once it has written a first batch.
        let lines = try String(contentsOfFile: try replay(seconds: 3600), encoding: .utf8).split(separator: "\n")
        let fifo = dir.file("adverts.fifo")
        try #require(mkfifo(fifo, 0o600) == 0)
        let store = dir.file("s.sqlite")
        let daemon = try TracerProcess.start([
            "daemon", "--map", Self.map, "--anchor", "kiosk-lab", "--source", "replay:\(fifo)", "--store", store,
        ])
        signal(SIGPIPE, SIG_IGN)  // the writer may be mid-write when the daemon exits
        let feeder = Thread {
            let fd = open(fifo, O_WRONLY)  // blocks until the daemon opens it
            guard fd >= 0 else { return }
            defer { close(fd) }
            // Half the capture (several batches of windows), then the pipe stays open and silent.
            for chunk in lines.prefix(lines.count / 2).chunks(of: 2000) {
                let bytes = Array((chunk.joined(separator: "\n") + "\n").utf8)
                var sent = 0
                while sent < bytes.count {
                    let n = bytes[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                    if n <= 0 { return }
                    sent += n
                }
            }
            while kill(daemon.process.processIdentifier, 0) == 0 { usleep(50_000) }
        }
        feeder.start()
        // One reader, opened once the daemon has made the store: a store opened every poll (as
        // this test once did) sets up its schema and threads each time, and under CI's load that
        // churn held the daemon's writes back for minutes. A deadline, not a count of polls, and
        // the daemon's own end is reported with what it said.
        var reader: DocumentStore?
        var wroteSome = false
        let deadline = ContinuousClock.now + .seconds(300)
        while !wroteSome, ContinuousClock.now < deadline, daemon.process.isRunning {
            try await Task.sleep(for: .milliseconds(100))
            if reader == nil, FileManager.default.fileExists(atPath: store) { reader = try DocumentStore(path: store) }
            guard let reader else { continue }
            wroteSome = try await !reader.reading { db in
                try db.getDocuments(Query(collectionGroup: "interactions").limit(1))
            }
            .isEmpty
        }
        await reader?.close()
        try #require(daemon.process.isRunning, "the daemon ended before it was signalled: \(daemon.stderr)")
        try #require(wroteSome, "the daemon wrote nothing in five minutes")
        daemon.kill(SIGTERM)
        #expect(daemon.process.terminationStatus == 0 && daemon.process.terminationReason == .exit)
        let line = await daemon.line(timeout: 2) ?? ""
        #expect(line.hasPrefix("stopped after"), "\(line)")
        let written = Int(line.split(separator: " ").dropLast(2).last ?? "") ?? -1
        let count = try await TracerProcess.running([
            "db", "query", "interactions", "--group", "--count", "--store", store,
        ])
        #expect(written > 0 && count.stdout == "\(written)\n", "\(line) / \(count.stdout)")
    }

}

@Suite struct CalibrateCommandTests {
    /// Badges at 1, 3 and 6 m under n = 2.7, heard 5 dB weak: the fit finds both, and the
    /// windowed distances get closer to the truth.
    @Test func fitsAGeneratedCaptureAndWritesTheSite() async throws {
        let dir = TemporaryDirectory("tracer-calibrate")
        var f = ReplayFixture()
        f.pathLossExponent = 2.7
        f.noise = 3
        f.clutter = false
        f.receiverBias = -5  // this receiver hears 5 dB less than the adverts' measured power claims
        let t0 = 1_795_341_600.0
        f.badges = [1.0, 3.0, 6.0].enumerated().map { i, d in
            ReplayFixture.Badge(
                uuid: "f7826da6-4fa2-4e98-8024-bc5b71e0893e",
                major: 1,
                minor: UInt16(i),
                address: "AA:00:00:00:00:0\(i)",
                distance: d,
                from: t0,
                to: t0 + 300
            )
        }
        try f.write(to: dir.file("cap.jsonl"))
        let truth = f.badges.map {
            #"{"from": \#($0.from), "to": \#($0.to), "deviceId": "\#($0.deviceID)", "distance": \#($0.distance)}"#
        }.joined(separator: "\n")
        try truth.write(toFile: dir.file("truth.jsonl"), atomically: true, encoding: .utf8)
        let map = dir.file("site.yaml")
        try String(contentsOfFile: DaemonCommandTests.map, encoding: .utf8).write(
            toFile: map,
            atomically: true,
            encoding: .utf8
        )

        let r = try await TracerProcess.running([
            "calibrate", "--map", map, "--replay", dir.file("cap.jsonl"), "--truth", dir.file("truth.jsonl"),
            "--anchor",
            "kiosk-lab", "--write", "--site",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("path-loss exponent n = 2.7"), "\(r.stdout)")
        let offset = r.stdout.range(of: #"receiver offset [+-][0-9.]+"#, options: .regularExpression)
            .flatMap { Double(r.stdout[$0].dropFirst("receiver offset ".count)) }
        #expect(offset.map { abs($0 - 5) < 0.3 } == true, "\(r.stdout)")
        for d in ["1", "3", "6"] { #expect(r.stdout.contains("  at \(d) m: "), "\(r.stdout)") }
        let check = try await TracerProcess.running(["map", "check", map])
        #expect(check.status == 0)
        #expect(try String(contentsOfFile: map, encoding: .utf8).contains("pathLossExponent: 2.7"))

        // Without --site the fit is this kiosk's own, on its anchor.
        let own = try await TracerProcess.running([
            "calibrate", "--map", map, "--replay", dir.file("cap.jsonl"), "--truth", dir.file("truth.jsonl"),
            "--anchor", "kiosk-lab", "--write",
        ])
        #expect(own.status == 0, "\(own.stderr)")
        let line = try String(contentsOfFile: map, encoding: .utf8).split(separator: "\n").first {
            $0.contains("key: kiosk-lab,")
        }
        #expect(
            line?.contains("pathLossExponent: 2.7") == true && line?.contains("receiverOffset: ") == true,
            "\(line ?? "")"
        )
    }
}

extension CalibrateCommandTests {
    /// A kiosk hears the map's fixed beacons at their plan distances (7.5, 7.5 and 2.5 m from
    /// kiosk-lab): calibration needs no truth file.
    @Test func calibratesAKioskFromTheMapsFixedBeacons() async throws {
        let dir = TemporaryDirectory("tracer-calibrate")
        var f = ReplayFixture()
        f.pathLossExponent = 2.5
        f.receiverBias = -6
        f.noise = 3
        f.clutter = false
        let t0 = 1_795_341_600.0
        f.badges = ReplayFixture.Badge.exampleLabBeacons(from: t0, to: t0 + 600)
        try f.write(to: dir.file("kiosk.jsonl"))
        let r = try await TracerProcess.running([
            "calibrate", "--map", DaemonCommandTests.map, "--replay", dir.file("kiosk.jsonl"), "--anchor", "kiosk-lab",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        let n = r.stdout.range(of: #"n = [0-9.]+"#, options: .regularExpression).flatMap {
            Double(r.stdout[$0].dropFirst(4))
        }
        #expect(n.map { abs($0 - 2.5) < 0.15 } == true, "\(r.stdout)")
        let offset = r.stdout.range(of: #"receiver offset [+-][0-9.]+"#, options: .regularExpression)
            .flatMap { Double(r.stdout[$0].dropFirst("receiver offset ".count)) }
        #expect(offset.map { abs($0 - 6) < 0.5 } == true, "\(r.stdout)")

        // One fixed beacon is one distance: no exponent, but the receiver's offset at the site's.
        f.badges = [f.badges[0]]
        try f.write(to: dir.file("one.jsonl"))
        let one = try await TracerProcess.running([
            "calibrate", "--map", DaemonCommandTests.map, "--replay", dir.file("one.jsonl"), "--anchor", "kiosk-lab",
        ])
        #expect(one.status == 0 && one.stdout.contains("(the receiver's n so far)"), "\(one.stdout) \(one.stderr)")
        #expect(!one.stdout.contains("least squares"), "\(one.stdout)")
    }
}

/// The product binary carries no benchmarks: they are `tracer-bench`, a program of their own.
@Suite struct ProductCommandLineTests {
    @Test func helpListsNoBenchmarkAndBenchIsUnknown() async throws {
        let help = try await TracerProcess.running(["--help"])
        #expect(help.status == 0 && help.stdout.contains("daemon"), "\(help.stderr)")
        #expect(!help.stdout.contains("bench"), "\(help.stdout)")
        for arguments in [["bench"], ["bench", "store"]] {
            let bench = try await TracerProcess.running(arguments)
            #expect(bench.status == 1 && bench.stderr.lowercased().contains("unexpected argument"), "\(bench.stderr)")
        }
    }
}

extension ArraySlice {
    /// Consecutive slices of at most `size` elements.
    func chunks(of size: Int) -> [ArraySlice<Element>] {
        stride(from: startIndex, to: endIndex, by: size).map { self[$0..<Swift.min($0 + size, endIndex)] }
    }
}

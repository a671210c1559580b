import Foundation
import Testing
import TracerAPI
import TracerModel
@_spi(Blocking) import TracerStore
import TracerTesting

/// The whole path by command: a kiosk's capture ranged, a positive self-reported, the people
/// near them flagged, told through a watching process, queried by beacon, and revoked.
@Suite struct ExposureCommandTests {
    let dir = TemporaryDirectory("tracer-exposure")
    var store: String { dir.file("s.sqlite") }
    static let map = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("BeaconMap/example-campus.yaml").path
    static let uuid = "f7826da6-4fa2-4e98-8024-bc5b71e0893e"

    func tracer(_ args: String...) async throws -> TracerProcess.Result {
        try await TracerProcess.running(args + ["--store", store])
    }

    /// Within the last two hours at the lab kiosk: the reporter (minor 1) at 1 m, a colleague
    /// (2) at 1.5 m beside them, a visitor (3) at 1 m an hour later, someone (4) at 9 m.
    func rangeALabMorning() async throws {
        await ResultImages.ready()
        var f = ReplayFixture()
        f.rate = 2
        f.receiverBias = -3  // worn badges, as the example site is calibrated for
        let start = (Date().timeIntervalSince1970 - 7200).rounded()
        func badge(_ minor: UInt16, _ distance: Double, _ from: Double, _ to: Double) -> ReplayFixture.Badge {
            .init(
                uuid: Self.uuid,
                major: 1,
                minor: minor,
                address: "AA:BB:CC:00:00:0\(minor)",
                distance: distance,
                from: start + from,
                to: start + to
            )
        }
        f.badges = [badge(1, 1, 0, 600), badge(2, 1.5, 60, 540), badge(3, 1, 4200, 4500), badge(4, 9, 0, 600)]
        let replay = dir.file("lab.jsonl")
        try f.write(to: replay)
        let r = try await TracerProcess.running([
            "daemon", "--map", Self.map, "--anchor", "kiosk-lab", "--source", "replay:\(replay)", "--store", store,
        ])
        try #require(r.status == 0, "\(r.stderr)")
    }

    @Test func aSelfReportFlagsTheColleagueAndTellsThemAtOnce() async throws {
        try await rangeALabMorning()
        let colleague = "\(Self.uuid):1:2"
        let watcher = try TracerProcess.start([
            "status", "--device", colleague, "--watch", "--json", "--store", store,
        ])
        defer { watcher.kill(SIGTERM) }
        #expect(await watcher.line()?.contains(#""status":"clear""#) == true)

        let report = try await tracer(
            "self-report",
            ResultImages.file("lab-pcr-positive.png"),
            "--device",
            "\(Self.uuid):1:1",
            "--yes"
        )
        #expect(report.status == 0, "\(report.stderr)")
        #expect(report.stdout.contains("exposures: 1 device flagged (1 exposure)"), "\(report.stdout)")

        // The watching process hears of it.
        let told = await watcher.line(timeout: 5) ?? ""
        #expect(told.contains(#""status":"exposed""#) && told.contains(#""risk":"medium""#), "\(told)")
        #expect(told.contains(#""beaconKey":"kiosk-lab""#))

        let status = try await tracer("status", "--device", colleague)
        #expect(status.stdout.hasPrefix("\(colleague): exposed, risk medium; 1 exposure"), "\(status.stdout)")
        for other in ["3", "4"] {
            let s = try await tracer("status", "--device", "\(Self.uuid):1:\(other)", "--json")
            #expect(s.stdout.contains(#""status":"clear""#), "\(other): \(s.stdout)")
        }
        await #expect(
            try tracer("status", "--device", "\(Self.uuid):1:1").stdout.hasPrefix("\(Self.uuid):1:1: positive")
        )

        let byBeacon = try await tracer("exposure", "--beacon", "kiosk-lab", "--json")
        let array = try JSONSerialization.jsonObject(with: Data(byBeacon.stdout.utf8)) as? [[String: Any]] ?? []
        #expect(array.count == 1)
        #expect(array.first?["deviceId"] as? String == colleague)
        let keys = Set(array.first.map { Array($0.keys) } ?? [])
        #expect(
            keys.isSuperset(of: ["deviceId", "reportId", "beaconKey", "from", "to", "separation", "overlapSeconds"])
        )
        let none = try await tracer("exposure", "--beacon", "kiosk-cafe")
        #expect(none.stdout == "no exposures\n")
        // A beacon nobody has is a mistake, not "no exposures".
        let typo = try await tracer("exposure", "--beacon", "kiosk-lob")
        #expect(typo.status == 1 && typo.stderr.split(separator: "\n").count == 1, "\(typo.stderr)")
        #expect(
            typo.stderr.contains("no beacon kiosk-lob: the closest known are kiosk-lab, kiosk-lobby"),
            "\(typo.stderr)"
        )
        // --since as a person writes it.
        #expect(try await tracer("exposure", "--beacon", "kiosk-lab", "--since", "today").status == 0)
        for since in ["yesterday", "24h", "2026-01-01T11:00", "2026-01-01 11:00", "2026-01-01"] {
            let r = try await tracer("exposure", "--beacon", "kiosk-lab", "--since", since, "--json")
            #expect(r.status == 0 && r.stdout.contains(colleague), "\(since): \(r.stderr)")
        }
        let future = try await tracer("exposure", "--beacon", "kiosk-lab", "--since", "2099-01-01T00:00")
        #expect(future.stdout == "no exposures\n", "\(future.stdout)\(future.stderr)")
        let monday = try await tracer("exposure", "--beacon", "kiosk-lab", "--since", "monday")
        #expect(
            monday.status == 1 && monday.stderr.contains("yesterday, today, or an age (24h, 7d)"),
            "\(monday.stderr)"
        )
        let reportID = array.first?["reportId"] as? String ?? ""
        let table = try await tracer("exposure", "--device", colleague)
        #expect(table.stdout.hasPrefix("device"), "\(table.stdout)")
        #expect(table.stdout.hasSuffix("1 exposure of 1 device, for report \(reportID)\n"), "\(table.stdout)")

        // The health team's questions per report: a table in 100 columns, CSV for the health
        // authority, the same from the site server.
        let perReport = try await tracer("exposure", "--report", reportID)
        #expect(perReport.status == 0, "\(perReport.stderr)")
        #expect(
            perReport.stderr.hasPrefix("report \(reportID) (accepted) from device \(Self.uuid):1:1: 1 device flagged")
        )
        let lines = perReport.stdout.split(separator: "\n")
        #expect(lines.allSatisfy { $0.count <= 100 }, "\(perReport.stdout)")
        #expect(lines.first?.contains("how close") == true && lines.first?.contains("together") == true)
        #expect(lines.count >= 3 && lines[1].contains("Wet Lab (kiosk-lab)") && lines[1].contains("≤ "), "\(lines)")
        #expect(lines[1].hasPrefix("f782…:1:2  "), "\(lines)")
        let csv = try await tracer("exposure", "--report", reportID, "--format", "csv")
        let rows = csv.stdout.split(separator: "\n")
        #expect(
            rows.first
                == "\u{FEFF}device_id,report_id,beacon,room,from,to,separation_min_m,separation_max_m,contact,together_s,chance"
        )
        // How they met, said: never a together_s of 0 that reads as no contact.
        for row in rows.dropFirst() {
            let cells = row.split(separator: ",", omittingEmptySubsequences: false)
            #expect(cells.count == 11, "\(row)")
            if cells.count == 11 {
                #expect(
                    (cells[8] == "at_once" && (Int(cells[9]) ?? 0) > 0)
                        || (cells[8] == "within_5_min" && cells[9].isEmpty),
                    "\(row)"
                )
            }
        }
        // UTF-8's byte-order mark first, so that Excel reads "Café" as it is.
        #expect(Array(csv.stdout.utf8.prefix(3)) == [0xEF, 0xBB, 0xBF])
        #expect(rows.count == 2 && rows[1].hasPrefix("\(colleague),\(reportID),kiosk-lab,Wet Lab,"), "\(csv.stdout)")
        let nope = try await tracer("exposure", "--report", "nope")
        #expect(nope.status == 1 && nope.stderr.contains("no report nope"), "\(nope.stderr)")
        let admin = try await tracer("token", "create", "--role", "admin", "--name", "health")
        let adminFile = dir.file("health.token")
        try admin.stdout.write(toFile: adminFile, atomically: true, encoding: .utf8)
        let server = try await ReplicationTests.SiteServer(store: store)
        defer { server.process.kill() }
        let remote = ["--server", server.url, "--token-file", adminFile]
        let there = try await TracerProcess.running(["exposure", "--report", reportID, "--format", "csv"] + remote)
        #expect(there.status == 0 && there.stdout == csv.stdout, "\(there.stdout)\(there.stderr)")
        let thereTable = try await TracerProcess.running(["exposure", "--report", reportID] + remote)
        #expect(thereTable.stdout == perReport.stdout, "\(thereTable.stdout)\(thereTable.stderr)")
        let thereTypo = try await TracerProcess.running(["exposure", "--beacon", "kiosk-lob"] + remote)
        #expect(
            thereTypo.status == 1 && thereTypo.stderr.contains("the closest known are kiosk-lab"),
            "\(thereTypo.stderr)"
        )

        // Flagging again changes nothing; revoking clears the colleague: both through the server.
        let again = try await TracerProcess.running(["report", "flag", reportID] + remote)
        #expect(again.stdout.contains("(0 written or removed)"), "\(again.stdout)\(again.stderr)")
        let policy = try await TracerProcess.running(["report", "flag", reportID, "--radius", "3"] + remote)
        #expect(policy.status == 1 && policy.stderr.contains("under the site's policy"), "\(policy.stderr)")
        let unknown = try await TracerProcess.running(["report", "revoke", "nope"] + remote)
        #expect(unknown.status == 1 && unknown.stderr.contains("no report nope"), "\(unknown.stderr)")
        let revoke = try await TracerProcess.running(["report", "revoke", reportID] + remote)
        #expect(revoke.stdout == "report \(reportID) revoked; 1 exposure removed\n", "\(revoke.stdout)")
        await #expect(try tracer("status", "--device", colleague).stdout.hasPrefix("\(colleague): clear, risk low"))
        // The revocation shows to the reporter too: in the status (the page reads the same
        // document), and in what the webhook sends. (It said "accepted" in both.)
        let reporter = "\(Self.uuid):1:1"
        let withdrawn = try await tracer("status", "--device", reporter)
        #expect(
            withdrawn.stdout.contains("your report \(reportID) was withdrawn by the health team"),
            "\(withdrawn.stdout)"
        )
        let json = try await tracer("status", "--device", reporter, "--json")
        #expect(json.stdout.contains(#""report":{"id":"\#(reportID)","status":"revoked"}"#), "\(json.stdout)")
        let receiver = try HTTPReceiver()
        let notifier = try TracerProcess.start([
            "notify", "--webhook", "http://127.0.0.1:\(receiver.port)/hook", "--store", store,
        ])
        defer { notifier.kill(SIGTERM) }
        var sent: [String] = []
        while let body = receiver.next(timeout: 10) {
            sent.append(body)
            if body.contains(#""deviceId":"\#(reporter)""#) { break }
        }
        let hook = sent.first { $0.contains(#""deviceId":"\#(reporter)""#) } ?? ""
        #expect(hook.contains(#""status":"revoked""#) && !hook.contains(#""status":"accepted""#), "\(sent)")
    }

    /// A doubtful report waits for the health team: nobody is flagged, the reporter is told it
    /// waits; approved at the command line, the colleague is flagged and told at once, and the
    /// image kept for the reviewer is gone.
    @Test func aHeldReportFlagsOnlyOnceApproved() async throws {
        try await rangeALabMorning()
        let colleague = "\(Self.uuid):1:2"
        let reporter = "\(Self.uuid):1:1"
        let watcher = try TracerProcess.start([
            "status", "--device", colleague, "--watch", "--json", "--store", store,
        ])
        defer { watcher.kill(SIGTERM) }
        #expect(await watcher.line()?.contains(#""status":"clear""#) == true)

        let held = try await tracer(
            "self-report",
            ResultImages.file("lab-pcr-positive-two-dates.png"),
            "--device",
            reporter,
            "--yes"
        )
        #expect(held.status == 3, "\(held.stderr)")
        #expect(held.stdout.hasPrefix("FOR REVIEW: the health team will look at this result"), "\(held.stdout)")
        #expect(held.stdout.contains("  DOUBT  date: the page gives two collection dates"), "\(held.stdout)")
        let id = try #require(
            held.stdout.split(separator: "\n").first { $0.hasPrefix("sent to the health team: report ") }?
                .split(separator: " ").dropFirst(6).first.map(String.init)
        )
        #expect(FileManager.default.fileExists(atPath: dir.file("s.sqlite.review/\(id)")))
        await #expect(
            try tracer("status", "--device", colleague).stdout.hasPrefix("\(colleague): clear, risk low")
        )
        let mine = try await tracer("status", "--device", reporter)
        #expect(mine.stdout.contains("your report \(id) is with the health team"), "\(mine.stdout)")

        let pending = try await tracer("report", "pending")
        #expect(
            pending.stdout.hasPrefix("1 report waiting for review:\n\(id)  device \(reporter)"),
            "\(pending.stdout)"
        )
        #expect(pending.stdout.contains("image kept"))
        #expect(pending.stdout.contains("  why: date: the page gives two collection dates"))

        let approve = try await tracer("report", "approve", id, "--by", "Dr. Nurse", "--note", "checked with the lab")
        #expect(approve.status == 0, "\(approve.stderr)")
        #expect(
            approve.stdout.hasPrefix("report \(id) accepted by Dr. Nurse\nexposures: 1 device flagged"),
            "\(approve.stdout)"
        )
        let told = await watcher.line(timeout: 10) ?? ""
        #expect(told.contains(#""status":"exposed""#), "\(told)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("s.sqlite.review/\(id)")))
        await #expect(try tracer("status", "--device", reporter).stdout.hasPrefix("\(reporter): positive"))
        await #expect(try tracer("report", "pending").stdout.hasPrefix("no reports wait for review"))
        let twice = try await tracer("report", "deny", id)
        #expect(twice.status == 1)
        #expect(twice.stderr.hasPrefix("Error: report \(id) is accepted by Dr. Nurse at "), "\(twice.stderr)")
        let audit = try await tracer("db", "query", "audit", "--json")
        #expect(audit.stdout.contains(#""method":"APPROVE""#) && audit.stdout.contains("checked with the lab"))
    }

    /// The site's map sets the policy: at a 2 m radius under the sum rule the colleague
    /// (1 m + 1.5 m) is not flagged, and flagging again with the site's defaults finds them.
    @Test func theSitesSettingsSetThePolicy() async throws {
        try await rangeALabMorning()
        let map = dir.file("tight.yaml")
        let site = try String(contentsOfFile: Self.map, encoding: .utf8)
        try (site[..<site.range(of: "\nsettings:")!.lowerBound] + "\nsettings: {exposureRadius: 2, separation: sum}\n")
            .write(toFile: map, atomically: true, encoding: .utf8)
        let r = try await tracer(
            "self-report",
            ResultImages.file("lab-pcr-positive.png"),
            "--device",
            "\(Self.uuid):1:1",
            "--yes",
            "--map",
            map
        )
        #expect(r.status == 0 && r.stdout.contains("exposures: nobody was within 2 m"), "\(r.stdout)\(r.stderr)")
        let reports = try await tracer("db", "query", "reports", "--json")
        let rows = try JSONSerialization.jsonObject(with: Data(reports.stdout.utf8)) as? [[String: Any]] ?? []
        let id = (rows.first?["path"] as? String)?.split(separator: "/").last.map(String.init) ?? ""
        let again = try await tracer("report", "flag", id, "--map", Self.map)
        #expect(again.stdout.hasPrefix("report \(id): 1 device exposed, 1 exposure"), "\(again.stdout)\(again.stderr)")
    }

    @Test func badQueriesAreOneLine() async throws {
        try await rangeALabMorning()
        let both = try await tracer("exposure", "--beacon", "kiosk-lab", "--device", "x")
        #expect(both.status == 1 && both.stderr.contains("exactly one of --beacon"))
        let since = try await tracer("exposure", "--beacon", "kiosk-lab", "--since", "last week")
        #expect(since.status == 1 && since.stderr.contains("--since takes a date"), "\(since.stderr)")
        let missing = try await tracer("report", "revoke", "nope")
        #expect(missing.status == 1 && missing.stderr == "Error: no report nope\n", "\(missing.stderr)")
    }
}

/// `tracer notify`: status changes POSTed at least once, retried, and resumed after a restart.
@Suite struct NotifyCommandTests {
    let dir = TemporaryDirectory("tracer-notify")
    var store: String { dir.file("s.sqlite") }

    func set(_ path: String, _ json: String) async throws {
        let r = try await TracerProcess.running(["db", "set", path, json, "--store", store, "--merge"])
        try #require(r.status == 0, "\(r.stderr)")
    }

    func start(_ receiver: HTTPReceiver) throws -> TracerProcess.Background {
        try TracerProcess.start([
            "notify", "--webhook", "http://127.0.0.1:\(receiver.port)/hook", "--store", store,
            "--state", dir.file("notify.state"),
        ])
    }

    @Test func postsRetriesAndResumesWithoutMissingAChange() async throws {
        try await set("devices/a", #"{"status": "clear", "risk": "low"}"#)
        let receiver = try HTTPReceiver()
        var notifier = try start(receiver)
        #expect(await notifier.line()?.hasPrefix("notifying http://127.0.0.1:") == true)
        let first = receiver.next() ?? ""
        #expect(first.contains(#""deviceId":"a""#) && first.contains(#""status":"clear""#), "\(first)")
        // What it POSTs is the document's `DeviceStatusChange` webhook body, exactly.
        let change = try JSONDecoder().decode(Components.Schemas.DeviceStatusChange.self, from: Data(first.utf8))
        #expect(change.deviceId == "a" && change.status == .clear && change.risk == .low && change.token > 0)

        let saved = try await waitForState(differentFrom: nil)
        // The receiver is down for two attempts: the change still arrives.
        receiver.failNext(2)
        try await set("devices/a", #"{"status": "exposed", "risk": "medium", "exposureCount": 1}"#)
        let second = receiver.next(timeout: 15) ?? ""
        #expect(second.contains(#""status":"exposed""#) && second.contains(#""exposureCount":1"#), "\(second)")
        let exposed = try JSONDecoder().decode(Components.Schemas.DeviceStatusChange.self, from: Data(second.utf8))
        #expect(exposed.status == .exposed && exposed.exposureCount == 1 && exposed.token > change.token)
        #expect(receiver.refused == 2)

        // Stopped hard; a change happens while it is down; restarted, it delivers that change.
        _ = try await waitForState(differentFrom: saved)  // written once the change is delivered
        notifier.kill()
        try await set("devices/b", #"{"status": "exposed", "risk": "medium", "exposureCount": 1}"#)
        notifier = try start(receiver)
        #expect(await notifier.line()?.contains("after change") == true)
        let third = receiver.next() ?? ""
        #expect(third.contains(#""deviceId":"b""#), "\(third)")
        #expect(receiver.next(timeout: 1) == nil, "a change delivered before the restart came again")
        notifier.kill(SIGTERM)
    }

    /// The notifier's saved token, once it differs from `previous`.
    func waitForState(differentFrom previous: String?) async throws -> String {
        for _ in 0..<3000 {
            if let text = try? String(contentsOfFile: dir.file("notify.state"), encoding: .utf8), text != previous {
                return text
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw CocoaError(.fileReadNoSuchFile)
    }

    /// Before the token was kept in the store, it was kept in a file beside a SQLite store: an
    /// upgraded notifier moves it in and resumes from it.
    @Test func aTokenKeptInAFileByAnEarlierVersionMovesIntoTheStore() async throws {
        try await set("devices/a", #"{"status": "clear"}"#)
        try await set("devices/b", #"{"status": "clear"}"#)
        let receiver = try HTTPReceiver()
        let hook = "http://127.0.0.1:\(receiver.port)/hook"
        // a delivered, b not
        let token = try await DocumentStore(path: store).reading { db in try db.currentToken() } - 1
        let legacy = store + ".notify-" + String(Digest.sha256Hex(hook).prefix(12)) + ".state"
        try "\(token)\n".write(toFile: legacy, atomically: true, encoding: .utf8)
        let notifier = try TracerProcess.start(["notify", "--webhook", hook, "--store", store])
        defer { notifier.kill() }
        #expect(await notifier.line()?.hasSuffix("after change \(token)") == true, "\(notifier.stderr)")
        let first = receiver.next() ?? ""
        #expect(first.contains(#""deviceId":"b""#), "\(first)")
        #expect(!FileManager.default.fileExists(atPath: legacy))
        #expect(receiver.next(timeout: 1) == nil, "a change before the kept token was delivered")
    }

    @Test func aWebhookMustBeHTTP() async throws {
        try await set("devices/a", #"{"status": "clear"}"#)
        let r = try await TracerProcess.running(["notify", "--webhook", "ftp://x", "--store", store])
        #expect(r.status == 1 && r.stderr.contains("--webhook takes an http:// or https:// URL"), "\(r.stderr)")
    }

    /// The tests' webhook receiver, let go, stops listening: before, its accepting thread held
    /// it, and its socket, for the rest of the test process's life.
    @Test func aReceiverLetGoStopsListening() async throws {
        var receiver: HTTPReceiver? = try HTTPReceiver()
        let port = try #require(receiver?.port)
        #expect(await httpGet(port: port, path: "/hook") == "")
        receiver = nil
        #expect(await until(10) { await httpGet(port: port, path: "/hook", timeout: 1) == nil })
    }
}

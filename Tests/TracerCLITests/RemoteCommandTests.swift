import Foundation
import Testing
@_spi(Blocking) import TracerStore
import TracerTesting

/// A person's commands against the site server (`--server URL --token-file FILE`): the same
/// output, prompts and exit codes as on a store here.
@Suite struct RemoteCommandTests {
    static let uuid = ExposureCommandTests.uuid

    /// A lab morning ranged into the site store, a copy of it for the local run, the server on
    /// the original, and a device token for the reporter and the colleague.
    @Test func selfReportAndStatusThroughTheServerMatchTheLocalCommands() async throws {
        let t = ExposureCommandTests()
        try await t.rangeALabMorning()
        let local = t.dir.file("local.sqlite")
        // The store with its write-ahead log: a write not yet checkpointed is in the log only.
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: t.store + suffix) {
            try FileManager.default.copyItem(atPath: t.store + suffix, toPath: local + suffix)
        }
        let reporter = "\(Self.uuid):1:1"
        let colleague = "\(Self.uuid):1:2"
        var tokens: [String: String] = [:]
        for device in [reporter, colleague] {
            let r = try await t.tracer("token", "create", "--role", "device", "--device", device)
            try #require(r.status == 0, "\(r.stderr)")
            let file = t.dir.file("\(device.suffix(3)).token")
            try r.stdout.write(toFile: file, atomically: true, encoding: .utf8)
            tokens[device] = file
        }
        let server = try await ReplicationTests.SiteServer(store: t.store)
        defer { server.process.kill() }
        func remote(_ args: [String], as device: String, env: Bool = false) async throws -> TracerProcess.Result {
            env
                ? try await TracerProcess.running(
                    args,
                    environment: ["TRACER_SERVER": server.url, "TRACER_TOKEN_FILE": tokens[device]!]
                )
                : try await TracerProcess.running(args + ["--server", server.url, "--token-file", tokens[device]!])
        }

        // The colleague follows their status through the server's watch.
        let watcher = try TracerProcess.start(
            ["status", "--device", colleague, "--watch", "--server", server.url, "--token-file", tokens[colleague]!]
        )
        defer { watcher.kill(SIGTERM) }
        #expect(await watcher.line()?.hasPrefix("\(colleague): clear, risk low") == true, "\(watcher.stderr)")

        // A negative is rejected alike: exit 2, the failed rules, nothing recorded.
        let negative = ResultImages.file("lab-not-detected-many-positive.png")
        let rejected = try await remote(["self-report", negative, "--device", reporter, "--yes"], as: reporter)
        let rejectedHere = try await TracerProcess.running([
            "self-report", negative, "--device", reporter, "--yes", "--store", local,
        ])
        #expect(rejected.status == 2 && rejectedHere.status == 2, "\(rejected.stderr)")
        #expect(rejected.stdout == rejectedHere.stdout)
        #expect(rejected.stderr.hasPrefix("rejected: ") && rejected.stderr == rejectedHere.stderr)

        // No terminal and no --yes: nothing recorded, the same message.
        let positive = ResultImages.file("lab-pcr-positive.png")
        let unconfirmed = try await remote(["self-report", positive, "--device", reporter], as: reporter)
        #expect(unconfirmed.status == 1 && unconfirmed.stderr.contains("no terminal to confirm on: add --yes"))

        // Accepted: the same evidence, the same report (its id comes from the image and the
        // device), the same flagging.
        let there = try await remote(["self-report", positive, "--yes"], as: reporter, env: true)
        let here = try await TracerProcess.running([
            "self-report", positive, "--device", reporter, "--yes", "--store", local,
        ])
        #expect(there.status == 0, "\(there.stderr)")
        #expect(there.stdout == here.stdout, "there:\n\(there.stdout)\nhere:\n\(here.stdout)")
        #expect(there.stdout.contains("exposures: 1 device flagged (1 exposure)"), "\(there.stdout)")

        let told = await watcher.line(timeout: 60) ?? ""
        #expect(told.hasPrefix("\(colleague): exposed, risk medium; 1 exposure"), "\(told)")
        for json in [false, true] {
            let extra = json ? ["--json"] : []
            let s = try await remote(["status", "--device", colleague] + extra, as: colleague)
            let l = try await TracerProcess.running(["status", "--device", colleague, "--store", local] + extra)
            #expect(s.status == 0 && s.stdout == l.stdout, "there:\n\(s.stdout)\nhere:\n\(l.stdout)")
        }
        // A device token reads its own device only.
        let other = try await remote(["status", "--device", colleague], as: reporter)
        #expect(other.status == 1 && other.stderr.contains("does not let this token"), "\(other.stderr)")
    }

    /// A doubtful report through the server: held alike (exit 3, the same output as on a store
    /// here), listed and denied by an admin token from another machine, and the reporter reads
    /// the denial through the server.
    @Test func aHeldReportIsReviewedThroughTheServer() async throws {
        let t = ExposureCommandTests()
        await ResultImages.ready()
        let local = t.dir.file("local.sqlite")
        _ = try DocumentStore(path: local)  // the same desk on a store of its own
        let reporter = "\(Self.uuid):1:1"
        var tokens: [String: String] = [:]
        for (name, args) in [
            ("reporter", ["--role", "device", "--device", reporter]),
            ("admin", ["--role", "admin", "--name", "nurse"]),
        ] {
            let r = try await TracerProcess.running(["token", "create"] + args + ["--store", t.store])
            try #require(r.status == 0, "\(r.stderr)")
            tokens[name] = t.dir.file("\(name).token")
            try r.stdout.write(toFile: tokens[name]!, atomically: true, encoding: .utf8)
        }
        let server = try await ReplicationTests.SiteServer(store: t.store)
        defer { server.process.kill() }
        func remote(_ args: [String], as who: String) async throws -> TracerProcess.Result {
            try await TracerProcess.running(args + ["--server", server.url, "--token-file", tokens[who]!])
        }
        let image = ResultImages.file("lab-pcr-positive-two-dates.png")
        let there = try await remote(["self-report", image, "--yes"], as: "reporter")
        let here = try await TracerProcess.running([
            "self-report", image, "--device", reporter, "--yes", "--store", local,
        ])
        #expect(there.status == 3 && here.status == 3, "\(there.stderr)")
        // The same words, but for the hint, which names the command as each was run.
        let (thereLines, hereLines) = (there.stdout.split(separator: "\n"), here.stdout.split(separator: "\n"))
        #expect(thereLines.dropLast() == hereLines.dropLast(), "there:\n\(there.stdout)\nhere:\n\(here.stdout)")
        #expect(there.stdout.contains("sent to the health team: report "))
        #expect(
            thereLines.last
                == "`tracer status --device \(reporter) --server \(server.url) --token-file \(tokens["reporter"]!)` shows their decision",
            "\(there.stdout)"
        )
        #expect(
            hereLines.last == "`tracer status --device \(reporter) --store \(local)` shows their decision",
            "\(here.stdout)"
        )
        // Each hint works as printed.
        for hint in [thereLines.last, hereLines.last] {
            let words = (hint ?? "").split(separator: "`")[0].split(separator: " ").dropFirst().map(String.init)
            let ran = try await TracerProcess.running(words)
            #expect(ran.status == 0 && ran.stdout.contains("your report "), "\(words): \(ran.stderr)")
        }
        // A device token's own status needs no --device.
        let mine = try await remote(["status"], as: "reporter")
        #expect(mine.status == 0 && mine.stdout.hasPrefix("\(reporter): "), "\(mine.stdout)\(mine.stderr)")
        let admins = try await remote(["status"], as: "admin")
        #expect(admins.status == 1 && admins.stderr.contains("an admin token, not a device's: give --device ID"))

        // A device token may not review.
        let refused = try await remote(["report", "pending"], as: "reporter")
        #expect(refused.status == 1 && refused.stderr.contains("does not let this token"), "\(refused.stderr)")
        let pending = try await remote(["report", "pending", "--json"], as: "admin")
        let object = try JSONSerialization.jsonObject(with: Data(pending.stdout.utf8)) as? [String: Any] ?? [:]
        let reports = try #require(object["reports"] as? [[String: Any]], "\(pending.stdout)\(pending.stderr)")
        let id = try #require(reports.first?["reportId"] as? String)
        #expect(reports.count == 1 && reports.first?["image"] as? Bool == true)
        let deny = try await remote(["report", "deny", id, "--note", "ask your lab"], as: "admin")
        #expect(deny.status == 0, "\(deny.stderr)")
        #expect(deny.stdout.hasPrefix("report \(id) denied by nurse"), "\(deny.stdout)")
        let again = try await remote(["report", "approve", id], as: "admin")
        #expect(again.status == 1 && again.stderr.contains("is denied by nurse at"), "\(again.stderr)")
        let status = try await remote(["status", "--device", reporter], as: "reporter")
        #expect(status.stdout.contains("your report \(id) was denied at review: ask your lab"), "\(status.stdout)")
    }

    /// The generated client's path: a server that does not answer is left for the next one
    /// (`--server A,B`), and a refusal is the server's one line, naming the token file.
    @Test func theServersAreTriedInTurnAndARefusalIsOneLine() async throws {
        let t = ExposureCommandTests()
        let created = try await t.tracer("token", "create", "--role", "admin", "--name", "nurse")
        try #require(created.status == 0, "\(created.stderr)")
        let admin = t.dir.file("admin.token")
        try created.stdout.write(toFile: admin, atomically: true, encoding: .utf8)
        let wrong = t.dir.file("wrong.token")
        try "tracer_abc_def\n".write(toFile: wrong, atomically: true, encoding: .utf8)
        let server = try await ReplicationTests.SiteServer(store: t.store)
        defer { server.process.kill() }

        let both = "http://127.0.0.1:9,\(server.url)"
        let listed = try await TracerProcess.running(["report", "pending", "--server", both, "--token-file", admin])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout.hasPrefix("no reports wait for review (review: doubtful)"), "\(listed.stdout)")
        let json = try await TracerProcess.running([
            "report", "pending", "--json", "--server", both, "--token-file", admin,
        ])
        #expect(json.stdout == "{\"reports\":[],\"review\":\"doubtful\"}\n", "\(json.stdout)")

        let refused = try await TracerProcess.running(["report", "pending", "--server", both, "--token-file", wrong])
        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(refused.stderr.hasPrefix("Error: the site server refused the token in \(wrong): "), "\(refused.stderr)")
        #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")

        let missing = try await TracerProcess.running([
            "report", "approve", "no-such-report", "--server", server.url, "--token-file", admin,
        ])
        #expect(missing.status == 1 && missing.stderr == "Error: no report no-such-report\n", "\(missing.stderr)")
    }
}

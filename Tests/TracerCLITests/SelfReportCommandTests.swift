import Foundation
import Testing
@_spi(Blocking) import TracerStore
import TracerTesting

/// `tracer self-report` and `tracer verify` as a person runs them, on rendered results.
@Suite struct SelfReportCommandTests {
    let dir = TemporaryDirectory("tracer-self-report")
    var store: String { dir.file("s.sqlite") }

    static func image(_ name: String) async -> String {
        await ResultImages.ready()
        return ResultImages.file(name)
    }

    /// A command on the test's store, made first (as a kiosk's or the server's would be there:
    /// `self-report` never makes one).
    func tracer(_ args: String...) async throws -> TracerProcess.Result {
        if !FileManager.default.fileExists(atPath: store) { _ = try DocumentStore(path: store) }
        return try await TracerProcess.running(args + ["--store", store])
    }

    @Test func anAcceptedReportIsRecordedOnceWithoutTheImage() async throws {
        let image = await Self.image("lab-pcr-positive.png")
        let r = try await tracer("self-report", image, "--device", "dev-7", "--yes", "--symptoms", "yes")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasPrefix("ACCEPTED: a recent positive COVID-19 test"), "\(r.stdout)")
        #expect(r.stdout.contains("  pass  result: the result is positive"))
        #expect(r.stdout.contains("recorded report "), "\(r.stdout)")

        let again = try await tracer("self-report", image, "--device", "dev-7", "--yes")
        #expect(again.status == 0 && again.stdout.contains("already reported: report "), "\(again.stdout)")

        let reports = try await TracerProcess.running(["db", "query", "reports", "--json", "--store", store])
        let lines = reports.stdout.split(separator: "\n")
        #expect(lines.count == 1, "\(reports.stdout)")
        let expected = try shellSHA256(image)
        #expect(reports.stdout.contains(#""imageSHA256":"\#(expected)""#), "\(reports.stdout)")
        #expect(reports.stdout.contains(#""symptoms":true"#))
        let device = try await TracerProcess.running(["db", "get", "devices/dev-7", "--json", "--store", store])
        #expect(device.stdout.contains(#""status":"positive""#), "\(device.stdout)")
        // The store holds no image: nothing near the file's size was written.
        let size = try FileManager.default.attributesOfItem(atPath: image)[.size] as? Int ?? 0
        let export = try await TracerProcess.running(["db", "export", "--store", store])
        #expect(export.stdout.utf8.count < size / 2)
    }

    func shellSHA256(_ path: String) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        p.arguments = [path]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        p.waitUntilExit()
        return String(String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).prefix(64))
    }

    @Test func aNegativeIsRejectedWithExitTwoAndNothingStored() async throws {
        let r = try await tracer("self-report", await Self.image("lab-pcr-negative.png"), "--device", "dev-8", "--yes")
        #expect(r.status == 2)
        #expect(r.stdout.hasPrefix("REJECTED"))
        #expect(r.stderr.hasPrefix("rejected: result (the result is negative"), "\(r.stderr)")
        #expect(r.stderr.hasSuffix("nothing was recorded\n"))
        // Nothing in the store: no report, no device.
        let kept = try DocumentStore(path: store)
        #expect(
            try await kept.reading { db in try db.getDocuments(Query(collection: CollectionPath("reports"))) }.isEmpty
        )
        #expect(
            try await kept.reading { db in try db.getDocuments(Query(collection: CollectionPath("devices"))) }.isEmpty
        )
    }

    /// A page the rules cannot decide: `verify` says so (exit 3), `self-report` holds it for
    /// the health team (exit 3), who deny it with a note that the reporter reads in their status.
    @Test func aDoubtfulReportIsHeldAndADenialTellsTheReporter() async throws {
        let image = await Self.image("lab-pcr-positive-two-dates.png")
        let verify = try await TracerProcess.running(["verify", image])
        #expect(verify.status == 3)
        #expect(verify.stdout.hasPrefix("DOUBTFUL"), "\(verify.stdout)")
        #expect(verify.stderr.hasPrefix("doubtful: date: the page gives two collection dates"), "\(verify.stderr)")

        let r = try await tracer("self-report", image, "--device", "dev-h", "--yes", "--json")
        #expect(r.status == 3, "\(r.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any] ?? [:]
        #expect(object["status"] as? String == "pending" && object["decision"] as? String == "pending")
        #expect((object["doubts"] as? [String])?.first?.hasPrefix("date: the page gives two collection dates") == true)
        let id = try #require(object["reportId"] as? String)
        let file = dir.file("s.sqlite.review/\(id)")
        let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        // Never in the store: its export is far smaller than the image.
        let size = try FileManager.default.attributesOfItem(atPath: image)[.size] as? Int ?? 0
        #expect(try await tracer("db", "export").stdout.utf8.count < size / 2)

        let pending = try await tracer("report", "pending", "--json")
        #expect(pending.stdout.contains(#""image":true"#) && pending.stdout.contains(id), "\(pending.stdout)")
        let deny = try await tracer(
            "report",
            "deny",
            id,
            "--note",
            "two collection dates: ask your lab",
            "--by",
            "nurse"
        )
        #expect(deny.status == 0, "\(deny.stderr)")
        #expect(deny.stdout.hasPrefix("report \(id) denied by nurse"), "\(deny.stdout)")
        #expect(!FileManager.default.fileExists(atPath: file))
        let status = try await tracer("status", "--device", "dev-h")
        #expect(
            status.stdout.contains("your report \(id) was denied at review: two collection dates: ask your lab"),
            "\(status.stdout)"
        )
        // The same image again is not recorded again.
        let again = try await tracer("self-report", image, "--device", "dev-h", "--yes")
        #expect(again.status == 2)
        #expect(again.stderr.contains("reported before and denied (report \(id))"), "\(again.stderr)")
        // Another, clean photo from the same device waits for the health team too, saying why
        // (it was accepted, and flagged people, with nobody looking).
        let next = try await tracer(
            "self-report",
            await Self.image("lab-pcr-positive.png"),
            "--device",
            "dev-h",
            "--yes"
        )
        #expect(next.status == 3, "\(next.stdout)\(next.stderr)")
        #expect(next.stdout.hasPrefix("FOR REVIEW"), "\(next.stdout)")
        #expect(next.stdout.contains("this device's report \(id) was denied at review"), "\(next.stdout)")
        let held = try await tracer("report", "pending", "--json")
        #expect(held.stdout.contains("history: this device's report \(id) was denied"), "\(held.stdout)")
        #expect(try await tracer("status", "--device", "dev-h").stdout.hasPrefix("dev-h: clear"))
        // A site that does not review rejects the same page.
        let map = dir.file("no-review.yaml")
        let site = try String(contentsOfFile: ExposureCommandTests.map, encoding: .utf8)
        try (site[..<site.range(of: "\nsettings:")!.lowerBound] + "\nsettings: {review: none}\n")
            .write(toFile: map, atomically: true, encoding: .utf8)
        let other = dir.file("other.sqlite")
        _ = try DocumentStore(path: other)
        let none = try await TracerProcess.running([
            "self-report", image, "--device", "dev-n", "--yes", "--map", map, "--store", other,
        ])
        #expect(none.status == 2, "\(none.stderr)")
        #expect(none.stdout.hasPrefix("REJECTED"))
    }

    /// A signed certificate decides over the page's words: accepted by its trusted signature, a
    /// tampered one refused by it, through the site's published trust list; the holder's name
    /// and birth date are neither printed nor stored, the issuer's key id is.
    @Test func aSignedCertificateIsAcceptedAndATamperedOneRefused() async throws {
        await ResultImages.ready()
        let trust = ResultImages.file("trust.pem")
        let positive = ResultImages.file("dcc-positive-es256.png")
        let verify = try await TracerProcess.running(["verify", positive, "--trust-list", trust])
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(verify.stdout.contains("  pass  signature: ES256 signature of a trusted issuer"), "\(verify.stdout)")
        let untrusted = try await TracerProcess.running(["verify", positive])
        #expect(untrusted.status == 2 && untrusted.stderr.contains("no trust list"), "\(untrusted.stderr)")

        // The site names its trust list; published, the store carries it to every command.
        let map = dir.file("site.yaml")
        let site = try String(contentsOfFile: ExposureCommandTests.map, encoding: .utf8)
        try (site[..<site.range(of: "\nsettings:")!.lowerBound] + "\nsettings: {trustList: \(trust)}\n")
            .write(toFile: map, atomically: true, encoding: .utf8)
        let publish = try await tracer("map", "publish", map)
        #expect(publish.status == 0, "\(publish.stderr)")
        let r = try await tracer("self-report", positive, "--device", "dev-s", "--yes")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("  pass  signature: ES256 signature of a trusted issuer"), "\(r.stdout)")
        #expect(r.stdout.contains("  pass  result: the result is positive (detected)"), "\(r.stdout)")
        #expect(r.stdout.contains("recorded report "), "\(r.stdout)")

        let tampered = try await tracer(
            "self-report",
            ResultImages.file("dcc-tampered.png"),
            "--device",
            "dev-t",
            "--yes"
        )
        #expect(tampered.status == 2)
        #expect(tampered.stdout.hasPrefix("REJECTED"))
        #expect(tampered.stderr.hasPrefix("rejected: signature (the signature does not match"), "\(tampered.stderr)")

        let export = try await tracer("db", "export")
        #expect(export.stdout.contains("key id "), "the report keeps the issuer's key id")
        for secret in ["Proefpersoon", "PROEFPERSOON", "1990-04-12"] {
            #expect(!export.stdout.contains(secret) && !r.stdout.contains(secret), "\(secret) was kept or shown")
        }
    }

    /// A photo nobody could read is refused for that alone: the picture first and only (it was
    /// five FAIL lines about COVID and dates before the one that matters).
    @Test func aPictureNobodyCouldReadIsTheOnlyReason() async throws {
        let r = try await tracer(
            "self-report",
            await Self.image("grainy-pcr-positive.jpg"),
            "--device",
            "dev-g",
            "--yes"
        )
        #expect(r.status == 2, "\(r.stderr)")
        let rules = r.stdout.split(separator: "\n").filter { $0.hasPrefix("  FAIL") || $0.hasPrefix("  pass") }
        #expect(
            rules.count == 1 && rules.first?.hasPrefix("  FAIL  image: the picture is grainy") == true,
            "\(r.stdout)"
        )
        #expect(r.stderr.hasPrefix("rejected: image (the picture is grainy"), "\(r.stderr)")
        #expect(!r.stderr.contains("covid") && !r.stderr.contains("date ("), "\(r.stderr)")
    }

    /// On a terminal, each long wait says what is happening (reading, then recording and
    /// flagging: seconds of silence after ACCEPTED before). Run under a pseudo-terminal (`script`).
    @Test func onATerminalLongWaitsSayWhatIsHappening() async throws {
        _ = try DocumentStore(path: store)
        let image = await Self.image("lab-pcr-positive.png")
        let command = [TracerProcess.binary, "self-report", image, "--device", "dev-t", "--yes", "--store", store]
        let r = try await TracerProcess.running(
            ["-qec", command.map { "'\($0)'" }.joined(separator: " "), "/dev/null"],
            program: "/usr/bin/script"
        )
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let said = r.stdout.replacingOccurrences(of: "\r", with: "")
        let reading = said.range(of: "reading \(image)…")
        let accepted = said.range(of: "ACCEPTED")
        let recording = said.range(of: "recording the report and finding who was near this device")
        let recorded = said.range(of: "recorded report ")
        #expect(reading != nil && accepted != nil && recording != nil && recorded != nil, "\(said)")
        if let reading, let accepted, let recording, let recorded {
            #expect(reading.lowerBound < accepted.lowerBound && accepted.lowerBound < recording.lowerBound)
            #expect(recording.lowerBound < recorded.lowerBound)
        }
    }

    /// Every exit status the command can end with is in its help (3, held, was missing).
    @Test func theHelpNamesEveryExitStatus() async throws {
        let r = try await TracerProcess.running(["self-report", "--help"])
        let help = r.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for status in ["Exit 0 accepted", "3 held for the health team's review", "2 rejected", "1 bad input"] {
            #expect(help.contains(status), "\(status): \(help)")
        }
    }

    @Test func withoutATerminalItAsksForYes() async throws {
        let r = try await tracer("self-report", await Self.image("sms-positive-light.png"), "--device", "dev-9")
        #expect(r.status == 1)
        #expect(r.stderr == "Error: no terminal to confirm on: add --yes to record the report (nothing was recorded)\n")
    }

    @Test(arguments: [
        ("truncated.png", "truncated or corrupt"), ("bomb.png", "megapixel limit"),
        ("not-an-image.png", "not a PNG, JPEG, TIFF or WebP image"), ("huge.png", "limit for an image"),
        ("missing.png", "No such file or directory"),
    ])
    func badInputIsOneLineAndExitOne(_ name: String, _ words: String) async throws {
        let r = try await tracer("self-report", await Self.image(name), "--device", "dev-1", "--yes")
        #expect(r.status == 1)
        #expect(r.stderr.hasPrefix("Error: \(await Self.image(name)): ") && r.stderr.contains(words), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1)
    }

    @Test func onAKioskTheDeviceAtImmediateRangeIsTheReporter() async throws {
        // The image first (rendering it can take many seconds), then the sighting, written here
        // just before the command starts: the kiosk looks back only 30 s from its start.
        let image = await Self.image("antigen-certificate-positive.png")
        let now = Date().timeIntervalSince1970
        let written = try DocumentStore(path: store)
        try await written.writing { db in
            try db.set(
                DocumentPath("beacons/kiosk-lab/interactions/i1"),
                [
                    "deviceId": "badge-42", "proximity": "immediate",
                    "start": .timestamp(Timestamp(seconds: now - 20)), "end": .timestamp(Timestamp(seconds: now)),
                ]
            )
        }
        let r = try await tracer(
            "self-report",
            image,
            "--anchor",
            "kiosk-lab",
            "--yes",
            "--json"
        )
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains(#""deviceId":"badge-42""#) && r.stdout.contains(#""accepted":true"#), "\(r.stdout)")
        let nobody = try await tracer(
            "self-report",
            await Self.image("antigen-certificate-positive.png"),
            "--anchor",
            "kiosk-cafe",
            "--yes"
        )
        #expect(
            nobody.status == 1 && nobody.stderr.contains("no device at immediate range of kiosk-cafe"),
            "\(nobody.stderr)"
        )
    }

    @Test func verifyStoresNothingAndExitsTwoWhenRejected() async throws {
        let ok = try await TracerProcess.running(["verify", await Self.image("sms-positive-dark.png")])
        #expect(ok.status == 0 && ok.stdout.hasPrefix("ACCEPTED"), "\(ok.stdout)\(ok.stderr)")
        let old = try await TracerProcess.running(["verify", await Self.image("lab-pcr-positive-old.png")])
        #expect(old.status == 2 && old.stderr.hasPrefix("rejected: date (collected 30 days ago"), "\(old.stderr)")
    }
}

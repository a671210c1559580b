import Foundation
import Testing
import TracerStore
import TracerTesting

/// `tracer self-report` and `tracer verify` as a person runs them, on rendered results.
@Suite struct SelfReportCommandTests {
    let dir = TemporaryDirectory("tracer-self-report")
    var store: String { dir.file("s.sqlite") }

    static func image(_ name: String) async -> String {
        await ResultImages.ready()
        return ResultImages.file(name)
    }

    func tracer(_ args: String...) async throws -> TracerProcess.Result {
        try await TracerProcess.running(args + ["--store", store])
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
        // Rejected before the store is even opened.
        #expect(!FileManager.default.fileExists(atPath: store))
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
        try written.set(
            DocumentPath("beacons/kiosk-lab/interactions/i1"),
            [
                "deviceId": "badge-42", "proximity": "immediate", "start": .timestamp(Timestamp(seconds: now - 20)),
                "end": .timestamp(Timestamp(seconds: now)),
            ]
        )
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

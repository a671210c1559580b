import Foundation
import Testing
import TracerTesting

/// `tracer token create --role device --device ID --link BASE_URL [--qr FILE]`: a device's
/// one-time link and its card's QR code; every mistake one line, before anything is made.
@Suite struct LinkCommandTests {
    let dir = TemporaryDirectory("tracer-links")
    var store: String { dir.file("s.sqlite") }

    func tracer(_ args: [String]) async throws -> TracerProcess.Result {
        try await TracerProcess.running(args + ["--store", store])
    }

    @Test func aLinkAndItsCard() async throws {
        let card = dir.file("card.png")
        let made = try await tracer([
            "token", "create", "--role", "device", "--device", "dev-7", "--link", "https://tracer.example.org/",
            "--qr", card,
        ])
        #expect(made.status == 0, "\(made.stderr)")
        let link = made.stdout.trimmingCharacters(in: .newlines)
        #expect(link.hasPrefix("https://tracer.example.org/me#c=") && link.count == 32 + 12 + 1 + 32, "\(link)")
        #expect(made.stderr.contains("opens the device's page in the first browser that opens it, once"))
        let png = try Data(contentsOf: URL(fileURLWithPath: card))
        #expect(Array(png.prefix(4)) == [0x89, 0x50, 0x4E, 0x47] && png.count > 200)
        let listed = try await tracer(["token", "list"])
        #expect(listed.stdout.contains("device link  device dev-7  link not opened yet"), "\(listed.stdout)")
        let json = try await tracer([
            "token", "create", "--role", "device", "--device", "dev-8", "--link", "http://10.0.0.5:8080", "--json",
        ])
        #expect(
            json.stdout.contains(#""link":"http://10.0.0.5:8080/me#c="#)
                && json.stdout.contains(#""deviceId":"dev-8""#),
            "\(json.stdout)"
        )
    }

    @Test func mistakesAreOneLineAndMakeNothing() async throws {
        let cases: [([String], String)] = [
            (
                ["--role", "device", "--device", "d", "--link", "tracer.example.org"],
                "--link takes the site server's address"
            ),
            (
                ["--role", "device", "--device", "d", "--link", "ftp://tracer.example.org"],
                "--link takes the site server's address"
            ),
            (["--role", "admin", "--link", "https://tracer.example.org"], "--link makes a device's link"),
            (["--role", "device", "--device", "d", "--qr", dir.file("c.png")], "--qr FILE goes with --link BASE_URL"),
            (
                ["--role", "device", "--device", "d", "--link", "https://t.example.org", "--qr", "/no/such/dir/c.png"],
                "--qr /no/such/dir/c.png: cannot write there"
            ),
        ]
        for (args, words) in cases {
            let r = try await tracer(["token", "create"] + args)
            #expect(r.status == 1 && r.stderr.contains(words), "\(args): \(r.stderr)")
            #expect(r.stderr.split(separator: "\n").count == 1, "\(args): \(r.stderr)")
        }
        // Nothing was made (the store may not even exist).
        let listed = try await tracer(["token", "list"])
        #expect(!listed.stdout.contains("device link"), "\(listed.stdout)")
    }

    /// `token create --out FILE`: the token in a file its owner alone may read (0600), also over
    /// a file that was readable by others, whatever the umask; a file that cannot be written is
    /// one line, and no token is left made.
    @Test func aTokenFileIsItsOwnersOnly() async throws {
        let file = dir.file("admin.token")
        try "old".write(toFile: file, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file)
        let made = try await tracer(["token", "create", "--role", "admin", "--name", "team", "--out", file])
        #expect(made.status == 0 && made.stdout.isEmpty, "\(made.stdout) \(made.stderr)")
        #expect(made.stderr.contains("written to \(file), readable by you only"), "\(made.stderr)")
        let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(mode == 0o600, "\(String(mode ?? 0, radix: 8))")
        #expect(try String(contentsOfFile: file, encoding: .utf8).hasPrefix("tracer_"))
        for (args, says) in [
            (
                ["--out", dir.file("no/such/folder/t.token")],
                "--out \(dir.file("no/such/folder/t.token")): cannot write there"
            ),
            (["--out", dir.path], "a folder, not a file"),
            (["--out", file, "--json"], "--out FILE writes the token alone"),
        ] {
            let r = try await tracer(["token", "create", "--role", "kiosk", "--name", "nowhere"] + args)
            #expect(r.status == 1 && r.stderr.contains(says), "\(args): \(r.stderr)")
            #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        }
        let listed = try await tracer(["token", "list"])
        #expect(listed.stdout.contains("team") && !listed.stdout.contains("nowhere"), "\(listed.stdout)")
    }
}

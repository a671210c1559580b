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

    /// An iBeacon's device id, as the daemon names it.
    static func beacon(_ minor: Int) -> String { "f7826da6-4fa2-4e98-8024-bc5b71e0893e:1:\(minor)" }

    /// Issue 45, finding 3: a card only for a device the site knows. A typo, an unissued or a
    /// revoked badge is one line and makes nothing (its page would say "Clear" for ever); an
    /// iBeacon not heard yet and an issued badge get their card.
    @Test func cardsOnlyForDevicesTheSiteKnows() async throws {
        // A plain token is a program's, for any id it names (and makes the store).
        #expect(try await tracer(["token", "create", "--role", "device", "--device", "dev-9"]).status == 0)
        // The example campus with rotating badges.
        let map = dir.file("badges.yaml")
        try String(contentsOfFile: ExposureCommandTests.map, encoding: .utf8)
            .replacingOccurrences(of: "\nsettings:\n", with: "\nsettings:\n  badgeUUID: \(BadgeCommandTests.uuid)\n")
            .write(toFile: map, atomically: true, encoding: .utf8)
        #expect(try await tracer(["map", "publish", map]).status == 0)
        let issued = try await tracer(["badge", "issue", "--count", "2", "--json"])
        try #require(issued.status == 0, "\(issued.stderr)")
        let serials = issued.stdout.matches(of: /"serial":"([a-z0-9]{8})"/).map { String($0.1) }
        try #require(serials.count == 2, "\(issued.stdout)")
        let gone = try await tracer(["badge", "revoke", serials[1]])
        try #require(gone.status == 0, "\(gone.stderr)")
        let link = ["--link", "https://tracer.example.org"]
        for (device, words) in [
            ("nonsense", "no device 'nonsense' on this site"), ("badge:zzzzzzzz", "no badge zzzzzzzz was issued"),
            ("badge:\(serials[1])", "badge \(serials[1]) was revoked"),
            ("f7826da6-4fa2-4e98-8024-bc5b71e0893e:1", "no device 'f7826da6-4fa2-4e98-8024-bc5b71e0893e:1'"),
        ] {
            let r = try await tracer(["token", "create", "--role", "device", "--device", device] + link)
            #expect(r.status == 1 && r.stderr.contains(words), "\(device): \(r.stderr)")
            #expect(r.stderr.split(separator: "\n").count == 1 && r.stdout.isEmpty, "\(device): \(r.stderr)")
        }
        // Not even a plain token for a badge that was never issued.
        let plain = try await tracer(["token", "create", "--role", "device", "--device", "badge:zzzzzzzz"])
        #expect(plain.status == 1 && plain.stderr.contains("no badge zzzzzzzz was issued"), "\(plain.stderr)")
        let listed = try await tracer(["token", "list"])
        #expect(listed.stdout.split(separator: "\n").count == 1, "made something: \(listed.stdout)")
        var ids: [String] = []
        for device in ["badge:\(serials[0])", Self.beacon(17)] {
            let r = try await tracer(["token", "create", "--role", "device", "--device", device] + link + ["--json"])
            #expect(r.status == 0, "\(device): \(r.stderr)")
            ids += r.stdout.matches(of: /"id":"([A-Za-z0-9]+)"/).map { String($0.1) }
        }
        // A new card for the iBeacon replaces its first (issue 45, finding 4).
        let again = try await tracer(["token", "create", "--role", "device", "--device", Self.beacon(17)] + link)
        #expect(
            again.status == 0
                && again.stderr.contains("revoked \(Self.beacon(17))'s earlier card (\(ids.last ?? "?"))"),
            "\(again.stderr)"
        )
        let after = try await tracer(["token", "list"]).stdout.split(separator: "\n")
        #expect(after.contains { $0.hasPrefix(ids.last ?? "?") && $0.contains("revoked") }, "\(after)")
        #expect(!after.contains { $0.hasPrefix(ids.first ?? "?") && $0.contains("revoked") }, "\(after)")
    }

    @Test func aLinkAndItsCard() async throws {
        let card = dir.file("card.png")
        let made = try await tracer([
            "token", "create", "--role", "device", "--device", Self.beacon(7), "--link", "https://tracer.example.org/",
            "--qr", card,
        ])
        #expect(made.status == 0, "\(made.stderr)")
        let link = made.stdout.trimmingCharacters(in: .newlines)
        #expect(link.hasPrefix("https://tracer.example.org/me#c=") && link.count == 32 + 12 + 1 + 32, "\(link)")
        #expect(made.stderr.contains("opens the device's page in the first browser that opens it, once"))
        let png = try Data(contentsOf: URL(fileURLWithPath: card))
        #expect(Array(png.prefix(4)) == [0x89, 0x50, 0x4E, 0x47] && png.count > 200)
        let listed = try await tracer(["token", "list"])
        #expect(
            listed.stdout.contains("device link  device \(Self.beacon(7))  link not opened yet"),
            "\(listed.stdout)"
        )
        let json = try await tracer([
            "token", "create", "--role", "device", "--device", Self.beacon(8), "--link", "http://10.0.0.5:8080",
            "--json",
        ])
        #expect(
            json.stdout.contains(#""link":"http://10.0.0.5:8080/me#c="#)
                && json.stdout.contains(#""deviceId":"\#(Self.beacon(8))""#),
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

import Foundation
import Testing
import TracerOCR
import TracerTesting

/// Printed cards through the binary (issue 45, finding 9): `tracer badge cards`, `badge issue
/// --cards` and `token create --link --card` write a PDF a site prints and cuts, readable by its
/// owner only (it holds the links); what it says is read back with pdftotext, and its QR codes
/// with the product's own reader from poppler's picture of it: the link made is the link printed.
@Suite struct CardCommandTests {
    let dir = TemporaryDirectory("tracer-card-commands")
    var store: String { dir.file("s.sqlite") }
    static let base = "https://tracer.example.org"

    @discardableResult
    func tracer(_ args: [String], status: Int32 = 0) async throws -> TracerProcess.Result {
        let r = try await TracerProcess.running(args + ["--store", store])
        try #require(r.status == status, "tracer \(args.joined(separator: " ")): \(r.status) \(r.stderr)")
        return r
    }

    /// One line, exit 1, and `words` in it.
    func refused(_ args: [String], saying words: String) async throws {
        let r = try await tracer(args, status: 1)
        #expect(r.stderr.split(separator: "\n").count == 1 && r.stderr.contains(words), "\(args): \(r.stderr)")
    }

    func mode(_ file: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int)
    }

    func run(_ program: String, _ arguments: [String]) throws -> String {
        let r = try TracerProcess.run(arguments, program: program)
        #expect(r.status == 0, "\(program) \(arguments): \(r.stderr)")
        return r.stdout
    }

    /// The PDF's words, in one line, and its pages' QR codes as ZBar reads them from a picture.
    func read(_ pdf: String) throws -> (words: String, codes: [String], pages: Int) {
        let words = try run("/usr/bin/pdftotext", [pdf, "-"]).split(whereSeparator: \.isWhitespace)
            .joined(separator: " ")
        let prefix = dir.file(UUID().uuidString)
        _ = try run("/usr/bin/pdftoppm", ["-r", "150", "-png", pdf, prefix])
        let engine = try OCREngine()
        var codes: [String] = []
        var pages = 0
        let folder = (prefix as NSString).deletingLastPathComponent
        let stem = (prefix as NSString).lastPathComponent
        for file in try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
        where file.hasPrefix(stem + "-") && file.hasSuffix(".png") {
            codes += try engine.read(file: (folder as NSString).appendingPathComponent(file)).codes
            pages += 1
        }
        return (words, codes, pages)
    }

    func badgeMap() throws -> String { try BadgeCommandTests.badgeMap(in: dir) }

    func tokens() async throws -> [Substring] { try await tracer(["token", "list"]).stdout.split(separator: "\n") }

    @Test func aDevicesCardToPrint() async throws {
        let device = LinkCommandTests.beacon(9)
        let card = dir.file("card.pdf")
        let create = ["token", "create", "--role", "device", "--device", device, "--link", Self.base]
        // A card carries the site's name: with no site published, nothing is made.
        try await refused(create + ["--card", card], saying: "--card \(card): a card carries the site's name")
        try await refused(
            create + ["--card", "/no/such/dir/c.pdf"],
            saying: "--card /no/such/dir/c.pdf: cannot write there"
        )
        try await refused(
            ["token", "create", "--role", "device", "--device", device, "--card", card],
            saying: "--card FILE goes with --link"
        )
        #expect(try await tokens() == ["no tokens"])
        #expect(!FileManager.default.fileExists(atPath: card))

        try await tracer(["map", "publish", SimulateCommandTests.map])
        let qr = dir.file("card.png")
        let made = try await tracer(create + ["--card", card, "--paper", "letter", "--qr", qr])
        let link = made.stdout.trimmingCharacters(in: .newlines)
        #expect(made.stderr.contains("its card to print is in \(card)"), "\(made.stderr)")
        #expect(try mode(card) == 0o600 && mode(qr) == 0o600)
        let printed = try read(card)
        #expect(printed.pages == 1 && printed.codes == [link], "\(printed.codes) \(link)")
        // (pdftotext takes the hyphen where the id's line breaks for a word's.)
        let dashless = printed.words.replacingOccurrences(of: "-", with: "")
        #expect(
            dashless.contains("Example Campus \(device.replacingOccurrences(of: "-", with: ""))"),
            "\(printed.words)"
        )
        #expect(printed.words.contains("Scan with your phone's camera") && printed.words.contains("Scannez avec"))
        #expect(try run("/usr/bin/pdfinfo", [card]).contains("letter"))

        // A site whose name the cards' font cannot draw: said before any link is made.
        let greek = dir.file("greek.yaml")
        try String(contentsOfFile: SimulateCommandTests.map, encoding: .utf8)
            .replacingOccurrences(of: "site: Example Campus", with: "site: Πανεπιστήμιο")
            .write(toFile: greek, atomically: true, encoding: .utf8)
        try await tracer(["map", "publish", greek])
        let before = try await tokens().count
        try await refused(create + ["--card", dir.file("greek.pdf")], saying: "the site's name has 'Π'")
        #expect(try await tokens().count == before)
    }

    @Test func aSiteSheetOfBadgeCards() async throws {
        try await tracer(["map", "publish", try badgeMap()])
        let folder = dir.file("cards")
        let issued = try await tracer(["badge", "issue", "--count", "3", "--link", Self.base, "--cards", folder])
        let serials = issued.stdout.split(separator: "\n").map { String($0.split(separator: " ")[0]) }
        try #require(serials.count == 3)
        #expect(issued.stderr.contains("cards.pdf (3 cards on 1 page of A4 (10 a page))"), "\(issued.stderr)")
        let sheet = (folder as NSString).appendingPathComponent("cards.pdf")
        #expect(try mode(sheet) == 0o600)
        for serial in serials {
            #expect(try mode((folder as NSString).appendingPathComponent("\(serial).png")) == 0o600)
        }
        let first = try read(sheet)
        let links = issued.stdout.split(separator: "\n").map { String($0.split(separator: " ").last!) }
        #expect(Set(first.codes) == Set(links), "\(first.codes) \(links)")
        // (pdftotext reads two cards side by side line by line.)
        #expect(first.words.components(separatedBy: "Example Campus").count == 4, "\(first.words)")
        for serial in serials { #expect(first.words.contains("Badge \(serial)"), "\(first.words)") }

        // A reprint of one badge: a new link, and the card it replaces stops working.
        let one = dir.file("one.pdf")
        let reprint = try await tracer(["badge", "cards", serials[0], "--link", Self.base, "--out", one])
        #expect(
            reprint.stderr.contains("1 card on 1 page of A4")
                && reprint.stderr.contains("1 earlier card of these badges revoked"),
            "\(reprint.stderr)"
        )
        let again = try read(one)
        #expect(
            again.codes.count == 1 && !links.contains(again.codes[0]) && again.codes[0].hasPrefix(Self.base + "/me#c=")
        )
        var listed = try await tokens()
        #expect(listed.filter { $0.contains("badge \(serials[0])") && $0.contains("revoked") }.count == 1, "\(listed)")
        #expect(listed.filter { $0.contains("revoked") }.count == 1, "\(listed)")

        // Every badge has a card in force: --missing prints nothing, and says so.
        let none = dir.file("none.pdf")
        let missing = try await tracer(["badge", "cards", "--missing", "--link", Self.base, "--out", none])
        #expect(missing.stderr.contains("every badge has a card in force: nothing to print"), "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: none))

        // Mistakes: one line each, no file, no link made.
        try await tracer(["badge", "revoke", serials[1]])
        try await refused(
            ["badge", "cards", serials[1], "--link", Self.base, "--out", none],
            saying: "badge \(serials[1]) was revoked"
        )
        try await refused(
            ["badge", "cards", "zzzzzzzz", "--link", Self.base, "--out", none],
            saying: "no badge 'zzzzzzzz'"
        )
        try await refused(["badge", "cards", "--link", Self.base, "--out", none], saying: "say which badges")
        try await refused(
            ["badge", "cards", "--all", "--missing", "--link", Self.base, "--out", none],
            saying: "say which badges"
        )
        try await refused(["badge", "cards", "--all", "--link", "example.org", "--out", none], saying: "--link takes")
        try await refused(
            ["badge", "cards", "--all", "--link", Self.base, "--out", "/no/such/dir/x.pdf"],
            saying: "cannot write there"
        )
        #expect(!FileManager.default.fileExists(atPath: none))
        listed = try await tokens()
        #expect(listed.count == 4, "\(listed)")

        // --all: the badges not revoked, on US Letter.
        let all = dir.file("all.pdf")
        let printed = try await tracer([
            "badge", "cards", "--all", "--paper", "letter", "--link", Self.base, "--out", all,
        ])
        #expect(printed.stderr.contains("2 cards on 1 page of US Letter (8 a page)"), "\(printed.stderr)")
        let words = try read(all).words
        #expect(
            words.contains("Badge \(serials[0])") && words.contains("Badge \(serials[2])")
                && !words.contains("Badge \(serials[1])")
        )
    }
}

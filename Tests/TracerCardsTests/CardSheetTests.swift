import Foundation
import Testing
import TracerOCR
import TracerTesting

@testable import TracerCards

/// The printed cards, looked at as a printer would make them: the PDF rendered to pictures by
/// poppler's pdftoppm, each page's QR codes read back with the product's own reader (ZBar), the
/// site's name and the serials read back with its OCR.
@Suite struct CardSheetTests {
    let dir = TemporaryDirectory("tracer-card-sheet")

    static func cards(_ count: Int, site: String = "Campus Nord") -> [Card] {
        (0..<count).map { i in
            let serial = String(format: "K%07d", i + 1)
            return Card(
                site: site,
                label: "Badge \(serial)",
                link:
                    "https://tracer.example.org/me#c=card\(String(format: "%08d", i))-ABCDEFGHIJKLMNOPQRSTUVWXYZ012345",
                instructions: [
                    "Scan with your phone's camera to open your exposure page. It opens on one phone only.",
                    "Scannez avec l'appareil photo de votre téléphone pour ouvrir votre page d'exposition. Elle ne s'ouvre que sur un téléphone.",
                ]
            )
        }
    }

    /// Runs a program to its end; its standard output.
    func run(_ program: String, _ arguments: [String]) throws -> String {
        let r = try TracerProcess.run(arguments, program: program)
        #expect(r.status == 0, "\(program) \(arguments): \(r.stderr)")
        return r.stdout
    }

    @Test(arguments: [(Paper.a4, 10, "595.28 x 841.89"), (Paper.letter, 8, "612 x 792")])
    func everyCardReadsBackFromThePrintedPage(paper: Paper, perPage: Int, size: String) throws {
        #expect(CardSheet.grid(paper).columns * CardSheet.grid(paper).rows == perPage)
        let cards = Self.cards(perPage + 3)
        let file = dir.file("cards-\(paper.rawValue).pdf")
        try Data(try CardSheet.pdf(cards, paper: paper, title: "Cards: Campus Nord")).write(
            to: URL(fileURLWithPath: file)
        )
        let info = Dictionary(
            try run("/usr/bin/pdfinfo", [file]).split(separator: "\n").map {
                let parts = $0.split(separator: ":", maxSplits: 1)
                return (String(parts[0]), parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : "")
            },
            uniquingKeysWith: { a, _ in a }
        )
        #expect(info["Pages"] == "2")
        #expect(info["Page size"]?.hasPrefix("\(size) pts") == true, "\(info)")
        #expect(info["Title"] == "Cards: Campus Nord")
        // The text as drawn: every label, and each instruction whole, in its language.
        let words = try run("/usr/bin/pdftotext", [file, "-"]).split(whereSeparator: \.isWhitespace).joined(
            separator: " "
        )
        for card in cards { #expect(words.contains(card.label)) }
        for instruction in cards[0].instructions {
            #expect(words.components(separatedBy: instruction).count == cards.count + 1, "\(instruction) in \(words)")
        }
        _ = try run("/usr/bin/pdftoppm", ["-r", "200", "-png", file, dir.file("page-\(paper.rawValue)")])
        let engine = try OCREngine()
        var read: [String] = []
        for page in 1...2 {
            let png = dir.file("page-\(paper.rawValue)-\(page).png")
            let seen = try engine.read(file: png)
            let expected = cards[(page - 1) * perPage..<min(page * perPage, cards.count)]
            #expect(Set(seen.codes) == Set(expected.map(\.link)), "page \(page)")
            // And drawn where it shows: OCR finds the site's name on the picture (over a page of QR
            // codes, OCR misreads too many serials for a test: pdftotext checks them, above).
            #expect(seen.text.contains("Campus Nord"), "page \(page): \(seen.text)")
            read += seen.codes
        }
        #expect(read.count == cards.count)
    }

    @Test func aCharacterTheFontLacksIsNamed() {
        #expect(throws: CardSheet.Failure.self) {
            try CardSheet.pdf(Self.cards(1, site: "Кампус"), paper: .a4, title: "x")
        }
        do {
            _ = try CardSheet.pdf(Self.cards(1, site: "Campus Ω"), paper: .a4, title: "x")
            Issue.record("a site's name with Ω made a card")
        } catch {
            #expect(error.description.contains("the site's name has 'Ω' (U+3A9)"), "\(error)")
        }
        // Western European letters, and the typographic punctuation of WinAnsi's 128-159, are drawn.
        #expect(throws: Never.self) {
            try CardSheet.pdf(Self.cards(1, site: "Université – Zürich’s “Œuvre”"), paper: .a4, title: "x")
        }
    }

    @Test func textThatCannotFitIsRefused() {
        var long = Self.cards(1)
        long[0].instructions = [String(repeating: "Scan this code with your phone. ", count: 12)]
        #expect(throws: CardSheet.Failure(description: "the card's instructions do not fit on a card: shorten them")) {
            try CardSheet.pdf(long, paper: .a4, title: "x")
        }
        #expect(throws: CardSheet.Failure(description: "no cards to print")) {
            try CardSheet.pdf([], paper: .a4, title: "x")
        }
    }

    @Test func linesWrapAtSpacesAndWithinALongWord() {
        let text = Array("aaaa bbbb cccccccccccc".utf8)
        // 'a' is 556/1000 of the size: at 10 pt, 4 letters are 22.24 pt.
        let lines = CardSheet.wrap(text, font: .regular, size: 10, width: 50)
        // 'c' is 500: ten of them fill 50 pt.
        #expect(lines.map { String(decoding: $0, as: UTF8.self) } == ["aaaa bbbb", "cccccccccc", "cc"])
        #expect(CardSheet.escaped([0x28, 0xE9, 0x29, 0x5C]) == "\\(\\351\\)\\\\")
        #expect(CardSheet.n(12.345) == "12.35")
        #expect(CardSheet.n(-0.5) == "-0.5")
        #expect(CardSheet.n(3) == "3")
        #expect(CardSheet.n(0.04) == "0.04")
    }
}

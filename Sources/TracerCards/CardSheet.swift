import CTracerZlib

/// One printed card: what a person is handed with their badge.
public struct Card: Sendable, Equatable {
    /// The site's name, at the top.
    public var site: String
    /// What the card is for, as the site knows it: "Badge 7K3MQ2XA", or a device's id.
    public var label: String
    /// The one-time link to the person's page, drawn as the QR code.
    public var link: String
    /// One instruction in each of the site's languages.
    public var instructions: [String]

    public init(site: String, label: String, link: String, instructions: [String]) {
        self.site = site
        self.label = label
        self.link = link
        self.instructions = instructions
    }
}

/// The paper a sheet of cards is printed on.
public enum Paper: String, Sendable, CaseIterable {
    case a4
    case letter

    /// Width and height in points (1/72 in).
    var size: (width: Double, height: Double) {
        switch self {
        case .a4: (210 * CardSheet.mm, 297 * CardSheet.mm)
        case .letter: (612, 792)
        }
    }
}

/// Cards as a printable PDF: ID-1 cards (85.6 × 54 mm, a badge holder's size) side by side with
/// a dashed cut line around each, ten a page on A4, eight on US Letter, every card's QR code drawn
/// as vector rectangles (sharp at any printer's resolution). Written here, not with a PDF library:
/// none is in the package mirror, and the file needs only PDF's standard Helvetica (every reader
/// has it, nothing to embed), rectangles and text: about 300 lines. 2,000 cards (200 pages of
/// A4) are a file of 1.1 MB, made in 3.9 s by a debug build.
///
/// The standard fonts draw Western European text (WinAnsiEncoding): a name or instruction with
/// a character they lack is refused, naming it, rather than printed as a blank.
public enum CardSheet {
    public struct Failure: Error, CustomStringConvertible, Equatable {
        public let description: String
    }

    static let mm = 72 / 25.4
    static let cardWidth = 85.6 * mm
    static let cardHeight = 54 * mm
    /// What a printer may not reach, at least, around the page.
    static let margin = 10 * mm
    static let padding = 3 * mm
    /// The QR code's side, its four modules of quiet zone included: about 0.9 mm a module for a
    /// link of 70 characters (version 4, 33 modules), which a phone's camera reads from arm's length.
    static let codeSide = 41 * mm

    /// Columns and rows of cards a page of `paper` holds.
    public static func grid(_ paper: Paper) -> (columns: Int, rows: Int) {
        let (width, height) = paper.size
        return (Int((width - 2 * margin) / cardWidth), Int((height - 2 * margin) / cardHeight))
    }

    /// The cards, in order, as a PDF document.
    public static func pdf(_ cards: [Card], paper: Paper, title: String) throws(Failure) -> [UInt8] {
        guard !cards.isEmpty else { throw Failure(description: "no cards to print") }
        let (columns, rows) = grid(paper)
        let perPage = columns * rows
        var pages: [[UInt8]] = []
        var index = 0
        while index < cards.count {
            let page = Array(cards[index..<min(index + perPage, cards.count)])
            pages.append(try deflate(try content(page, paper: paper, columns: columns, rows: rows)))
            index += perPage
        }
        return document(pages: pages, paper: paper, title: try winAnsi(title, what: "the document's title"))
    }

    // MARK: A page

    static func content(_ cards: [Card], paper: Paper, columns: Int, rows: Int) throws(Failure) -> [UInt8] {
        let (width, height) = paper.size
        let left = (width - Double(columns) * cardWidth) / 2
        let top = height - (height - Double(rows) * cardHeight) / 2
        var out = Stream()
        for (i, card) in cards.enumerated() {
            let x = left + Double(i % columns) * cardWidth
            let y = top - Double(i / columns + 1) * cardHeight
            try draw(card, x: x, y: y, into: &out)
        }
        return out.bytes
    }

    static func draw(_ card: Card, x: Double, y: Double, into out: inout Stream) throws(Failure) {
        // The cut line.
        out.line("q 0.6 G 0.4 w [3 2] 0 d \(n(x)) \(n(y)) \(n(cardWidth)) \(n(cardHeight)) re S Q")
        // The code, in module units: one rectangle per run of dark modules in a row, one fill.
        let code: QRCode
        do { code = try QRCode(card.link) } catch { throw Failure(description: "the card for \(card.label): \(error)") }
        let side = code.width + 8
        let module = codeSide / Double(side)
        let codeX = x + padding
        let codeY = y + (cardHeight - codeSide) / 2
        out.line("q \(n(module)) 0 0 \(n(module)) \(n(codeX)) \(n(codeY)) cm 0 g")
        for row in 0..<code.width {
            var column = 0
            while column < code.width {
                guard code.dark[row * code.width + column] else {
                    column += 1
                    continue
                }
                let start = column
                while column < code.width, code.dark[row * code.width + column] { column += 1 }
                out.line("\(start + 4) \(side - 5 - row) \(column - start) 1 re")
            }
        }
        out.line("f Q")
        // The text, beside the code.
        let textX = codeX + codeSide + padding
        let textWidth = x + cardWidth - padding - textX
        guard let site = try fit(card.site, what: "the site's name", font: .bold, sizes: [9, 8, 7], width: textWidth)
        else { throw Failure(description: "the site's name is too long for a card: \(card.site.count) characters") }
        guard
            let label = try fit(
                card.label,
                what: "the card's label",
                font: .bold,
                sizes: [8, 7, 6, 5],
                width: textWidth
            )
        else { throw Failure(description: "the card's label is too long for a card: \(card.label)") }
        var blocks = [site, label]
        // The instructions: the largest size at which everything fits the card's height.
        let room = cardHeight - 2 * padding
        var chosen: [Block]?
        for size in [6.5, 6, 5.5, 5] {
            var instructions: [Block] = []
            for (number, text) in card.instructions.enumerated() {
                let what = "instruction \(number + 1)"
                if let b = try fit(text, what: what, font: .regular, sizes: [size], width: textWidth, lines: 8) {
                    instructions.append(b)
                }
            }
            if instructions.count == card.instructions.count, height(blocks + instructions) <= room {
                chosen = instructions
                break
            }
        }
        guard let chosen else {
            throw Failure(description: "the card's instructions do not fit on a card: shorten them")
        }
        blocks += chosen
        var cursor = y + cardHeight - padding
        out.line("BT 0 g")
        for (i, block) in blocks.enumerated() {
            if i > 0 { cursor -= gap(before: i) }
            for line in block.lines {
                cursor -= block.size * 1.2
                out.line(
                    "/\(block.font.resource) \(n(block.size)) Tf 1 0 0 1 \(n(textX)) \(n(cursor + block.size * 0.25)) Tm (\(escaped(line))) Tj"
                )
            }
        }
        out.line("ET")
    }

    /// Space above block `i`: the label sits under the name, the instructions further down.
    static func gap(before i: Int) -> Double { i == 1 ? 3 : 6 }

    static func height(_ blocks: [Block]) -> Double {
        blocks.enumerated().reduce(0) { sum, b in
            sum + Double(b.element.lines.count) * b.element.size * 1.2 + (b.offset > 0 ? gap(before: b.offset) : 0)
        }
    }

    // MARK: Text

    enum Font {
        case regular, bold
        var resource: String { self == .regular ? "F1" : "F2" }
        var widths: [UInt16] { self == .regular ? Helvetica.regular : Helvetica.bold }
    }

    struct Block {
        var font: Font
        var size: Double
        var lines: [[UInt8]]
    }

    /// `text` at the first of `sizes` where it takes at most `lines` lines of `width`; nil when
    /// it takes more at every size.
    static func fit(
        _ text: String,
        what: String,
        font: Font,
        sizes: [Double],
        width: Double,
        lines: Int = 2
    ) throws(Failure) -> Block? {
        let bytes = try winAnsi(text, what: what)
        guard bytes.contains(where: { $0 != 0x20 }) else { throw Failure(description: "\(what) is empty") }
        for size in sizes {
            let wrapped = wrap(bytes, font: font, size: size, width: width)
            if wrapped.count <= lines { return Block(font: font, size: size, lines: wrapped) }
        }
        return nil
    }

    /// Lines of at most `width`, broken at spaces, or anywhere in a word longer than a line.
    static func wrap(_ text: [UInt8], font: Font, size: Double, width: Double) -> [[UInt8]] {
        let limit = width * 1000 / size
        func advance(_ s: ArraySlice<UInt8>) -> Double { s.reduce(0) { $0 + Double(font.widths[Int($1)]) } }
        var lines: [[UInt8]] = []
        var line: [UInt8] = []
        for word in text.split(separator: 0x20) {
            var word = word
            let candidate = line.isEmpty ? Array(word) : line + [0x20] + word
            if advance(candidate[...]) <= limit {
                line = candidate
                continue
            }
            if !line.isEmpty { lines.append(line) }
            line = []
            while advance(word) > limit {
                var cut = word.startIndex
                while cut < word.endIndex, advance(word[word.startIndex...cut]) <= limit { cut += 1 }
                cut = max(cut, word.startIndex + 1)
                lines.append(Array(word[..<cut]))
                word = word[cut...]
            }
            line = Array(word)
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }

    /// The text in WinAnsiEncoding, or which character the standard fonts cannot draw.
    static func winAnsi(_ text: String, what: String) throws(Failure) -> [UInt8] {
        var out: [UInt8] = []
        for character in text {
            if let byte = Helvetica.windows[character] {
                out.append(byte)
                continue
            }
            let scalars = character.unicodeScalars
            guard scalars.count == 1, let v = scalars.first?.value,
                (0x20...0x7E).contains(v) || (0xA0...0xFF).contains(v)
            else {
                if character == "\n" || character == "\t" {
                    out.append(0x20)
                    continue
                }
                let code = character.unicodeScalars.map { "U+" + String($0.value, radix: 16, uppercase: true) }
                throw Failure(
                    description:
                        "\(what) has '\(character)' (\(code.joined(separator: " "))), which a card's font cannot draw: PDF's standard Helvetica has Western European letters only"
                )
            }
            out.append(UInt8(v))
        }
        return out
    }

    /// A PDF literal string's inside.
    static func escaped(_ bytes: [UInt8]) -> String {
        var s = ""
        for b in bytes {
            switch b {
            case 0x28, 0x29, 0x5C: s += "\\" + String(UnicodeScalar(b))
            case 0x20...0x7E: s.unicodeScalars.append(UnicodeScalar(b))
            default:
                let octal = String(b, radix: 8)
                s += "\\" + String(repeating: "0", count: 3 - octal.count) + octal
            }
        }
        return s
    }

    /// A number as PDF writes it, to a hundredth of a point (String(format:) costs a microsecond
    /// each, and a sheet of 2,000 cards has a million numbers).
    static func n(_ v: Double) -> String {
        let hundredths = Int((v * 100).rounded())
        let sign = hundredths < 0 ? "-" : ""
        let whole = abs(hundredths) / 100
        let fraction = abs(hundredths) % 100
        if fraction == 0 { return sign + String(whole) }
        if fraction % 10 == 0 { return sign + String(whole) + "." + String(fraction / 10) }
        return sign + String(whole) + "." + (fraction < 10 ? "0" : "") + String(fraction)
    }

    // MARK: The file

    struct Stream {
        var bytes: [UInt8] = []
        mutating func line(_ s: String) {
            bytes += s.utf8
            bytes.append(0x0A)
        }
    }

    static func deflate(_ bytes: [UInt8]) throws(Failure) -> [UInt8] {
        do { return try QRCode.deflate(bytes) } catch { throw Failure(description: error.description) }
    }

    /// Catalog (1), pages (2), the two fonts (3, 4), the information (5), then each page and its
    /// contents; the cross-reference table gives each object's offset.
    static func document(pages: [[UInt8]], paper: Paper, title: [UInt8]) -> [UInt8] {
        var out: [UInt8] = Array("%PDF-1.4\n%\u{E2}\u{E3}\u{CF}\u{D3}\n".unicodeScalars.map { UInt8($0.value) })
        var offsets: [Int] = []
        func object(_ body: [UInt8]) {
            offsets.append(out.count)
            out += Array("\(offsets.count) 0 obj\n".utf8) + body + Array("\nendobj\n".utf8)
        }
        func object(_ body: String) { object(Array(body.utf8)) }
        let (width, height) = paper.size
        let kids = pages.indices.map { "\(6 + 2 * $0) 0 R" }.joined(separator: " ")
        object("<< /Type /Catalog /Pages 2 0 R >>")
        object("<< /Type /Pages /Kids [\(kids)] /Count \(pages.count) /MediaBox [0 0 \(n(width)) \(n(height))] >>")
        object("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
        object("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>")
        object("<< /Title (\(escaped(title))) /Creator (tracer) >>")
        for (i, contents) in pages.enumerated() {
            object(
                "<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents \(7 + 2 * i) 0 R >>"
            )
            object(
                Array("<< /Length \(contents.count) /Filter /FlateDecode >>\nstream\n".utf8) + contents
                    + Array("\nendstream".utf8)
            )
        }
        let xref = out.count
        var table = "xref\n0 \(offsets.count + 1)\n0000000000 65535 f \n"
        for offset in offsets {
            let digits = String(offset)
            table += String(repeating: "0", count: 10 - digits.count) + digits + " 00000 n \n"
        }
        table += "trailer\n<< /Size \(offsets.count + 1) /Root 1 0 R /Info 5 0 R >>\nstartxref\n\(xref)\n%%EOF\n"
        out += Array(table.utf8)
        return out
    }
}

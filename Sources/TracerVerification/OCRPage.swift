/// What OCR read on a page: words with their confidences and boxes, in reading order.
public struct OCRPage: Sendable, Equatable {
    public var words: [OCRWord]
    /// The page as read (after any scaling), pixels.
    public var width: Int
    public var height: Int
    /// The text of the QR codes on the page (a signed health certificate's starts "HC1:").
    public var codes: [String] = []

    /// How an EU Digital COVID Certificate's QR code begins.
    public static let healthCertificatePrefix = "HC1:"

    public init(words: [OCRWord], width: Int = 0, height: Int = 0, codes: [String] = []) {
        self.words = words
        self.width = width
        self.height = height
        self.codes = codes
    }

    /// The first signed health certificate's text on the page, if there is one.
    public var healthCertificate: String? { codes.first { $0.hasPrefix(Self.healthCertificatePrefix) } }

    /// The words grouped by text line, in order.
    public var lines: [[OCRWord]] {
        var out: [[OCRWord]] = []
        var current: [OCRWord] = []
        var line = Int.min
        for w in words {
            if w.line != line, !current.isEmpty {
                out.append(current)
                current = []
            }
            line = w.line
            current.append(w)
        }
        if !current.isEmpty { out.append(current) }
        return out
    }

    /// The page's text, a line per line.
    public var text: String { lines.map { $0.map(\.text).joined(separator: " ") }.joined(separator: "\n") }

    /// A page from plain text, every word read with the same confidence (for tests and tools).
    public static func text(_ text: String, confidence: Double = 95) -> OCRPage {
        var words: [OCRWord] = []
        for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: true).enumerated() {
            for word in line.split(separator: " ") {
                words.append(OCRWord(text: String(word), confidence: confidence, line: n))
            }
        }
        return OCRPage(words: words)
    }
}

/// One word: its text, Tesseract's confidence (0–100), its line number and box.
public struct OCRWord: Sendable, Equatable {
    public var text: String
    public var confidence: Double
    public var line: Int
    /// Where on the page as read: a photographed page straightened and cut from its surround
    /// (`OCREngine`), so in pixels of that page, not of the image given.
    public var box: Box

    public struct Box: Sendable, Equatable {
        public var x: Int
        public var y: Int
        public var width: Int
        public var height: Int

        public init(x: Int, y: Int, width: Int, height: Int) {
            self.x = x
            self.y = y
            self.width = width
            self.height = height
        }
    }

    public init(text: String, confidence: Double, line: Int, box: Box = Box(x: 0, y: 0, width: 0, height: 0)) {
        self.text = text
        self.confidence = confidence
        self.line = line
        self.box = box
    }
}

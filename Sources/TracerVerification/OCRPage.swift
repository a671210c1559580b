/// What OCR read on a page: words with their confidences and boxes, in reading order.
public struct OCRPage: Sendable, Equatable {
    public var words: [OCRWord]
    /// The page as read (after any scaling), pixels.
    public var width: Int
    public var height: Int
    /// The text of the QR codes on the page (a signed health certificate's starts "HC1:").
    public var codes: [String] = []
    /// How sharp and how noisy the page was as it was read (nil when it was not recognised).
    public var quality: ImageQuality?

    /// How an EU Digital COVID Certificate's QR code begins.
    public static let healthCertificatePrefix = "HC1:"

    public init(
        words: [OCRWord],
        width: Int = 0,
        height: Int = 0,
        codes: [String] = [],
        quality: ImageQuality? = nil
    ) {
        self.words = words
        self.quality = quality
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

/// How sharp and how clean a page is, measured on the page as OCR reads it (straightened, cut
/// out, scaled so that text is 20–30 px high), so that a refusal can say why a photo could not be
/// read and what to do about it.
public struct ImageQuality: Sendable, Equatable {
    /// How many pixels the page's sharpest edges take to go from ground to ink: its contrast over
    /// its steepest step between neighbouring pixels (the 99th percentile). On the fixtures:
    /// 1.2–2.1 px for screenshots and scans, 2.4–4.3 for the photographed set, 12.8 for the
    /// blurred low-resolution page nobody can read (the lab report blurred by 2 px, still read,
    /// measures 5.8; by 4 px, not read, 10.9).
    public var edgeWidth: Double
    /// The sensor noise's standard deviation in grey levels (of 255): Immerkær's Laplacian-
    /// difference estimate in its robust form (the median, which text edges do not move). Under
    /// 0.75 on the fixtures that are read (JPEG and blur smooth a phone's noise); 33 for the
    /// grainy one, which is not.
    public var noise: Double
    /// Ink against ground: the page's median grey (its ground) less its darkest 0.5% (ink), of
    /// 255. 99–255 on the fixtures that are read; 4 for the one photographed with almost no light.
    public var contrast: Double

    public init(edgeWidth: Double, noise: Double, contrast: Double) {
        self.edgeWidth = edgeWidth
        self.noise = noise
        self.contrast = contrast
    }

    /// What is wrong with the picture, as keys of the verifier's texts (`image.KEY`): `blurred`,
    /// `grainy`, `faint` (none: nothing).
    public var problemKeys: [String] {
        var out: [String] = []
        if edgeWidth > Self.blurred { out.append("blurred") }
        if noise > Self.noisy { out.append("grainy") }
        if contrast < Self.faint { out.append("faint") }
        return out
    }

    /// What is wrong with the picture, in English words for the person who took it.
    public var problems: [String] { problemKeys.map { RuleMessage("image.\($0)").text() } }

    /// Edges wider than this many pixels at the size read: text is smeared beyond reading.
    public static let blurred = 8.0
    /// Noise above this many grey levels.
    public static let noisy = 12.0
    /// Contrast below this many grey levels.
    public static let faint = 50.0
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

import CTracerTesseract
import Foundation
import TracerVerification

/// Why an image was refused or could not be read: a code, and one line naming the file.
public struct OCRError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Code: String, Sendable {
        /// The input: not an image, truncated, too large, unreadable file.
        case badImage
        /// Tesseract or Leptonica failed, or its model is missing.
        case engine
        /// The page took longer than the engine's deadline.
        case timeout
        /// Every OCR thread is busy and the queue is full: try again shortly.
        case busy
    }

    public var code: Code
    public var description: String

    public init(_ description: String, code: Code = .badImage) {
        self.code = code
        self.description = description
    }
}

/// Limits on what is decoded at all: checked from the file's header, before any decoding.
public struct ImageLimits: Sendable {
    public var maxBytes = 20 * 1024 * 1024
    public var maxPixels = 40_000_000
    public init() {}
}

/// Tesseract (English, LSTM) through its C API. One engine is made once and reused: its
/// initialisation costs about 0.2 s, a page about 0.6 s on one core. Not re-entrant: pages are
/// read one at a time (a lock serialises callers).
/// Unchecked: it owns Tesseract's C handle, guarded by its lock.
public final class OCREngine: @unchecked Sendable {
    private let api: OpaquePointer
    private let lock = NSLock()
    public let limits: ImageLimits
    /// Each page must be read within this long: a bound on a pathological image, not a speed
    /// target (a normal page takes 1-3 s; on 2 cores beside all of the tests started at once,
    /// more than 60).
    public let deadline: Duration
    /// The product's deadline, `tracer serve`'s and `tracer self-report`'s.
    public static let defaultDeadline = Duration.seconds(60)

    /// Starts Tesseract with the English model (from `TESSDATA_PREFIX`, else Debian's place).
    public init(limits: ImageLimits = ImageLimits(), deadline: Duration = OCREngine.defaultDeadline) throws {
        Self.quietOnce
        guard let api = TessBaseAPICreate() else { throw OCRError("cannot create a Tesseract engine", code: .engine) }
        // Tesseract's own chatter ("Estimating resolution as …") goes nowhere.
        _ = TessBaseAPISetVariable(api, "debug_file", "/dev/null")
        let status = TessBaseAPIInit3(api, nil, "eng")
        guard status == 0 else {
            TessBaseAPIDelete(api)
            throw OCRError(
                "cannot load Tesseract's English model (install tesseract-ocr-eng, or set TESSDATA_PREFIX)",
                code: .engine
            )
        }
        // Sauvola's local thresholding recovers phone photos with uneven light, at no cost on
        // clean pages; a single column of text is not assumed (SMS screenshots, certificates).
        _ = TessBaseAPISetVariable(api, "thresholding_method", "2")
        _ = TessBaseAPISetVariable(api, "user_defined_dpi", "300")
        self.api = api
        self.limits = limits
        self.deadline = deadline
    }

    deinit {
        TessBaseAPIEnd(api)
        TessBaseAPIDelete(api)
    }

    /// Process-wide settings made once before the first engine: one OpenMP thread, and no
    /// Leptonica messages on stderr.
    private static let quietOnce: Void = {
        omp_set_max_active_levels(0)
        _ = setMsgSeverity(CTracerTesseract_SEVERITY_NONE)
    }()

    /// Reads an image file: checks it (size, type, dimensions, completeness) from its bytes and
    /// header before decoding, scales it so body text is about 20–30 px high, and recognises it.
    public func read(file path: String) throws -> OCRPage {
        let data = try ImageCheck.load(path, limits: limits)
        return try read(data: data, name: path)
    }

    /// An image file's bytes, refused before reading when it is over the size limit.
    public func load(file path: String) throws -> Data { try ImageCheck.load(path, limits: limits) }

    /// An image file's bytes, checked (size, type, header dimensions, completeness) without an
    /// engine: bad input is refused before Tesseract even starts.
    public static func loadChecked(file path: String, limits: ImageLimits = ImageLimits()) throws -> Data {
        let data = try ImageCheck.load(path, limits: limits)
        try ImageCheck.check(data, name: path, limits: limits)
        return data
    }

    /// Reads an image already in memory (an upload); `name` is used in errors.
    public func read(data: Data, name: String) throws -> OCRPage {
        let format = try ImageCheck.check(data, name: name, limits: limits)
        var pix: UnsafeMutablePointer<PIX>? = data.withUnsafeBytes { raw in
            pixReadMem(raw.bindMemory(to: l_uint8.self).baseAddress, raw.count)
        }
        guard pix != nil else { throw OCRError("\(name): the \(format) image is corrupt and cannot be decoded") }
        defer { pixDestroy(&pix) }
        // A signed health certificate's QR code decides over the printed words: with one, the
        // page is not recognised at all (a second or more saved per page).
        let codes = QRCodes.read(pix!)
        var page =
            codes.contains { $0.hasPrefix(OCRPage.healthCertificatePrefix) }
            ? OCRPage(words: []) : try recognise(pix!)
        page.codes = codes
        page.width = Int(pixGetWidth(pix))
        page.height = Int(pixGetHeight(pix))
        return page
    }

    /// The long side read: text on a phone photo or a scanned page is then about 20–30 px high.
    static let targetLongSide: Double = 1600

    /// The page's ground, 0 (black) to 255: the median of a grid of samples over the middle of
    /// the image. The middle, since a photographed page lies on a darker table or hand; the
    /// median, since the text is the minority. (The mean of the whole image took a dim photo of
    /// a white page, 114 on average with its dark surround, for a phone's dark mode.)
    static func ground(_ pix: UnsafeMutablePointer<PIX>) -> Double {
        let width = pixGetWidth(pix)
        let height = pixGetHeight(pix)
        var samples: [Double] = []
        for gy in 0..<48 {
            for gx in 0..<48 {
                var value: l_uint32 = 0
                let x = Int32(Double(width) * (0.2 + 0.6 * (Double(gx) + 0.5) / 48))
                let y = Int32(Double(height) * (0.2 + 0.6 * (Double(gy) + 0.5) / 48))
                if pixGetPixel(pix, x, y, &value) == 0 { samples.append(Double(value)) }
            }
        }
        guard !samples.isEmpty else { return 255 }
        samples.sort()
        return samples[samples.count / 2]
    }

    /// The page turned square, or nil when it is square already or no angle can be found.
    ///
    /// Leptonica finds the angle of the text lines (a sweep over ±12°, then a finer search) on
    /// the page thresholded at 130, as its `pixDeskewGeneral` does, and the page is rotated back
    /// by it. Its own wrapper turns the page only at a confidence of 3 or more; on the
    /// photographed fixtures an SMS (four lines of text on a large screen) or a dim page comes
    /// at 2.0–2.9 with the angle still within a degree of the truth, and was read unturned, its
    /// deciding words at 0–50% confidence: 6 of the 32 photographed positives. Here a
    /// confidence of 1.5 is enough. A wrong angle only blurs the reading further (the policy
    /// then rejects or doubts it), and a square page is found square (under 0.1°) and left.
    /// The sweep reaches ±12° (±10° in the wrapper) so that an 8° photo's peak is not at its edge,
    /// where the search fails (confidence 0 for one dark SMS at 8°).
    static func straightened(_ grey: UnsafeMutablePointer<PIX>) -> UnsafeMutablePointer<PIX>? {
        var binary: UnsafeMutablePointer<PIX>? = pixConvertTo1(grey, 130)
        guard binary != nil else { return nil }
        defer { pixDestroy(&binary) }
        var angle: Float = 0
        var confidence: Float = 0
        guard pixFindSkewSweepAndSearch(binary, &angle, &confidence, 4, 2, 12, 1, 0.01) == 0,
            abs(angle) >= 0.1, confidence >= 1.5
        else { return nil }
        return pixRotate(grey, angle * .pi / 180, Int32(L_ROTATE_AREA_MAP), Int32(L_BRING_IN_WHITE), 0, 0)
    }

    /// How sharp, noisy and contrasted the page is as read (`ImageQuality`): one pass over every
    /// second row of the 8-bit page, 1.4–3.2 ms a page on the fixtures (release build).
    static func quality(_ pix: UnsafeMutablePointer<PIX>) -> ImageQuality? {
        let width = Int(pixGetWidth(pix))
        let height = Int(pixGetHeight(pix))
        guard pixGetDepth(pix) == 8, width >= 16, height >= 16, let data = pixGetData(pix) else { return nil }
        let wpl = Int(pixGetWpl(pix))
        let bytes = UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self)
        // Leptonica keeps a row's bytes in 32-bit words, most significant first: on a
        // little-endian machine byte x of a row is at x ^ 3 (its GET_DATA_BYTE).
        #if _endian(little)
        let swizzle = 3
        #else
        let swizzle = 0
        #endif
        func grey(_ x: Int, _ y: Int) -> Int { Int(bytes[y * wpl * 4 + (x ^ swizzle)]) }
        var levels = [Int](repeating: 0, count: 256)
        var steps = [Int](repeating: 0, count: 256)
        var laplacians = [Int](repeating: 0, count: 256 * 16)
        var samples = 0
        for y in stride(from: 1, to: height - 1, by: 2) {
            for x in 1..<(width - 1) {
                let c = grey(x, y)
                levels[c] += 1
                steps[max(abs(grey(x + 1, y) - c), abs(grey(x, y + 1) - c))] += 1
                // Immerkær's mask: [1 -2 1; -2 4 -2; 1 -2 1].
                let l =
                    grey(x - 1, y - 1) + grey(x + 1, y - 1) + grey(x - 1, y + 1) + grey(x + 1, y + 1)
                    - 2 * (grey(x, y - 1) + grey(x - 1, y) + grey(x + 1, y) + grey(x, y + 1)) + 4 * c
                laplacians[min(abs(l), laplacians.count - 1)] += 1
                samples += 1
            }
        }
        func percentile(_ histogram: [Int], _ p: Double) -> Double {
            let target = Int(Double(samples) * p)
            var seen = 0
            for (value, count) in histogram.enumerated() {
                seen += count
                if seen > target { return Double(value) }
            }
            return Double(histogram.count - 1)
        }
        let contrast = percentile(levels, 0.5) - percentile(levels, 0.005)
        let steepest = max(1, percentile(steps, 0.99))
        // On pure noise of deviation σ the mask's output has deviation 6σ; its median magnitude
        // is 0.6745 of that.
        let noise = percentile(laplacians, 0.5) / (0.6745 * 6)
        return ImageQuality(edgeWidth: contrast / steepest, noise: noise, contrast: contrast)
    }

    /// Where a photographed page lies in the image: the longest runs of columns and of rows
    /// mostly (60%) at least 70% as light as the page's ground, less 1.5% of each side (the
    /// page's edge). Nil when that is (nearly) the whole image: a screenshot or a scan.
    static func pageBox(_ pix: UnsafeMutablePointer<PIX>) -> (x: Int32, y: Int32, width: Int32, height: Int32)? {
        let width = Int(pixGetWidth(pix))
        let height = Int(pixGetHeight(pix))
        guard width >= 64, height >= 64 else { return nil }
        let light = l_uint32(max(0, min(255, ground(pix) * 0.7)))
        let step = 4
        var columns = [Int](repeating: 0, count: width)
        var rows = [Int](repeating: 0, count: height)
        for y in stride(from: 0, to: height, by: step) {
            for x in stride(from: 0, to: width, by: step) {
                var value: l_uint32 = 0
                if pixGetPixel(pix, Int32(x), Int32(y), &value) == 0, value >= light {
                    columns[x] += 1
                    rows[y] += 1
                }
            }
        }
        /// The longest run of sampled positions whose count reaches 60% of the samples across,
        /// bridging gaps of up to 5% of the length (a rule across the page, a bar of colour).
        func run(_ counts: [Int], across: Int) -> (start: Int, end: Int) {
            let need = Int((Double((across + step - 1) / step) * 0.6).rounded(.up))
            let bridge = max(2 * step, counts.count / 20)
            var best = (start: 0, end: 0)
            var start: Int?
            var last = Int.min
            for i in stride(from: 0, to: counts.count, by: step) where counts[i] >= need {
                if start == nil || i - last > bridge { start = i }
                last = i
                if i + step - start! > best.end - best.start { best = (start!, i + step) }
            }
            return best
        }
        let xs = run(columns, across: height)
        let ys = run(rows, across: width)
        let w = min(width, xs.end) - xs.start
        let h = min(height, ys.end) - ys.start
        // Too small to be the page, or the whole image: left as it is.
        guard w >= width / 3, h >= height / 3, w * h < width * height * 9 / 10 else { return nil }
        let mx = w * 15 / 1000
        let my = h * 15 / 1000
        return (Int32(xs.start + mx), Int32(ys.start + my), Int32(w - 2 * mx), Int32(h - 2 * my))
    }

    private func recognise(_ original: UnsafeMutablePointer<PIX>) throws -> OCRPage {
        // Grey first (Tesseract binarises itself), then scaled towards the target size: large
        // photos down (faster, same text), small screenshots up (small print survives).
        var grey: UnsafeMutablePointer<PIX>? = pixConvertTo8(original, 0)
        guard grey != nil else { throw OCRError("cannot convert the image to grey", code: .engine) }
        defer { pixDestroy(&grey) }
        // Light text on a dark ground (a phone's dark mode): inverted, since local thresholding
        // expects dark text and would keep only fragments.
        if Self.ground(grey!) < 110 { _ = pixInvert(grey, grey) }
        // Straightened: a page photographed a few degrees off square loses words and digits to
        // Tesseract (a collection date "21 Nov" read "24 Nov" at 4°).
        if let straight = Self.straightened(grey!) {
            pixDestroy(&grey)
            grey = straight
        }
        // The page alone: the dark table or hand round a photographed page, and the page's own
        // edge, cross every text line once the page is straight, and Tesseract reads them as
        // stray letters that break the sentences ("is iy ie Positive").
        if let page = Self.pageBox(grey!), let box = boxCreate(page.x, page.y, page.width, page.height) {
            var box: UnsafeMutablePointer<BOX>? = box
            defer { boxDestroy(&box) }
            if let clipped = pixClipRectangle(grey, box, nil) {
                pixDestroy(&grey)
                grey = clipped
            }
        }
        let long = Double(max(pixGetWidth(grey), pixGetHeight(grey)))
        var scale = 1.0
        if long > 2000 { scale = Self.targetLongSide / long }
        if long < 1000 { scale = min(3, Self.targetLongSide / long) }
        var scaled: UnsafeMutablePointer<PIX>? =
            scale == 1 ? pixClone(grey) : pixScale(grey, Float(scale), Float(scale))
        guard scaled != nil else { throw OCRError("cannot scale the image", code: .engine) }
        defer { pixDestroy(&scaled) }

        let quality = Self.quality(scaled!)
        lock.lock()
        defer {
            TessBaseAPIClear(api)
            lock.unlock()
        }
        TessBaseAPISetImage2(api, scaled)
        guard let monitor = TessMonitorCreate() else {
            throw OCRError("cannot create a Tesseract monitor", code: .engine)
        }
        defer { TessMonitorDelete(monitor) }
        let (seconds, attoseconds) = deadline.components
        TessMonitorSetDeadlineMSecs(monitor, Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000))
        guard TessBaseAPIRecognize(api, monitor) == 0 else {
            throw OCRError("the page could not be read within \(deadline)", code: .timeout)
        }
        guard let iterator = TessBaseAPIGetIterator(api) else { return OCRPage(words: [], quality: quality) }
        defer { TessResultIteratorDelete(iterator) }
        let pageIterator = TessResultIteratorGetPageIterator(iterator)
        var words: [OCRWord] = []
        var line = -1
        let back = 1 / scale
        repeat {
            if TessPageIteratorIsAtBeginningOf(pageIterator, RIL_TEXTLINE) != 0 { line += 1 }
            guard let cText = TessResultIteratorGetUTF8Text(iterator, RIL_WORD) else { continue }
            let text = String(cString: cText)
            TessDeleteText(cText)
            let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
            if trimmed.isEmpty { continue }
            var left: Int32 = 0
            var top: Int32 = 0
            var right: Int32 = 0
            var bottom: Int32 = 0
            _ = TessPageIteratorBoundingBox(pageIterator, RIL_WORD, &left, &top, &right, &bottom)
            words.append(
                OCRWord(
                    text: trimmed,
                    confidence: Double(TessResultIteratorConfidence(iterator, RIL_WORD)),
                    line: max(line, 0),
                    box: .init(
                        x: Int(Double(left) * back),
                        y: Int(Double(top) * back),
                        width: Int(Double(right - left) * back),
                        height: Int(Double(bottom - top) * back)
                    )
                )
            )
        } while TessResultIteratorNext(iterator, RIL_WORD) != 0
        return OCRPage(words: words, quality: quality)
    }
}

import CTracerTesseract
import CTracerZBar
import Foundation

/// The QR codes on a page, read with ZBar from the decoded image (a signed health certificate
/// carries its whole content in one: "HC1:…").
enum QRCodes {
    /// The text of every QR code ZBar finds in `pix`. ZBar finds a QR code at any angle, so a
    /// tilted photo needs no straightening. Every page pays for the look, so it is made cheap:
    /// the image at half size first (a phone's photo or screenshot of a certificate has modules
    /// of 4 px and more, 2 at half size; and the halving smooths a photo's sensor noise), then, if
    /// nothing was found, at full size on every third scan line (a small code on a large scan).
    /// Measured over the 62 OCR fixture pages (release, 2 runs each, `tracer verify` per page):
    /// the full image then half size added 41 ms a page (357 → 398 ms), this order 22 ms (379 ms).
    static func read(_ pix: UnsafeMutablePointer<PIX>) -> [String] {
        var gray = pixConvertTo8(pix, 0)
        guard gray != nil else { return [] }
        defer { pixDestroy(&gray) }
        if max(pixGetWidth(gray), pixGetHeight(gray)) >= 1000 {
            var half = pixScaleAreaMap2(gray)
            defer { pixDestroy(&half) }
            if let half {
                let found = scan(half, density: 1)
                if !found.isEmpty { return found }
            }
            return scan(gray!, density: 3)
        }
        return scan(gray!, density: 1)
    }

    /// One pass of ZBar over an 8-bit image.
    static func scan(_ pix: UnsafeMutablePointer<PIX>, density: Int32 = 1) -> [String] {
        let width = Int(pixGetWidth(pix))
        let height = Int(pixGetHeight(pix))
        guard width > 0, height > 0, pixGetDepth(pix) == 8, let data = pixGetData(pix) else { return [] }
        let wpl = Int(pixGetWpl(pix))
        // Leptonica keeps each row in 32-bit words, most significant byte first: on a
        // little-endian machine byte x of a row is at (x ^ 3) of its words.
        var bytes = [UInt8](repeating: 0, count: width * height)
        data.withMemoryRebound(to: UInt8.self, capacity: wpl * 4 * height) { raw in
            for y in 0..<height {
                let row = raw + y * wpl * 4
                for x in 0..<width { bytes[y * width + x] = row[x ^ 3] }
            }
        }
        guard let scanner = zbar_image_scanner_create() else { return [] }
        defer { zbar_image_scanner_destroy(scanner) }
        _ = zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_ENABLE, 0)
        _ = zbar_image_scanner_set_config(scanner, ZBAR_QRCODE, ZBAR_CFG_ENABLE, 1)
        _ = zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_X_DENSITY, density)
        _ = zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_Y_DENSITY, density)
        guard let image = zbar_image_create() else { return [] }
        defer { zbar_image_destroy(image) }
        // "Y800": 8-bit grey, as zbar_fourcc('Y','8','0','0') spells it.
        zbar_image_set_format(image, 0x3030_3859)
        zbar_image_set_size(image, UInt32(width), UInt32(height))
        return bytes.withUnsafeBytes { buffer -> [String] in
            zbar_image_set_data(image, buffer.baseAddress, UInt(buffer.count), nil)
            guard zbar_scan_image(scanner, image) > 0 else { return [] }
            var out: [String] = []
            var symbol = zbar_image_first_symbol(image)
            while let s = symbol {
                if let text = zbar_symbol_get_data(s) {
                    let length = Int(zbar_symbol_get_data_length(s))
                    out.append(
                        String(decoding: UnsafeRawBufferPointer(start: text, count: length), as: UTF8.self)
                    )
                }
                symbol = zbar_symbol_next(s)
            }
            // The buffer is ours and goes with this closure: ZBar lets go of it now.
            zbar_image_set_data(image, nil, 0, nil)
            return out
        }
    }
}

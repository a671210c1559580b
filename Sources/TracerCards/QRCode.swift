import CTracerQREncode
import CTracerZlib

/// A QR code of a text (a person's link, printed on the badge's card), drawn as a PNG. The
/// symbol is libqrencode's (error correction M: a card still reads with a scratch); the PNG is
/// written here (8-bit grey, each module a square of `scale` pixels, four modules of quiet zone
/// around, as ISO/IEC 18004 asks), deflated with zlib: a few dozen lines, where an image library
/// would be a dependency for one picture.
public struct QRCode: Sendable, Equatable {
    /// Modules per side.
    public let width: Int
    /// Dark modules, row by row.
    public let dark: [Bool]

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public init(_ text: String) throws(Failure) {
        guard !text.isEmpty, text.utf8.count <= 1200 else {
            throw Failure(description: "a QR code holds 1 to 1,200 bytes of text here, not \(text.utf8.count)")
        }
        guard let code = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1) else {
            throw Failure(description: "libqrencode could not encode the text (\(text.utf8.count) bytes)")
        }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        self.width = width
        // Bit 0 of each byte is the module's colour (1: dark); the rest is libqrencode's own.
        dark = (0..<width * width).map { code.pointee.data[$0] & 1 == 1 }
    }

    /// The code as a PNG image.
    public func png(scale: Int = 8) throws(Failure) -> [UInt8] {
        let quiet = 4
        let side = (width + 2 * quiet) * scale
        var raw: [UInt8] = []
        raw.reserveCapacity(side * (side + 1))
        for y in 0..<side {
            raw.append(0)  // filter: none
            let row = y / scale - quiet
            for x in 0..<side {
                let column = x / scale - quiet
                let isDark = row >= 0 && row < width && column >= 0 && column < width && dark[row * width + column]
                raw.append(isDark ? 0 : 255)
            }
        }
        var header: [UInt8] = []
        header += Self.bigEndian(UInt32(side))
        header += Self.bigEndian(UInt32(side))
        header += [8, 0, 0, 0, 0]  // 8 bits, grey, deflate, no filter choice, not interlaced
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Self.chunk("IHDR", header)
            + Self.chunk("IDAT", try Self.deflate(raw)) + Self.chunk("IEND", [])
    }

    static func bigEndian(_ v: UInt32) -> [UInt8] {
        [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]
    }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typed = Array(type.utf8) + data
        let crc = typed.withUnsafeBufferPointer { UInt32(crc32(0, $0.baseAddress, uInt($0.count))) }
        return bigEndian(UInt32(data.count)) + typed + bigEndian(crc)
    }

    static func deflate(_ data: [UInt8]) throws(Failure) -> [UInt8] {
        var length = compressBound(uLong(data.count))
        var out = [UInt8](repeating: 0, count: Int(length))
        let status = out.withUnsafeMutableBufferPointer { o in
            data.withUnsafeBufferPointer { i in compress2(o.baseAddress, &length, i.baseAddress, uLong(i.count), 9) }
        }
        guard status == Z_OK else { throw Failure(description: "zlib could not compress the image (error \(status))") }
        return Array(out.prefix(Int(length)))
    }
}

import CTracerTesseract
import Foundation

/// What is checked before an image is decoded: its size on disk, its type from its first bytes
/// (PNG, JPEG, TIFF, WebP; never the file name), its dimensions from its header, and that it is
/// whole. A decompression bomb is refused from its header in microseconds.
enum ImageCheck {
    enum Format: String {
        case png = "PNG"
        case jpeg = "JPEG"
        case tiff = "TIFF"
        case webp = "WebP"
    }

    /// The file's bytes, if it is not too large (checked before reading).
    static func load(_ path: String, limits: ImageLimits) throws -> Data {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw OCRError("\(path): \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw OCRError("\(path): not a regular file") }
        guard Int(info.st_size) <= limits.maxBytes else {
            throw OCRError(
                "\(path): \(megabytes(Int(info.st_size))) is over the \(megabytes(limits.maxBytes)) limit for an image"
            )
        }
        guard let handle = FileHandle(forReadingAtPath: path) else { throw OCRError("\(path): cannot be read") }
        defer { try? handle.close() }
        return (try? handle.readToEnd()) ?? Data()
    }

    static func megabytes(_ bytes: Int) -> String { String(format: "%.1f MB", Double(bytes) / 1_048_576) }

    static func sniff(_ d: Data) -> Format? {
        let b = [UInt8](d.prefix(12))
        if b.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if b.starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if b.starts(with: [0x49, 0x49, 0x2A, 0x00]) || b.starts(with: [0x4D, 0x4D, 0x00, 0x2A]) { return .tiff }
        if b.count >= 12, b.starts(with: Array("RIFF".utf8)), Array(b[8..<12]) == Array("WEBP".utf8) { return .webp }
        return nil
    }

    /// Checks bytes in memory; returns the format.
    @discardableResult
    static func check(_ data: Data, name: String, limits: ImageLimits) throws -> Format {
        guard data.count <= limits.maxBytes else {
            throw OCRError(
                "\(name): \(megabytes(data.count)) is over the \(megabytes(limits.maxBytes)) limit for an image"
            )
        }
        guard !data.isEmpty else { throw OCRError("\(name): the file is empty") }
        guard let format = sniff(data) else {
            throw OCRError("\(name): not a PNG, JPEG, TIFF or WebP image")
        }
        guard isWhole(data, format) else {
            throw OCRError("\(name): the \(format.rawValue) file is truncated or corrupt")
        }
        var kind: l_int32 = 0
        var width: l_int32 = 0
        var height: l_int32 = 0
        var bps: l_int32 = 0
        var spp: l_int32 = 0
        var colormap: l_int32 = 0
        let ok = data.withUnsafeBytes { raw in
            pixReadHeaderMem(
                raw.bindMemory(to: l_uint8.self).baseAddress,
                raw.count,
                &kind,
                &width,
                &height,
                &bps,
                &spp,
                &colormap
            )
        }
        guard ok == 0, width > 0, height > 0 else {
            throw OCRError("\(name): the \(format.rawValue) header cannot be read")
        }
        let pixels = Int(width) * Int(height)
        guard pixels <= limits.maxPixels else {
            throw OCRError(
                "\(name): \(width)×\(height) pixels (\(pixels / 1_000_000) megapixels) is over the "
                    + "\(limits.maxPixels / 1_000_000)-megapixel limit"
            )
        }
        return format
    }

    /// Whether the file ends as its format says a whole file ends. Decoders fill a truncated
    /// JPEG with grey rather than fail, so this is checked here.
    static func isWhole(_ d: Data, _ format: Format) -> Bool {
        let bytes = [UInt8](d)
        switch format {
        case .png:
            // The IEND chunk: length 0, "IEND", CRC AE 42 60 82, at the end (trailing bytes allowed
            // only if the chunk is there).
            let iend: [UInt8] = [0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82]
            guard bytes.count >= 8 + 25 else { return false }
            return bytes.suffix(64).indices.contains { i in
                i + 8 <= bytes.count && Array(bytes[i..<(i + 8)]) == iend
            }
        case .jpeg:
            // End of image (FF D9), allowing a little padding after it.
            let tail = bytes.suffix(32)
            return zip(tail, tail.dropFirst()).contains { $0 == 0xFF && $1 == 0xD9 }
        case .webp:
            // RIFF's length covers the rest of the file.
            guard bytes.count >= 12 else { return false }
            let length = Int(bytes[4]) | Int(bytes[5]) << 8 | Int(bytes[6]) << 16 | Int(bytes[7]) << 24
            return bytes.count >= length + 8
        case .tiff:
            return bytes.count > 8
        }
    }
}

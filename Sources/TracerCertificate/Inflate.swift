import CTracerZlib

/// zlib's inflate (RFC 1950), bounded: a QR code holds at most about 3 kB, and what it inflates
/// to is refused past `limit` bytes (a decompression bomb never gets further).
enum Inflate {
    static func zlib(_ input: [UInt8], limit: Int = 64 * 1024) throws(CertificateError) -> [UInt8] {
        var stream = z_stream()
        guard inflateInit_(&stream, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw CertificateError(.malformed, "zlib could not start")
        }
        defer { inflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: limit + 1)
        var input = input
        let status = input.withUnsafeMutableBufferPointer { inBuffer in
            output.withUnsafeMutableBufferPointer { outBuffer in
                stream.next_in = inBuffer.baseAddress
                stream.avail_in = UInt32(inBuffer.count)
                stream.next_out = outBuffer.baseAddress
                stream.avail_out = UInt32(outBuffer.count)
                return inflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else {
            if stream.total_out > UInt(limit) || status == Z_BUF_ERROR && stream.avail_out == 0 {
                throw CertificateError(.malformed, "the certificate inflates to more than \(limit) bytes")
            }
            throw CertificateError(.malformed, "the certificate's zlib data is corrupt (zlib status \(status))")
        }
        return Array(output[0..<Int(stream.total_out)])
    }
}

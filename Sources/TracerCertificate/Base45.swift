/// Base45 (RFC 9285): how a health certificate's deflated COSE bytes become QR alphanumerics.
public enum Base45 {
    static let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:".utf8)
    static let values: [UInt8: Int] = Dictionary(uniqueKeysWithValues: alphabet.enumerated().map { ($1, $0) })

    /// The bytes of `text`, or an error naming the first thing wrong.
    public static func decode(_ text: String) throws(CertificateError) -> [UInt8] {
        let chars = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(chars.count * 2 / 3)
        var i = 0
        while i < chars.count {
            let n = min(3, chars.count - i)
            guard n >= 2 else { throw CertificateError(.malformed, "the Base45 text ends with a single character") }
            var value = 0
            var weight = 1
            for k in 0..<n {
                guard let v = values[chars[i + k]] else {
                    throw CertificateError(.malformed, "'\(Character(UnicodeScalar(chars[i + k])))' is not Base45")
                }
                value += v * weight
                weight *= 45
            }
            if n == 3 {
                guard value <= 0xFFFF else { throw CertificateError(.malformed, "a Base45 triple is over 65535") }
                out += [UInt8(value >> 8), UInt8(value & 0xFF)]
            } else {
                guard value <= 0xFF else { throw CertificateError(.malformed, "a Base45 pair is over 255") }
                out.append(UInt8(value))
            }
            i += n
        }
        return out
    }
}

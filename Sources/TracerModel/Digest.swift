import Crypto
import Foundation

/// SHA-256 and HMAC-SHA256 in lowercase hex (swift-crypto), for the ids and digests the model keeps.
public enum Digest {
    /// SHA-256 of `bytes`, 64 hex digits.
    public static func sha256Hex<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        hex(SHA256.hash(data: Array(bytes)))
    }

    /// SHA-256 of bytes, base64 (a Content-Security-Policy's script hash).
    public static func sha256Base64(_ bytes: [UInt8]) -> String {
        Data(SHA256.hash(data: bytes)).base64EncodedString()
    }

    /// SHA-256 of a string's UTF-8.
    public static func sha256Hex(_ text: String) -> String { sha256Hex(Array(text.utf8)) }

    /// HMAC-SHA256 (RFC 2104) of `message` under `key`, 64 hex digits.
    public static func hmacSHA256Hex(key: [UInt8], message: [UInt8]) -> String {
        hex(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
    }

    static let digits = Array("0123456789abcdef".utf8)

    static func hex<D: Sequence<UInt8>>(_ bytes: D) -> String {
        var out = [UInt8]()
        out.reserveCapacity(64)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

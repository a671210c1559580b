import Crypto
import Foundation
import _CryptoExtras

/// A badge's rotating identifier, byte for byte as docs/design.md ("Badges and rotating
/// identifiers") fixes it, so that badge firmware written elsewhere interoperates:
///
/// - a badge's key: HKDF-SHA256(ikm = the site's badge key, salt = empty, info = "tracer badge " ‖
///   the serial in UTF-8), 16 bytes;
/// - the epoch: 2^K seconds (K = 10 by default), starting at t = floor(unix seconds / 2^K) · 2^K;
/// - the id: AES-128 (one block) under the badge's key of 0x00 ×11 ‖ K ‖ t (4 bytes, big-endian);
///   the badge advertises major = its bytes 0–1 and minor = bytes 2–3, big-endian.
///
/// Eddystone-EID's construction, cut to iBeacon's 32 bits. Nothing here is on the advert path:
/// kiosks look ids up in a `ResolutionTable` built ahead.
public enum RotatingID {
    /// K's default: epochs of 1,024 s (about 17 minutes).
    public static let defaultBits = 10

    /// A badge's 16-byte key from the site's badge key and the badge's serial.
    public static func badgeKey(siteKey: [UInt8], serial: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: siteKey),
            salt: [UInt8](),
            info: Array("tracer badge \(serial)".utf8),
            outputByteCount: 16
        )
    }

    /// The start of the epoch `unixSeconds` falls in, for epochs of 2^`bits` seconds.
    public static func epochStart(_ unixSeconds: Double, bits: Int = defaultBits) -> UInt32 {
        let length = Double(1 << bits)
        return UInt32(clamping: Int64((unixSeconds / length).rounded(.down)) << Int64(bits))
    }

    /// The major and minor a badge with `key` advertises in the epoch starting at `start`.
    public static func id(
        key: SymmetricKey,
        epochStart start: UInt32,
        bits: Int = defaultBits
    ) -> (
        major: UInt16, minor: UInt16
    ) {
        var block = [UInt8](repeating: 0, count: 16)
        block[11] = UInt8(truncatingIfNeeded: bits)
        block[12] = UInt8(truncatingIfNeeded: start >> 24)
        block[13] = UInt8(truncatingIfNeeded: start >> 16)
        block[14] = UInt8(truncatingIfNeeded: start >> 8)
        block[15] = UInt8(truncatingIfNeeded: start)
        // One AES block (a 16-byte key always makes AES-128 and one block always permutes: the
        // throwing paths are for other sizes).
        try! AES.permute(&block, key: key)
        return (UInt16(block[0]) << 8 | UInt16(block[1]), UInt16(block[2]) << 8 | UInt16(block[3]))
    }

    /// The badge's stable pseudonym, the interaction's `deviceId`: never a key or a rotating id.
    public static func deviceID(serial: String) -> String { "badge:\(serial)" }
}

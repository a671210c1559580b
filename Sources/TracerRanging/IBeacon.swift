/// An iBeacon advert's payload: proximity UUID, major, minor and the measured power at 1 m.
public struct IBeacon: Sendable, Hashable {
    /// The proximity UUID's 16 bytes, in advert (big-endian) order.
    public var uuid: UUIDBytes
    public var major: UInt16
    public var minor: UInt16
    /// The calibrated RSSI at 1 m, in dBm (signed).
    public var measuredPower: Int8

    public init(uuid: UUIDBytes, major: UInt16, minor: UInt16, measuredPower: Int8) {
        self.uuid = uuid
        self.major = major
        self.minor = minor
        self.measuredPower = measuredPower
    }

    /// The anonymous device id docs/design.md fixes: `uuid:major:minor`, lowercase.
    public var deviceID: String { "\(uuid):\(major):\(minor)" }
}

/// A 128-bit UUID kept as bytes, printed in lowercase canonical form.
public struct UUIDBytes: Sendable, Hashable, CustomStringConvertible {
    public var high: UInt64
    public var low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Parses `f7826da6-4fa2-4e98-8024-bc5b71e0893e` (either case; the dashes are required).
    public init?(_ text: String) {
        let utf8 = Array(text.utf8)
        guard utf8.count == 36 else { return nil }
        var high: UInt64 = 0
        var low: UInt64 = 0
        var nibbles = 0
        for (i, c) in utf8.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                guard c == UInt8(ascii: "-") else { return nil }
                continue
            }
            guard let v = Hex.value(c) else { return nil }
            if nibbles < 16 { high = high << 4 | UInt64(v) } else { low = low << 4 | UInt64(v) }
            nibbles += 1
        }
        self.init(high: high, low: low)
    }

    public var description: String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(36)
        for i in 0..<32 {
            if i == 8 || i == 12 || i == 16 || i == 20 { out.append(UInt8(ascii: "-")) }
            let word = i < 16 ? high : low
            let shift = UInt64(60 - (i % 16) * 4)
            out.append(digits[Int((word >> shift) & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Finds iBeacon frames in the two shapes adverts arrive in.
///
/// Nothing here allocates: it reads the caller's bytes in place and returns a value type.
public enum IBeaconParser {
    /// Apple's company identifier.
    public static let apple: UInt16 = 0x004C

    /// An iBeacon from BlueZ's ManufacturerData entry: the company id and the bytes after it.
    public static func parse(companyID: UInt16, data: UnsafeRawBufferPointer) -> IBeacon? {
        guard companyID == apple else { return nil }
        return parsePayload(data)
    }

    /// An iBeacon from raw advertising data: a run of AD structures (length, type, data), as HCI
    /// and btmon show them. Other structures are skipped; a zero length ends the data (padding);
    /// a structure running past the end ends the search.
    public static func parse(advertisingData data: UnsafeRawBufferPointer) -> IBeacon? {
        var i = 0
        while i < data.count {
            let length = Int(data[i])
            if length == 0 { return nil }
            guard i + 1 + length <= data.count else { return nil }
            let type = data[i + 1]
            // 0xFF: manufacturer specific data, company id little-endian, then the payload.
            if type == 0xFF, length >= 3 {
                let company = UInt16(data[i + 2]) | UInt16(data[i + 3]) << 8
                if company == apple,
                    let beacon = parsePayload(UnsafeRawBufferPointer(rebasing: data[(i + 4)..<(i + 1 + length)]))
                {
                    return beacon
                }
            }
            i += 1 + length
        }
        return nil
    }

    /// Apple's payload: type 0x02, length 0x15, UUID (16), major (2), minor (2), power (1).
    static func parsePayload(_ p: UnsafeRawBufferPointer) -> IBeacon? {
        guard p.count == 23, p[0] == 0x02, p[1] == 0x15 else { return nil }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for k in 0..<8 { high = high << 8 | UInt64(p[2 + k]) }
        for k in 0..<8 { low = low << 8 | UInt64(p[10 + k]) }
        return IBeacon(
            uuid: UUIDBytes(high: high, low: low),
            major: UInt16(p[18]) << 8 | UInt16(p[19]),
            minor: UInt16(p[20]) << 8 | UInt16(p[21]),
            measuredPower: Int8(bitPattern: p[22])
        )
    }
}

/// Hexadecimal text.
public enum Hex {
    static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: c - 48
        case 65...70: c - 55
        case 97...102: c - 87
        default: nil
        }
    }

    /// Bytes from hex digits, allowing spaces, colons and a leading `0x`; nil if anything else
    /// is there or a digit is left over.
    public static func decode(_ text: String) -> [UInt8]? {
        var trimmed = Substring(text)
        if trimmed.hasPrefix("0x") || trimmed.hasPrefix("0X") { trimmed = trimmed.dropFirst(2) }
        var out: [UInt8] = []
        var pending: UInt8?
        for c in trimmed.utf8 {
            if c == UInt8(ascii: " ") || c == UInt8(ascii: ":") || c == UInt8(ascii: "\t") {
                guard pending == nil else { return nil }  // "0 2" is not a byte
                continue
            }
            guard let v = value(c) else { return nil }
            if let high = pending {
                out.append(high << 4 | v)
                pending = nil
            } else {
                pending = v
            }
        }
        return pending == nil ? out : nil
    }

    /// Lowercase hex digits.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

import Foundation

/// One UTC day of every active badge's ids: what a site server sends its kiosks, so that a kiosk
/// holds ids for the days ahead and never a key. A stolen kiosk then gives away the ids of the
/// days it holds (a few days ahead: `BadgeIDDay.horizon`), not the means to follow a badge after.
///
/// The day's epochs are those that start in it; `ids` is row by row, one row an epoch, one
/// column a badge (`serials`, `numbers`), each id major << 16 | minor.
public struct BadgeIDDay: Sendable, Equatable {
    /// The day's first second (00:00 UTC), Unix seconds.
    public var day: UInt32
    public var bits: Int
    /// The badges' version at the server when it was made (issuing, revoking, rekeying change it).
    public var version: Int64
    public var serials: [String]
    public var numbers: [UInt32]
    /// The start of the day's first epoch, and how many epochs start in the day.
    public var firstEpoch: UInt32
    public var epochs: Int
    public var ids: [UInt32]

    /// Days a kiosk holds ahead of today (today and the next `horizon − 1`): a kiosk cut off
    /// from its site server from Friday evening still resolves on Monday morning.
    public static let horizon = 4

    /// The ETag a site server gives a day: its badges' version, K and the day, so that a kiosk
    /// asking again hears "not modified" until a badge changes.
    public static func etag(version: Int64, bits: Int, day: UInt32) -> String {
        "\"v\(version)-k\(bits)-\(name(day))\""
    }

    /// The day that `unixSeconds` falls in (00:00 UTC).
    public static func day(of unixSeconds: Double) -> UInt32 {
        UInt32(clamping: Int64((unixSeconds / 86_400).rounded(.down)) * 86_400)
    }

    /// 2026-11-26 for the day's first second.
    public static func name(_ day: UInt32) -> String {
        let days = Int(day / 86_400)
        // Civil from days (Howard Hinnant's algorithm): no Foundation calendar on this path.
        let z = days + 719_468
        let era = z / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        return String(format: "%04d-%02d-%02d", y, m, d)
    }

    /// The day named 2026-11-26, or nil.
    public static func day(named text: String) -> UInt32? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard text.utf8.count == 10, parts.count == 3, let y = Int(parts[0]), let m = Int(parts[1]),
            let d = Int(parts[2]), (1970...2105).contains(y), (1...12).contains(m), (1...31).contains(d)
        else { return nil }
        let yy = m <= 2 ? y - 1 : y
        let era = yy / 400
        let yoe = yy - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        guard days >= 0, name(UInt32(days * 86_400)) == text else { return nil }
        return UInt32(clamping: days * 86_400)
    }

    /// The day's ids for `badges`.
    public init(badges: [BadgeKey], day: UInt32, bits: Int = RotatingID.defaultBits, version: Int64) {
        let length = UInt32(1) << UInt32(bits)
        let first = (day + length - 1) / length * length
        let end = UInt64(day) + 86_400
        var starts: [UInt32] = []
        var t = UInt64(first)
        while t < end, t <= UInt64(UInt32.max) {
            starts.append(UInt32(t))
            t += UInt64(length)
        }
        var ids: [UInt32] = []
        ids.reserveCapacity(starts.count * badges.count)
        for start in starts {
            for b in badges {
                let id = RotatingID.id(key: b.key, epochStart: start, bits: bits)
                ids.append(UInt32(id.major) << 16 | UInt32(id.minor))
            }
        }
        self.init(
            day: day,
            bits: bits,
            version: version,
            serials: badges.map(\.serial),
            numbers: badges.map(\.number),
            firstEpoch: first,
            epochs: starts.count,
            ids: ids
        )
    }

    public init(
        day: UInt32,
        bits: Int,
        version: Int64,
        serials: [String],
        numbers: [UInt32],
        firstEpoch: UInt32,
        epochs: Int,
        ids: [UInt32]
    ) {
        self.day = day
        self.bits = bits
        self.version = version
        self.serials = serials
        self.numbers = numbers
        self.firstEpoch = firstEpoch
        self.epochs = epochs
        self.ids = ids
    }

    /// The ids of the epoch starting at `start` (one a badge), or nil when it is not this day's.
    public func ids(ofEpoch start: UInt32) -> ArraySlice<UInt32>? {
        guard start >= firstEpoch, (start - firstEpoch) % (UInt32(1) << UInt32(bits)) == 0 else { return nil }
        let row = Int((start - firstEpoch) >> UInt32(bits))
        guard row < epochs else { return nil }
        return ids[row * serials.count..<(row + 1) * serials.count]
    }

    /// Whether the day's shape holds together (one id per badge and epoch): a day read from a
    /// server or a store is checked before it is used.
    public var isWhole: Bool {
        serials.count == numbers.count && ids.count == epochs * serials.count && bits >= 6 && bits <= 20
            && Set(serials).count == serials.count
    }

    /// `ids` as bytes, 4 a value, big-endian: how they travel and are kept.
    public var packedIDs: [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(ids.count * 4)
        for id in ids {
            out.append(UInt8(truncatingIfNeeded: id >> 24))
            out.append(UInt8(truncatingIfNeeded: id >> 16))
            out.append(UInt8(truncatingIfNeeded: id >> 8))
            out.append(UInt8(truncatingIfNeeded: id))
        }
        return out
    }

    /// `packedIDs` back, or nil when the length is not a multiple of 4.
    public static func unpack(_ bytes: [UInt8]) -> [UInt32]? {
        guard bytes.count % 4 == 0 else { return nil }
        return stride(from: 0, to: bytes.count, by: 4).map { i in
            UInt32(bytes[i]) << 24 | UInt32(bytes[i + 1]) << 16 | UInt32(bytes[i + 2]) << 8 | UInt32(bytes[i + 3])
        }
    }
}

import Foundation

/// A point in time with microsecond precision, as Firestore keeps timestamps.
///
/// The times tracer takes lie in Firestore's range, 0001-01-01T00:00:00Z through
/// 9999-12-31T23:59:59.999999Z (`Timestamp.range`). Every decoder of a time that crosses a
/// boundary (RFC 3339 text, a `{"__time__": n}` number, the command line, the sync wire) checks it
/// there, with `init?(checkedSeconds:)` or `init?(parsing:)`; inside the range, any sum of two
/// times or of a time and a window of years stays far from Int64's limits (2.5e17 µs of 9.2e18),
/// so arithmetic on stored times cannot trap. What is not checked saturates instead of trapping.
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Microseconds since 1970-01-01T00:00:00Z.
    public var microseconds: Int64

    /// The earliest time taken: 0001-01-01T00:00:00Z.
    public static let min = Timestamp(microseconds: -62_135_596_800_000_000)
    /// The latest time taken: 9999-12-31T23:59:59.999999Z.
    public static let max = Timestamp(microseconds: 253_402_300_799_999_999)
    /// The times tracer takes, as Firestore's.
    public static let range = min...max

    /// Whether this time lies in `Timestamp.range` (a stored time from before the range was
    /// checked may not).
    public var isInRange: Bool { Self.range.contains(self) }

    /// A timestamp from microseconds since the Unix epoch.
    public init(microseconds: Int64) {
        self.microseconds = microseconds
    }

    /// A timestamp from (fractional) seconds since the Unix epoch, saturating at the ends of
    /// `Timestamp.range` (NaN is the epoch): for times tracer computes itself. A time from outside
    /// goes through `init?(checkedSeconds:)`.
    public init(seconds: Double) {
        self = Self(checkedSeconds: seconds) ?? (seconds.isNaN ? Timestamp(microseconds: 0) : seconds < 0 ? .min : .max)
    }

    /// A timestamp from seconds since the Unix epoch, or nil when they are not a number or lie
    /// outside `Timestamp.range`.
    public init?(checkedSeconds seconds: Double) {
        let micros = (seconds * 1_000_000).rounded()
        guard micros.isFinite, micros >= Double(Self.min.microseconds), micros <= Double(Self.max.microseconds)
        else { return nil }
        // max's microseconds are not a double: the nearest one is a microsecond past it.
        self.microseconds = Swift.min(Int64(micros), Self.max.microseconds)
    }

    /// A timestamp from a Foundation date.
    public init(_ date: Date) {
        self.init(seconds: date.timeIntervalSince1970)
    }

    /// The current wall-clock time.
    public static func now() -> Timestamp {
        Timestamp(Date())
    }

    /// Seconds since the Unix epoch.
    public var seconds: Double { Double(microseconds) / 1_000_000 }

    /// The same instant as a Foundation date.
    public var date: Date { Date(timeIntervalSince1970: seconds) }

    /// This timestamp moved by a number of seconds, saturating at the ends of `Timestamp.range`.
    public func adding(seconds: Double) -> Timestamp {
        let delta = (seconds * 1_000_000).rounded()
        guard delta.isFinite, abs(delta) < 1e18 else { return seconds.isNaN ? self : seconds < 0 ? .min : .max }
        let (sum, overflow) = microseconds.addingReportingOverflow(Int64(delta))
        if overflow { return delta < 0 ? .min : .max }
        return Swift.min(Swift.max(Timestamp(microseconds: sum), .min), .max)
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.microseconds < rhs.microseconds
    }

    /// RFC 3339 in UTC with microseconds: `2026-11-22T10:00:00.125000Z`.
    public var description: String { iso8601 }

    /// RFC 3339 in UTC with microseconds: `2026-11-22T10:00:00.125000Z`.
    public var iso8601: String {
        var out: [UInt8] = []
        out.reserveCapacity(27)
        appendISO8601(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// RFC 3339 in UTC with milliseconds, as JavaScript writes it: `2026-11-22T10:00:00.125Z`.
    public var iso8601Milliseconds: String {
        var out: [UInt8] = []
        out.reserveCapacity(27)
        appendISO8601(to: &out)
        out.removeLast(4)
        out.append(UInt8(ascii: "Z"))
        return String(decoding: out, as: UTF8.self)
    }

    /// RFC 3339 in UTC to the second (what `ISO8601DateFormatter` writes): `2026-11-22T10:00:00Z`.
    public var iso8601Seconds: String {
        var out: [UInt8] = []
        out.reserveCapacity(27)
        appendISO8601(to: &out)
        out.removeLast(8)
        out.append(UInt8(ascii: "Z"))
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the RFC 3339 form as UTF-8, without building strings (the store writes many).
    func appendISO8601(to out: inout [UInt8]) {
        let (secs, micros) = microseconds.floorDivided(by: 1_000_000)
        let (days, secOfDay) = secs.floorDivided(by: 86_400)
        let (y, m, d) = Self.civil(fromDays: days)
        func digits(_ v: Int64, _ width: Int) {
            if v < 0 || v >= [1, 10, 100, 1000, 10_000, 100_000, 1_000_000][width] {
                out.append(contentsOf: String(v).utf8)  // years outside 0…9999
                return
            }
            var divisor: Int64 = [1, 1, 10, 100, 1000, 10_000, 100_000][width]
            while divisor > 0 {
                out.append(UInt8(48 + (v / divisor) % 10))
                divisor /= 10
            }
        }
        digits(y, 4)
        out.append(45)
        digits(m, 2)
        out.append(45)
        digits(d, 2)
        out.append(84)
        digits(secOfDay / 3600, 2)
        out.append(58)
        digits((secOfDay % 3600) / 60, 2)
        out.append(58)
        digits(secOfDay % 60, 2)
        out.append(46)
        digits(micros, 6)
        out.append(90)
    }

    /// Parses RFC 3339 (`2026-11-22T10:00:00Z`, fractions up to nanoseconds, `Z` or `±hh:mm`),
    /// a bare date (`2026-11-22`, midnight UTC), or Unix seconds (`1763776800.125`).
    public init?(parsing text: String) {
        if let seconds = Double(text) {
            self.init(checkedSeconds: seconds)
            return
        }
        var p = Array(text.utf8)[...]
        func number(_ width: Int) -> Int64? {
            guard p.count >= width else { return nil }
            var v: Int64 = 0
            for _ in 0..<width {
                let c = p.removeFirst()
                guard c >= 48, c <= 57 else { return nil }
                v = v * 10 + Int64(c - 48)
            }
            return v
        }
        func expect(_ c: UInt8) -> Bool {
            guard p.first == c else { return false }
            p.removeFirst()
            return true
        }
        guard let y = number(4), expect(45), let m = number(2), expect(45), let d = number(2),
            (1...12).contains(m), d >= 1, d <= Self.daysIn(month: m, of: y)
        else { return nil }
        var h: Int64 = 0
        var mi: Int64 = 0
        var s: Int64 = 0
        var micros: Int64 = 0
        var offset: Int64 = 0
        if !p.isEmpty {
            guard expect(84) || expect(116) || expect(32) else { return nil }  // T, t or space
            guard let hh = number(2), expect(58), let mm = number(2), hh < 24, mm < 60 else { return nil }
            h = hh
            mi = mm
            if expect(58) {
                guard let ss = number(2), ss < 61 else { return nil }
                s = Swift.min(ss, 59)
                if expect(46) {
                    var digits = 0
                    while let c = p.first, c >= 48, c <= 57 {
                        p.removeFirst()
                        if digits < 6 { micros = micros * 10 + Int64(c - 48) }
                        digits += 1
                    }
                    guard digits > 0 else { return nil }
                    for _ in digits..<Swift.max(digits, 6) { micros *= 10 }
                }
            }
            if expect(90) || expect(122) {  // Z or z
            } else if let sign = p.first, sign == 43 || sign == 45 {
                p.removeFirst()
                guard let oh = number(2), expect(58), let om = number(2) else { return nil }
                offset = (oh * 3600 + om * 60) * (sign == 45 ? -1 : 1)
            } else {
                return nil
            }
        }
        guard p.isEmpty else { return nil }
        let days = Self.days(fromCivil: y, m, d)
        let secs = days * 86_400 + h * 3600 + mi * 60 + s - offset
        // Year 0000, or an offset past either end of the range.
        guard Self.range.contains(Timestamp(microseconds: secs * 1_000_000 + micros)) else { return nil }
        self.init(microseconds: secs * 1_000_000 + micros)
    }

    /// 28 to 31 (the proleptic Gregorian calendar's leap years).
    static func daysIn(month m: Int64, of y: Int64) -> Int64 {
        switch m {
        case 2: return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Howard Hinnant's civil-date algorithms: exact for the proleptic Gregorian calendar.
    static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    static func days(fromCivil y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

}

extension Int64 {
    /// Floor division and the non-negative remainder.
    func floorDivided(by d: Int64) -> (Int64, Int64) {
        let q = self / d
        let r = self % d
        return r < 0 ? (q - 1, r + d) : (q, r)
    }
}

extension Int {
    /// The double rounded toward zero, saturating at `Int.min` and `Int.max` (NaN is 0): a
    /// stored or received number converted without a trap (`Int(_:)` traps out of range).
    public init(saturating d: Double) {
        if d.isNaN {
            self = 0
        } else if d >= 9.223_372_036_854_775e18 {
            self = .max
        } else if d <= -9.223_372_036_854_775e18 {
            self = .min
        } else {
            self = Int(d)
        }
    }
}

extension Int64 {
    /// The double rounded toward zero, saturating (NaN is 0), like `Int(saturating:)`.
    public init(saturating d: Double) { self = Int64(Int(saturating: d)) }
}

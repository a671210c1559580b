import Foundation
@_spi(Blocking) import TracerStore

/// A time as a person types it on the command line (`--since`, `--start`): `now`, `today`,
/// `yesterday`, an age (`90m`, `24h`, `7d` ago), a date (`2026-11-24`: its start) or a date and
/// time (`2026-11-24T11:00`, `2026-11-24 11:00:30`) in this machine's time zone, or RFC 3339 with
/// its own zone (`2026-11-24T11:00:00Z`, `…+01:00`).
enum When {
    static let examples = "a date (2026-11-24), a time (2026-11-24T11:00, local), yesterday, today, or an age (24h, 7d)"

    static func parse(_ text: String, now: Date = Date(), timeZone: TimeZone = .current) -> Timestamp? {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let word = text.trimmingCharacters(in: .whitespaces).lowercased()
        switch word {
        case "now": return Timestamp(seconds: now.timeIntervalSince1970)
        case "today": return Timestamp(seconds: calendar.startOfDay(for: now).timeIntervalSince1970)
        case "yesterday":
            let today = calendar.startOfDay(for: now)
            return calendar.date(byAdding: .day, value: -1, to: today).map {
                Timestamp(seconds: $0.timeIntervalSince1970)
            }
        default: break
        }
        if let unit = word.last, let seconds = ["m": 60.0, "h": 3600.0, "d": 86_400.0][String(unit)],
            let n = Double(word.dropLast()), n.isFinite, n >= 0, n <= 3650 * 86_400 / seconds
        {
            return Timestamp(seconds: now.timeIntervalSince1970 - n * seconds)
        }
        // A date, or a date and time with no zone: this machine's local time.
        let parts = word.split(whereSeparator: { $0 == "t" || $0 == " " })
        if parts.count <= 2, let date = parts.first, date.count == 10 {
            let d = date.split(separator: "-").compactMap { Int($0) }
            let t = parts.count == 2 ? parts[1].split(separator: ":").compactMap { Int($0) } : [0, 0]
            let zoned = parts.count == 2 && parts[1].contains { $0 == "z" || $0 == "+" || $0 == "-" }
            if !zoned, d.count == 3, (2...3).contains(t.count), (1...12).contains(d[1]), (1...31).contains(d[2]),
                (0..<24).contains(t[0]), (0..<60).contains(t[1]), t.count == 2 || (0..<60).contains(t[2])
            {
                let components = DateComponents(
                    year: d[0],
                    month: d[1],
                    day: d[2],
                    hour: t[0],
                    minute: t[1],
                    second: t.count == 3 ? t[2] : 0
                )
                if let date = calendar.date(from: components), calendar.component(.day, from: date) == d[2] {
                    return Timestamp(seconds: date.timeIntervalSince1970)
                }
                return nil
            }
        }
        return Timestamp(parsing: text)
    }
}

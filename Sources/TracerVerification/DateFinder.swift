import Foundation

/// Finds the sample's collection date on a page: `2026-11-20`, `20/11/2026`, `20.11.2026`,
/// `20 Nov 2026`, `November 20, 2026`, each with or without a time.
///
/// A date on a line labelled as collection (collected, sample, specimen, taken, swab, test date)
/// wins. Birth dates, expiry and print dates never count. Without a labelled date, a page with
/// exactly one other date (an SMS that says "taken on", a certificate with one date) uses it.
enum DateFinder {
    struct Found {
        var date: Date
        var text: String
        /// The lowest confidence among the words holding the date's digits.
        var digitConfidence: Double
        var labelled: Bool
        var context: String
        /// Another collection date on the page, on another day (a labelled line that is not also
        /// a print, report or receipt date): the two disagree.
        var disagreeing: Disagreeing?

        struct Disagreeing {
            var text: String
            var evidence: VerificationRule.Evidence
        }

        var evidence: VerificationRule.Evidence {
            VerificationRule.Evidence(text: text, confidence: digitConfidence, context: context)
        }
    }

    static let months = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ]
    static let month = #"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"#
    static let time = #"(?:[,\s]+(?:at\s+)?(\d{1,2})[:.h](\d{2})(?:[:.](\d{2}))?)?"#
    static let patterns: [(NSRegularExpression, Layout)] = [
        (Patterns.regex(#"\b(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})"# + time), .ymd),
        (Patterns.regex(#"\b(\d{1,2})[/.\-](\d{1,2})[/.\-](\d{4})\b"# + time), .dmy),
        (Patterns.regex(#"\b(\d{1,2})(?:st|nd|rd|th)?[\s\-]+"# + month + #"[\s\-,]+(\d{4})\b"# + time), .dMonthY),
        (Patterns.regex(#"\b"# + month + #"\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b"# + time), .monthDY),
    ]

    enum Layout { case ymd, dmy, dMonthY, monthDY }

    static let collection = Patterns.regex(
        #"\bcollect|\bsample|\bspecimen|\btaken\b|\bswab|\btest(?:ed)?\s+(?:date|on)\b|\bdate\s+of\s+(?:test|sampling|collection)|\bsampled\b"#
    )
    static let excluded = Patterns.regex(
        #"\bbirth|\bdob\b|\bd\.o\.b|\bborn\b|\bexpir|\bvalid\s+(?:until|to)\b|\bprinted\b|\bissued\b|\breported\b|\breceived\b|\bresult\s+date\b|\bdue\b|\binvoice\b"#
    )

    static func collectionDate(_ page: OCRPage, timeZone: TimeZone) -> Found? {
        var labelled: [Found] = []
        var plain: [Found] = []
        var others: [Found] = []
        for line in page.lines {
            let statement = Statement(line)
            let dates = find(in: statement, timeZone: timeZone)
            guard !dates.isEmpty else { continue }
            if statement.matches(excluded) && !statement.matches(collection) { continue }
            if statement.matches(collection) {
                let marked = dates.map {
                    var f = $0
                    f.labelled = true
                    return f
                }
                labelled += marked
                // "Sample received", "collected … reported …": not only a collection date.
                if !statement.matches(excluded) { plain += marked }
            } else {
                others += dates
            }
        }
        if var first = labelled.first {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = timeZone
            if let other = plain.first(where: { !calendar.isDate($0.date, inSameDayAs: first.date) }) {
                first.disagreeing = Found.Disagreeing(text: other.text, evidence: other.evidence)
            }
            return first
        }
        return others.count == 1 ? others[0] : nil
    }

    static func find(in statement: Statement, timeZone: TimeZone) -> [Found] {
        let text = statement.text
        let ns = text as NSString
        var out: [Found] = []
        var taken: [NSRange] = []
        for (regex, layout) in patterns {
            for m in regex.matches(in: text, range: NSRange(location: 0, length: ns.length)) {
                if taken.contains(where: { NSIntersectionRange($0, m.range).length > 0 }) { continue }
                func group(_ i: Int) -> String? {
                    let r = m.range(at: i)
                    return r.location == NSNotFound ? nil : ns.substring(with: r)
                }
                func number(_ i: Int) -> Int? { group(i).flatMap { Int($0) } }
                func monthNumber(_ i: Int) -> Int? {
                    group(i).flatMap { name in months.firstIndex(of: String(name.lowercased().prefix(3))).map { $0 + 1 }
                    }
                }
                var year: Int?
                var monthValue: Int?
                var day: Int?
                let timeBase: Int
                switch layout {
                case .ymd:
                    (year, monthValue, day, timeBase) = (number(1), number(2), number(3), 4)
                case .dmy:
                    // Day first, as most of the world writes it; month first when the first
                    // number cannot be a month's day-of-month otherwise (11/20/2026).
                    var (d, mo) = (number(1), number(2))
                    if let a = d, let b = mo, b > 12, a <= 12 { (d, mo) = (b, a) }
                    (year, monthValue, day, timeBase) = (number(3), mo, d, 4)
                case .dMonthY:
                    (year, monthValue, day, timeBase) = (number(3), monthNumber(2), number(1), 4)
                case .monthDY:
                    (year, monthValue, day, timeBase) = (number(3), monthNumber(1), number(2), 4)
                }
                guard let year, let monthValue, let day, (1...12).contains(monthValue), (1...31).contains(day),
                    (1900...2200).contains(year)
                else { continue }
                var components = DateComponents(year: year, month: monthValue, day: day)
                if let hour = number(timeBase), let minute = number(timeBase + 1), hour < 24, minute < 60 {
                    components.hour = hour
                    components.minute = minute
                }
                var calendar = Calendar(identifier: .gregorian)
                calendar.timeZone = timeZone
                guard let date = calendar.date(from: components),
                    calendar.component(.day, from: date) == day
                else { continue }
                taken.append(m.range)
                // The words that hold digits of this date.
                let digitWords = zip(statement.words, statement.ranges).filter {
                    NSIntersectionRange($0.1, m.range).length > 0 && $0.0.text.contains(where: \.isNumber)
                }
                out.append(
                    Found(
                        date: date,
                        text: ns.substring(with: m.range),
                        digitConfidence: digitWords.map(\.0.confidence).min() ?? 0,
                        labelled: false,
                        context: text
                    )
                )
            }
        }
        return out.sorted { $0.context.distance(to: $0.text) < $1.context.distance(to: $1.text) }
    }
}

extension String {
    /// Where `part` begins in this string (for ordering dates by their place on a line).
    fileprivate func distance(to part: String) -> Int {
        guard let r = range(of: part) else { return Int.max }
        return self.distance(from: startIndex, to: r.lowerBound)
    }
}

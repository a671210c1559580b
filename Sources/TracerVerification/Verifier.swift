import Foundation

/// What a site asks of a photographed test result before it is accepted. Defaults are the
/// careful ones: a false accept flags people who were never exposed.
public struct VerificationPolicy: Sendable, Equatable, Codable {
    /// The words that decide (the result, the disease, the date's digits) must be read with at
    /// least this confidence (Tesseract's 0–100).
    public var minConfidence: Double = 70
    /// The collection date may be at most this many days ago…
    public var maxAgeDays: Int = 14
    /// …and at most this many days ahead (time zones, clocks).
    public var maxFutureDays: Int = 1
    /// A result statement this many lines or more from every mention of the test's name (COVID-19,
    /// SARS-CoV-2) is doubtful: it may be another test's result on the same page.
    public var maxResultDistance: Int = 12
    /// Which reports wait for the health team (the site's `review` setting).
    public var review: Review = .doubtful

    public init() {}
}

/// Which self-reports a person on the health team decides before anyone is flagged.
public enum Review: String, Sendable, Equatable, Codable, CaseIterable {
    /// None: what the policy cannot decide with confidence is rejected.
    case none
    /// What the policy cannot decide with confidence (low-confidence deciding words, collection
    /// dates that disagree, a result far from the test's name) waits; the rest is decided.
    case doubtful
    /// Every report the policy would accept waits too (a forged image flags a whole room).
    case all
}

/// One rule of the decision: whether it passed, why, and the words it rests on.
public struct VerificationRule: Sendable, Equatable, Codable {
    /// `covid`, `testKind`, `result`, `date`, `confidence`; and `image` (the picture is why nothing
    /// could be read: blurred, grainy, too dark or faint), added only to a rejection; `history`
    /// (added by the review desk: the device's earlier report was denied at review).
    public var name: String
    public var passed: Bool
    /// Why, in English (the command line, the review desk, the store).
    public var detail: String
    /// Why, as a message a page says in the person's language (`detail` is its English).
    public var message: RuleMessage?
    public var evidence: [Evidence]
    /// A failure a person could overrule: the words were read with low confidence, the page gives
    /// collection dates that disagree, the result stands far from the test's name. A failed rule
    /// that is not doubtful (a negative result, an old test) rejects whatever a person would say.
    public var doubtful: Bool

    public init(name: String, passed: Bool, detail: String, evidence: [Evidence], doubtful: Bool = false) {
        self.name = name
        self.passed = passed
        self.detail = detail
        self.evidence = evidence
        self.doubtful = doubtful && !passed
    }

    public init(name: String, passed: Bool, _ message: RuleMessage, evidence: [Evidence], doubtful: Bool = false) {
        self.init(name: name, passed: passed, detail: message.text(), evidence: evidence, doubtful: doubtful)
        self.message = message
    }

    public struct Evidence: Sendable, Equatable, Codable {
        /// The words that matched.
        public var text: String
        /// Their lowest confidence.
        public var confidence: Double
        /// The whole line (or sentence) they were read in.
        public var context: String

        public init(text: String, confidence: Double, context: String) {
            self.text = text
            self.confidence = confidence
            self.context = context
        }
    }
}

/// The decision on one page.
public struct Verification: Sendable, Equatable, Codable {
    public var accepted: Bool
    public var rules: [VerificationRule]
    /// The sample's collection date, when one was found (start of that day, or the time read).
    public var collectedAt: Date?

    public init(accepted: Bool, rules: [VerificationRule], collectedAt: Date?) {
        self.accepted = accepted
        self.rules = rules
        self.collectedAt = collectedAt
    }

    public var failed: [VerificationRule] { rules.filter { !$0.passed } }

    /// What the policy makes of a page.
    public enum Decision: String, Sendable, Equatable, Codable {
        /// Every rule passed.
        case accepted
        /// Every rule that failed is one a person could overrule (`VerificationRule.doubtful`).
        case doubtful
        /// A rule failed for certain.
        case rejected
    }

    public var decision: Decision {
        let failed = self.failed
        if failed.isEmpty { return .accepted }
        return failed.allSatisfy(\.doubtful) ? .doubtful : .rejected
    }

    /// Why it was refused, as a person should hear it: when the picture is the problem (the
    /// `image` rule), that alone, for nothing else on it could be read; else every failed rule.
    public var reasons: [VerificationRule] {
        let picture = failed.filter { $0.name == "image" }
        return picture.isEmpty ? failed : picture
    }

    /// The doubtful rules' details: why a person should look.
    public var doubts: [String] { failed.filter(\.doubtful).map { "\($0.name): \($0.detail)" } }
}

/// The verification policy, applied to what OCR read. Pure: no I/O, the clock passed in.
///
/// Real reports say "negative" and "positive" in many places that are not the result:
/// reference ranges, controls, disclaimers ("a negative result does not rule out infection").
/// Only *result statements* decide: a labelled result (`Result: POSITIVE`), a results-table row
/// naming the virus (`SARS-CoV-2 RNA   DETECTED`), or a sentence about this test (`your test
/// taken on … is positive`). Every result statement must say positive; any that says negative,
/// not detected, inconclusive or invalid rejects the page.
public enum Verifier {
    public static func verify(
        _ page: OCRPage,
        policy: VerificationPolicy = VerificationPolicy(),
        now: Date,
        timeZone: TimeZone = .current
    ) -> Verification {
        let statements = Statement.split(page)
        let covid = covidRule(statements)
        let kind = testKindRule(statements)
        let result = resultRule(statements, policy: policy)
        let date = dateRule(page, policy: policy, now: now, timeZone: timeZone)
        // The words that decide: the disease's best-read mention and the result statements.
        let deciding = (covid.best.map { [$0] } ?? []) + result.deciding
        let rules = [covid.rule, kind, result.rule, date.rule, confidenceRule(deciding, policy: policy)]
        var verification = Verification(
            accepted: rules.allSatisfy(\.passed),
            rules: rules,
            collectedAt: date.collectedAt
        )
        // The picture itself, when it is why nothing could be read: the person can take it again.
        // It comes first: it is what the person can do something about.
        if verification.decision == .rejected, !result.found || covid.best == nil, let image = imageRule(page) {
            verification.rules.insert(image, at: 0)
        }
        return verification
    }

    /// The disease named, and its best-read mention (which establishes it).
    static func covidRule(_ statements: [Statement]) -> (rule: VerificationRule, best: Statement.Match?) {
        let covid = statements.compactMap { $0.first(Patterns.covid) }
        let rule = VerificationRule(
            name: "covid",
            passed: !covid.isEmpty,
            RuleMessage(covid.isEmpty ? "covid.missing" : "covid.found"),
            evidence: covid.prefix(3).map(\.evidence)
        )
        return (rule, covid.max(by: { $0.confidence < $1.confidence }))
    }

    /// The kind of test named.
    static func testKindRule(_ statements: [Statement]) -> VerificationRule {
        let kinds = statements.compactMap { $0.first(Patterns.testKind) }
        return VerificationRule(
            name: "testKind",
            passed: !kinds.isEmpty,
            kinds.isEmpty
                ? RuleMessage("testKind.missing") : RuleMessage("testKind.found", ["kind": kinds[0].text]),
            evidence: kinds.prefix(3).map(\.evidence)
        )
    }

    /// The result: every result statement positive, near the test's name. `found`: whether any
    /// result statement was read; `deciding`: the positive ones, when they decide.
    static func resultRule(
        _ statements: [Statement],
        policy: VerificationPolicy
    ) -> (
        rule: VerificationRule, found: Bool, deciding: [Statement.Match]
    ) {
        var results: [(Outcome, Statement.Match)] = []
        for s in statements where s.isResultStatement {
            if let m = s.first(Patterns.negative) {
                results.append((.negative, m))
            } else if let m = s.first(Patterns.inconclusive) {
                results.append((.inconclusive, m))
            } else if let m = s.first(Patterns.positive) {
                results.append((.positive, m))
            }
        }
        guard !results.isEmpty else {
            return (
                VerificationRule(name: "result", passed: false, RuleMessage("result.missing"), evidence: []), false, []
            )
        }
        let evidence = results.map(\.1.evidence)
        guard Set(results.map(\.0)) == [.positive] else {
            // The first statement that is not positive (the evidence holds every one).
            let bad = results.first { $0.0 != .positive }!
            let outcome = ["outcome": ["outcome.\(bad.0.rawValue)"]]
            let message =
                results.first(where: { $0.0 == .positive }).map {
                    RuleMessage("result.contradict", ["text": bad.1.text, "positive": $0.1.text], terms: outcome)
                } ?? RuleMessage("result.notPositive", ["text": bad.1.text], terms: outcome)
            return (VerificationRule(name: "result", passed: false, message, evidence: evidence), true, [])
        }
        // A positive result statement near the test's name (or naming it) is this test's.
        let lines = statements.filter { $0.matches(Patterns.covid) }.map(\.line)
        let distance = results.map { r in lines.map { abs($0 - r.1.line) }.min() ?? Int.max }.min() ?? Int.max
        let rule =
            lines.isEmpty || distance < policy.maxResultDistance
            ? VerificationRule(name: "result", passed: true, RuleMessage("result.positive"), evidence: evidence)
            : VerificationRule(
                name: "result",
                passed: false,
                RuleMessage(
                    "result.far",
                    [
                        "text": results[0].1.text, "line": "\(results[0].1.line + 1)", "distance": "\(distance)",
                        "nameLine": "\(lines[0] + 1)",
                    ]
                ),
                evidence: evidence,
                doubtful: true
            )
        return (rule, true, results.map(\.1))
    }

    /// The date the sample was collected: found, read with confidence, one, neither too old nor
    /// in the future.
    static func dateRule(
        _ page: OCRPage,
        policy: VerificationPolicy,
        now: Date,
        timeZone: TimeZone
    ) -> (
        rule: VerificationRule, collectedAt: Date?
    ) {
        guard let found = DateFinder.collectionDate(page, timeZone: timeZone) else {
            return (VerificationRule(name: "date", passed: false, RuleMessage("date.missing"), evidence: []), nil)
        }
        let lowest = found.digitConfidence
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let days =
            calendar.dateComponents(
                [.day],
                from: calendar.startOfDay(for: found.date),
                to: calendar.startOfDay(for: now)
            ).day ?? 0
        let shown = found.evidence
        let inRange = days <= policy.maxAgeDays && -days <= policy.maxFutureDays
        let rule: VerificationRule
        if lowest < policy.minConfidence {
            rule = VerificationRule(
                name: "date",
                passed: false,
                RuleMessage(
                    "date.lowConfidence",
                    ["text": found.text, "confidence": "\(Int(lowest))", "min": "\(Int(policy.minConfidence))"]
                ),
                evidence: [shown],
                doubtful: inRange
            )
        } else if let other = found.disagreeing {
            rule = VerificationRule(
                name: "date",
                passed: false,
                RuleMessage("date.twoDates", ["text": found.text, "other": other.text]),
                evidence: [shown, other.evidence],
                doubtful: inRange
            )
        } else if days > policy.maxAgeDays {
            rule = VerificationRule(
                name: "date",
                passed: false,
                RuleMessage("date.old", ["days": "\(days)", "text": found.text, "max": "\(policy.maxAgeDays)"]),
                evidence: [shown]
            )
        } else if -days > policy.maxFutureDays {
            rule = VerificationRule(
                name: "date",
                passed: false,
                RuleMessage("date.future", ["text": found.text, "days": "\(-days)"]),
                evidence: [shown]
            )
        } else {
            rule = VerificationRule(
                name: "date",
                passed: true,
                RuleMessage.collected(found.text, days: days, labelled: found.labelled),
                evidence: [shown]
            )
        }
        return (rule, found.date)
    }

    /// The deciding words read with enough confidence. Low confidence in words that were found
    /// is a person's to judge; nothing found is not.
    static func confidenceRule(_ deciding: [Statement.Match], policy: VerificationPolicy) -> VerificationRule {
        let weak = deciding.filter { $0.confidence < policy.minConfidence }
        return VerificationRule(
            name: "confidence",
            passed: weak.isEmpty && !deciding.isEmpty,
            deciding.isEmpty
                ? RuleMessage("confidence.nothing")
                : weak.isEmpty
                    ? RuleMessage("confidence.good", ["min": "\(Int(policy.minConfidence))"])
                    : RuleMessage(
                        "confidence.low",
                        ["words": weak.map { "\"\($0.text)\" \(Int($0.confidence))%" }.joined(separator: ", ")]
                    ),
            evidence: (weak.isEmpty ? deciding : weak).map(\.evidence),
            doubtful: !deciding.isEmpty
        )
    }

    /// The picture's own problems (blur, noise, contrast), when it has any.
    static func imageRule(_ page: OCRPage) -> VerificationRule? {
        guard let q = page.quality, !q.problems.isEmpty else { return nil }
        return VerificationRule(
            name: "image",
            passed: false,
            RuleMessage(
                "image.retake",
                [
                    "edge": String(format: "%.1f", q.edgeWidth), "noise": String(format: "%.1f", q.noise),
                    "contrast": "\(Int(q.contrast))",
                ],
                terms: ["problems": q.problemKeys.map { "image.\($0)" }]
            ),
            evidence: []
        )
    }

    enum Outcome: String, Hashable {
        case positive, negative, inconclusive
    }
}

/// Patterns over lower-cased text; OCR's usual confusions (0/o, 1/l/i) are allowed where they do
/// no harm.
enum Patterns {
    static func regex(_ pattern: String) -> NSRegularExpression {
        // The patterns are constants: a bad one is a programming error caught by the tests.
        try! NSRegularExpression(pattern: pattern, options: [.caseInsensitive])
    }

    static let covid = regex(#"\bc[o0]v[i1l|]d(?:[\s\-–]*[1l]9)?\b|\bsars[\s\-–]*c[o0]v[\s\-–]*2\b|\bcoronavirus\b"#)
    static let testKind = regex(
        #"\b(?:rt[\s\-–]*pcr|pcr|naat|antigen|lateral[\s\-–]*flow|rapid|lamp|lft|molecular)\b"#
    )
    static let negative = regex(
        #"\bnot[\s\-–]+detected\b|\bundetected\b|\bnegative\b|\bnon[\s\-–]*reactive\b|\bnot[\s\-–]+positive\b"#
    )
    static let inconclusive = regex(
        #"\binconclusive\b|\binvalid\b|\bindeterminate\b|\bequivocal\b|\brepeat\b|\bre[\s\-–]*test\b|\bvoid\b|\bunclear\b"#
    )
    static let positive = regex(#"\bpositive\b|\bdetected\b|\breactive\b"#)
    /// A statement that is about the result of this test.
    static let resultCue = regex(#"\bresults?\b|\boutcome\b|\btested\b|\btest\b|\brna\b|\bantigen\b|\bpcr\b"#)
    /// Statements that mention results without being one: they never decide.
    static let context = regex(
        #"\breference\b|\bcontrol\b|\branges?\b|\brule[sd]?\s+out\b|\bdoes\s+not\b|\bdo\s+not\b|\bif\s+(?:you|your|the)\b|\ba\s+(?:positive|negative)\s+(?:result|test)\b|\bmeans?\b|\bindicates?\b|\bpredictive\b|\bfalse\b|\bmay\b|\bshould\b|\binterpret|\bsensitivity\b|\bspecificity\b|\blimit\s+of\b|\bcut[\s\-]*off\b|\bexpected\b|\bnormal\b"#
    )
}

/// A line, or a sentence across wrapped lines, with its words' places in its text.
struct Statement {
    var words: [OCRWord]
    var text: String
    /// UTF-16 ranges of each word in `text`.
    var ranges: [NSRange]
    /// The page's line it begins on, from 0.
    var line: Int

    init(_ words: [OCRWord], line: Int = 0) {
        self.words = words
        self.line = line
        var text = ""
        var ranges: [NSRange] = []
        for w in words {
            if !text.isEmpty { text += " " }
            let start = text.utf16.count
            text += w.text
            ranges.append(NSRange(location: start, length: w.text.utf16.count))
        }
        self.text = text
        self.ranges = ranges
    }

    struct Match {
        var text: String
        var confidence: Double
        var context: String
        /// The page's line its statement begins on.
        var line = 0

        var evidence: VerificationRule.Evidence {
            VerificationRule.Evidence(text: text, confidence: confidence, context: context)
        }
    }

    /// The first match of `pattern`, with the lowest confidence of the words it touches.
    func first(_ pattern: NSRegularExpression) -> Match? {
        let ns = text as NSString
        guard let m = pattern.firstMatch(in: text, range: NSRange(location: 0, length: ns.length)) else { return nil }
        let touched = zip(words, ranges).filter { NSIntersectionRange($0.1, m.range).length > 0 }
        return Match(
            text: ns.substring(with: m.range),
            confidence: touched.map(\.0.confidence).min() ?? 0,
            context: text,
            line: line
        )
    }

    func matches(_ pattern: NSRegularExpression) -> Bool {
        pattern.firstMatch(in: text, range: NSRange(location: 0, length: (text as NSString).length)) != nil
    }

    /// About this test's result, and not a reference range, control or disclaimer.
    var isResultStatement: Bool {
        !matches(Patterns.context) && (matches(Patterns.resultCue) || matches(Patterns.covid))
    }

    /// Lines joined where a sentence wraps (the next line goes on in lower case), then split
    /// into sentences.
    static func split(_ page: OCRPage) -> [Statement] {
        var joined: [(words: [OCRWord], line: Int)] = []
        for (n, line) in page.lines.enumerated() {
            if let last = joined.last?.words.last, let next = line.first,
                !(last.text.last.map { ".:!?".contains($0) } ?? true),
                next.text.first?.isLowercase == true
            {
                joined[joined.count - 1].words += line
            } else {
                joined.append((line, n))
            }
        }
        var out: [Statement] = []
        for (words, line) in joined {
            var sentence: [OCRWord] = []
            for (i, w) in words.enumerated() {
                sentence.append(w)
                let ends = w.text.hasSuffix(".") || w.text.hasSuffix("!") || w.text.hasSuffix("?")
                let nextStartsUpper = i + 1 < words.count && words[i + 1].text.first?.isUppercase == true
                if ends && nextStartsUpper {
                    out.append(Statement(sentence, line: line))
                    sentence = []
                }
            }
            if !sentence.isEmpty { out.append(Statement(sentence, line: line)) }
        }
        return out
    }
}

extension RuleMessage {
    /// "collected 2026-11-24 09:40, 2 days ago" (or "dated …" when the page does not say the
    /// date is the sample's), the day said relatively in the person's language.
    public static func collected(_ text: String, days: Int, labelled: Bool) -> RuleMessage {
        let ago = days == 0 ? "ago.today" : days == 1 ? "ago.yesterday" : days < 0 ? "ago.tomorrow" : "ago.days"
        return RuleMessage(
            labelled ? "date.collected" : "date.dated",
            ["text": text, "days": "\(days)"],
            terms: ["ago": [ago]]
        )
    }
}

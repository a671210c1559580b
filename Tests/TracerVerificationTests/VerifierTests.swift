import Foundation
import Testing

@testable import TracerVerification

/// The policy on pages given as text (OCR's part is tested on rendered images elsewhere).
@Suite struct VerifierTests {
    static let utc = TimeZone(identifier: "UTC")!
    /// 2026-11-22 12:00 UTC.
    static let now = Date(timeIntervalSince1970: 1_795_348_800)

    func verify(_ text: String, confidence: Double = 95) -> Verification {
        Verifier.verify(.text(text, confidence: confidence), now: Self.now, timeZone: Self.utc)
    }

    func failed(_ v: Verification) -> [String] { v.failed.map(\.name) }

    static let labPositive = """
        Northfield Clinical Laboratory
        SARS-CoV-2 RT-PCR
        Name: A. Sample
        Date of birth: 1990-04-12
        Collected: 2026-11-20 09:40
        Reported: 2026-11-21
        SARS-CoV-2 RNA DETECTED
        Result: POSITIVE
        Reference range: Not Detected
        Internal positive control: passed
        A negative result does not rule out infection.
        """

    @Test func acceptsALabReportAndSaysWhy() throws {
        let v = verify(Self.labPositive)
        #expect(v.accepted, "\(v.failed)")
        #expect(v.rules.map(\.name) == ["covid", "testKind", "result", "date", "confidence"])
        let result = try #require(v.rules.first { $0.name == "result" })
        #expect(result.evidence.map(\.text) == ["DETECTED", "POSITIVE"])
        #expect(v.collectedAt == ISO8601DateFormatter().date(from: "2026-11-20T09:40:00Z"))
        let date = try #require(v.rules.first { $0.name == "date" })
        #expect(date.detail == "collected 2026-11-20 09:40, 2 days ago")
    }

    @Test func negativesNeverPassWhateverTheDisclaimersSay() {
        let v = verify(
            """
            COVID-19 PCR test report
            Sample collected: 21/11/2026
            SARS-CoV-2 PCR: Not Detected
            Result: NEGATIVE
            Positive control: passed
            A positive result indicates infection.
            If you have symptoms and a positive lateral flow, book a PCR.
            Positive predictive value depends on prevalence.
            """
        )
        #expect(!v.accepted)
        #expect(failed(v) == ["result"])
        #expect(v.rules.first { $0.name == "result" }?.detail.contains("negative") == true)
    }

    @Test(arguments: [
        ("Result: INCONCLUSIVE - please repeat the test", "inconclusive"),
        ("Result: Invalid", "inconclusive"),
        ("Result: not detected", "negative"),
        ("Test result: Non-reactive", "negative"),
    ])
    func otherOutcomesReject(_ line: String, _ outcome: String) {
        let v = verify("COVID-19 rapid antigen test\nSample collected: 2026-11-21\n\(line)")
        #expect(failed(v) == ["result"])
        #expect(v.rules.first { $0.name == "result" }?.detail.contains(outcome) == true)
    }

    @Test func contradictoryStatementsReject() {
        let v = verify("SARS-CoV-2 PCR\nCollected: 2026-11-21\nSARS-CoV-2 RNA DETECTED\nResult: NEGATIVE")
        #expect(failed(v) == ["result"])
        #expect(v.rules.first { $0.name == "result" }?.detail.contains("contradict") == true)
    }

    @Test func anSMSSentenceWrappedOverLines() {
        let v = verify(
            """
            NHS Test and Trace: Your coronavirus (COVID-19) PCR
            test taken on 20 Nov 2026 is
            positive. You must self-isolate.
            """
        )
        #expect(v.accepted, "\(v.failed)")
        #expect(v.collectedAt == ISO8601DateFormatter().date(from: "2026-11-20T00:00:00Z"))
    }

    @Test(arguments: [
        ("2026-11-20", "2026-11-20T00:00:00Z"), ("20/11/2026", "2026-11-20T00:00:00Z"),
        ("11/20/2026", "2026-11-20T00:00:00Z"), ("20.11.2026 14:05", "2026-11-20T14:05:00Z"),
        ("20 Nov 2026", "2026-11-20T00:00:00Z"), ("November 20, 2026", "2026-11-20T00:00:00Z"),
        ("20th November 2026 at 9:15", "2026-11-20T09:15:00Z"), ("Nov 8, 2026", "2026-11-08T00:00:00Z"),
    ])
    func readsDateFormats(_ written: String, _ iso: String) {
        let v = verify("COVID-19 antigen test\nSample collected: \(written)\nResult: Positive")
        #expect(v.collectedAt == ISO8601DateFormatter().date(from: iso), "\(written)")
    }

    /// Today is 2026-11-22: 11-08 is 14 days ago (the last accepted), 11-23 tomorrow (the
    /// last accepted ahead); the time of day does not move a date across the boundary.
    @Test(arguments: [
        ("2026-11-08", true), ("2026-11-08 00:01", true), ("2026-11-07 23:59", false), ("2026-11-07", false),
        ("2026-11-23", true), ("2026-11-24", false), ("2026-10-22", false),
    ])
    func theFourteenDayWindow(_ day: String, _ ok: Bool) {
        let v = verify("COVID-19 antigen test\nSample collected: \(day)\nResult: Positive")
        #expect(v.accepted == ok, "\(day): \(v.failed.map(\.detail))")
        #expect(failed(v) == (ok ? [] : ["date"]))
    }

    @Test func birthAndReportDatesAreNotCollectionDates() {
        let v = verify("SARS-CoV-2 PCR\nDate of birth: 2026-11-20\nReported: 2026-11-21\nResult: POSITIVE")
        #expect(failed(v) == ["date"])
        #expect(v.collectedAt == nil)
    }

    @Test func oneUnlabelledDateIsUsedTwoAreNot() {
        let one = verify("COVID-19 antigen test certificate\n21 Nov 2026\nTest result: Positive")
        #expect(one.accepted)
        #expect(one.rules.first { $0.name == "date" }?.detail.hasPrefix("dated (no collection label)") == true)
        let two = verify("COVID-19 antigen test certificate\n21 Nov 2026\n19 Nov 2026\nTest result: Positive")
        #expect(failed(two) == ["date"])
    }

    @Test func unrelatedPagesFailEveryRuleTheyShould() {
        let v = verify("Northern Power invoice\nInvoice date: 2026-11-20\nYour account has a positive balance.")
        #expect(failed(v) == ["covid", "testKind", "result", "date", "confidence"])
        let flu = verify("Influenza A/B rapid antigen test\nSample collected: 2026-11-21\nResult: Positive")
        #expect(failed(flu) == ["covid"])
    }

    @Test func lowConfidenceDecidingWordsReject() {
        var page = OCRPage.text(Self.labPositive)
        for i in page.words.indices where page.words[i].text == "POSITIVE" { page.words[i].confidence = 41 }
        let v = Verifier.verify(page, now: Self.now, timeZone: Self.utc)
        #expect(failed(v) == ["confidence"])
        #expect(v.rules.last?.detail.contains("\"POSITIVE\" 41%") == true)
    }

    @Test func aDateWithDoubtfulDigitsIsReportedAsDoubtful() {
        var page = OCRPage.text(Self.labPositive)
        for i in page.words.indices where page.words[i].text == "2026-11-20" { page.words[i].confidence = 38 }
        let v = Verifier.verify(page, now: Self.now, timeZone: Self.utc)
        #expect(failed(v) == ["date"])
        #expect(v.rules.first { $0.name == "date" }?.detail.contains("doubtful") == true)
    }

    @Test func OCRConfusionsInTheDiseaseName() {
        let v = verify("C0VID-l9 antigen test\nSample collected: 2026-11-21\nResult: Positive")
        #expect(v.accepted, "\(v.failed)")
    }
}

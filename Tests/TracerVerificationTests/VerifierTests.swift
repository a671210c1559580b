import Foundation
import Testing

@testable import TracerVerification

/// The policy on pages given as text (OCR's part is tested on rendered images elsewhere).
@Suite struct VerifierTests {
    static let utc = TimeZone(identifier: "UTC")!
    /// 2026-11-22 12:00 UTC.
    static let now = Date(timeIntervalSince1970: 1_795_348_800)

    func verify(_ text: String, confidence: Double = 95) -> Verification {
        let v = Verifier.verify(.text(text, confidence: confidence), now: Self.now, timeZone: Self.utc)
        RuleTextTests.check(v)
        return v
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

    /// A picture that is why nothing could be read is refused saying so, for the person to take
    /// it again; the same picture is not blamed where the words were read and decided.
    @Test func aPictureNobodyCouldReadIsRefusedSayingWhy() throws {
        func verify(_ text: String, _ quality: ImageQuality) -> Verification {
            var page = OCRPage.text(text, confidence: 40)
            page.quality = quality
            let v = Verifier.verify(page, now: Self.now, timeZone: Self.utc)
            RuleTextTests.check(v)
            return v
        }
        let blurred = ImageQuality(edgeWidth: 12.8, noise: 0.2, contrast: 141)
        let smear = verify("Northfield Chin al Laboratory\nSARS Cow 2 AT PCR\nReet FOUTIWE", blurred)
        #expect(smear.decision == .rejected)
        let image = try #require(smear.rules.first)
        #expect(smear.reasons == [image])
        #expect(image.name == "image" && !image.passed && !image.doubtful)
        #expect(image.detail.hasPrefix("the picture is blurred: take it again in focus"), "\(image.detail)")
        let all = ImageQuality(edgeWidth: 9, noise: 30, contrast: 20)
        #expect(
            verify("nothing here", all).rules.first?.detail.hasPrefix(
                "the picture is blurred and grainy and too dark or faint"
            ) == true
        )

        // Read and decided: a negative, or a doubtful positive, is not put down to the picture.
        let negative = verify("SARS-CoV-2 PCR\nCollected: 2026-11-20\nResult: NEGATIVE", blurred)
        #expect(negative.decision == .rejected && !negative.rules.map(\.name).contains("image"))
        let doubtful = verify(Self.labPositive, blurred)
        #expect(doubtful.decision == .doubtful && !doubtful.rules.map(\.name).contains("image"))
        // A sharp picture nobody could read is not blamed either.
        let sharp = ImageQuality(edgeWidth: 1.3, noise: 0.5, contrast: 200)
        #expect(!verify("Northern Power invoice", sharp).rules.map(\.name).contains("image"))
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

    // MARK: What a person should decide (issue 17: the health team's review)

    @Test func lowConfidenceInWordsFoundIsDoubtfulNotRejected() {
        var page = OCRPage.text(Self.labPositive)
        for i in page.words.indices where page.words[i].text == "POSITIVE" { page.words[i].confidence = 41 }
        let v = Verifier.verify(page, now: Self.now, timeZone: Self.utc)
        #expect(v.decision == .doubtful)
        #expect(v.doubts == [v.rules.last.map { "confidence: \($0.detail)" } ?? ""])
        // Doubtful digits of a date that would pass are doubtful too; of an old date, not.
        var dated = OCRPage.text(Self.labPositive)
        for i in dated.words.indices where dated.words[i].text == "2026-11-20" { dated.words[i].confidence = 38 }
        #expect(Verifier.verify(dated, now: Self.now, timeZone: Self.utc).decision == .doubtful)
        let old = Verifier.verify(dated, now: Self.now.addingTimeInterval(30 * 86_400), timeZone: Self.utc)
        #expect(old.decision == .rejected, "\(old.failed)")
    }

    @Test func certainFailuresRejectWhateverElseIsDoubtful() {
        // A negative read with low confidence: the result rule fails for certain.
        let negative = verify(
            "SARS-CoV-2 RT-PCR\nCollected: 2026-11-21\nResult: NEGATIVE",
            confidence: 40
        )
        #expect(negative.decision == .rejected)
        #expect(negative.failed.first { $0.name == "result" }?.doubtful == false)
        // Nothing decisive read at all is not a person's to guess.
        let nothing = verify("Brightwater Energy invoice\nInvoice date: 2026-11-20", confidence: 40)
        #expect(nothing.decision == .rejected)
        #expect(nothing.failed.allSatisfy { !$0.doubtful })
        #expect(verify(Self.labPositive).decision == .accepted)
    }

    @Test func collectionDatesThatDisagreeAreDoubtful() throws {
        let v = verify(
            """
            SARS-CoV-2 RT-PCR
            Collected: 2026-11-20 09:40
            Sample date: 17 Nov 2026
            Result: POSITIVE
            """
        )
        #expect(v.decision == .doubtful, "\(v.failed)")
        let date = try #require(v.rules.first { $0.name == "date" })
        #expect(date.doubtful)
        #expect(date.detail == "the page gives two collection dates, \"2026-11-20 09:40\" and \"17 Nov 2026\"")
        #expect(date.evidence.map(\.text) == ["2026-11-20 09:40", "17 Nov 2026"])
        // The same day twice agrees; a received or reported date is not a second collection date.
        #expect(
            verify("SARS-CoV-2 RT-PCR\nCollected: 2026-11-20 09:40\nSample date: 20 Nov 2026\nResult: POSITIVE")
                .accepted
        )
        #expect(
            verify("SARS-CoV-2 RT-PCR\nCollected: 2026-11-20\nSample received: 2026-11-21\nResult: POSITIVE").accepted
        )
    }

    @Test func aResultFarFromTheTestsNameIsDoubtful() throws {
        let filler = (1...12).map { "Line \($0) of the patient leaflet" }.joined(separator: "\n")
        let far = verify("SARS-CoV-2 RT-PCR\nCollected: 2026-11-20\n\(filler)\nResult: POSITIVE")
        #expect(far.decision == .doubtful, "\(far.failed)")
        let result = try #require(far.rules.first { $0.name == "result" })
        #expect(result.doubtful && result.detail.contains("14 lines from the test's name (line 1)"), "\(result.detail)")
        // Eleven lines apart is near enough; a statement naming the virus is near itself.
        let near = (1...9).map { "Line \($0)" }.joined(separator: "\n")
        #expect(verify("SARS-CoV-2 RT-PCR\nCollected: 2026-11-20\n\(near)\nResult: POSITIVE").accepted)
        #expect(verify("Collected: 2026-11-20\nPCR\n\(filler)\nSARS-CoV-2 RNA DETECTED").accepted)
    }
}

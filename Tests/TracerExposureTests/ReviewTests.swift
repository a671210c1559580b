import Foundation
import Testing
import TracerAPI
import TracerColocation
import TracerModel
@_spi(Blocking) import TracerStore
import TracerTesting

@testable import TracerExposure
@testable import TracerReports
@testable import TracerVerification

/// The health team's review on the store (either backend), with the real exposure engine: what
/// waits, what a decision writes and flags, who is told, and where the image is and for how long.
@Suite struct ReviewTests {
    /// 2026-11-20 10:00 UTC.
    static let t0 = 1_795_168_800.0

    /// A store where `reporter` and `near` shared kiosk-lab for ten minutes, 1 m from it each,
    /// and `far` was at kiosk-hall.
    final class Site {
        let store: DocumentStore
        let dir: TemporaryDirectory
        let images: ReviewImages

        init() throws {
            (store, dir) = try DocumentStore.temporary()
            images = ReviewImages(directory: dir.file("review"))
            var n = 0
            for (device, anchor) in [("reporter", "kiosk-lab"), ("near", "kiosk-lab"), ("far", "kiosk-hall")] {
                n += 1
                try store.set(
                    DocumentPath("beacons/\(anchor)/interactions/i\(n)"),
                    [
                        "deviceId": .string(device), "anchor": .string(anchor),
                        "start": .timestamp(Timestamp(seconds: ReviewTests.t0)),
                        "end": .timestamp(Timestamp(seconds: ReviewTests.t0 + 600)),
                        "distance": .double(1), "testResult": false,
                    ]
                )
            }
        }

        /// A desk on the site's store; `images` another server's directory (default: this one's).
        func desk(_ review: Review, images: ReviewImages? = nil) -> StoreDesk {
            var policy = VerificationPolicy()
            policy.review = review
            var exposure = ExposurePolicy()
            exposure.separation = .sum
            return StoreDesk(
                store: store,
                flagging: ExposureEngine(policy: exposure),
                policy: policy,
                images: images ?? self.images
            )
        }

        /// The reporter's doubtful page (image "aa") submitted: the report it is held as.
        func hold(_ desk: StoreDesk) throws -> RecordedReport {
            let outcome = try desk.submit(
                ReviewTests.verification(confidence: 55),
                imageSHA256: "aa",
                image: ReviewTests.image,
                device: "reporter"
            )
            guard case .held(let held, _) = outcome else { throw HoldError(outcome: "\(outcome)") }
            return held
        }

        struct HoldError: Error { var outcome: String }

        func status(_ device: String) throws -> DocumentSnapshot { try store.get(DocumentPath("devices/\(device)")) }
        func report(_ id: String) throws -> DocumentSnapshot { try store.get(DocumentPath("reports/\(id)")) }
    }

    /// A page read with the given confidence, collected on t0's day (2026-11-20), verified a day later.
    static func verification(confidence: Double) -> Verification {
        Verifier.verify(
            .text("SARS-CoV-2 RT-PCR\nCollected: 2026-11-20\nResult: POSITIVE", confidence: confidence),
            now: Date(timeIntervalSince1970: t0 + 86_400),
            timeZone: TimeZone(identifier: "UTC")!
        )
    }

    static let image = Data("a photographed result".utf8)

    @Test func aDoubtfulReportWaitsWithItsImageAndFlagsNobody() throws {
        let site = try Site()
        let v = Self.verification(confidence: 55)
        #expect(v.decision == .doubtful, "\(v.failed)")
        let held = try site.hold(site.desk(.doubtful))
        #expect(held.created && held.status == .pending)
        #expect(try site.report(held.id)["status"] == "pending")
        #expect(try site.report(held.id)["doubts"] == .array(v.doubts.map(Value.string)))
        // Nothing flagged, the reporter not positive, and their device says the report waits.
        #expect(try site.status("reporter")["status"] == nil)
        #expect(try site.status("reporter")["report.status"] == "pending")
        #expect(try site.status("near").exists == false)
        #expect(try site.store.getDocuments(Query(collectionGroup: "exposures")).isEmpty)

        // The image: readable by this user only, in a directory of its own, never in the store.
        let file = try site.images.file(held.id)
        let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let dirMode = try FileManager.default.attributesOfItem(atPath: site.images.directory)[.posixPermissions] as? Int
        #expect(dirMode == 0o700)
        #expect(try site.images.image(held.id) == Self.image)
        #expect(try site.desk(.doubtful).reports().map(\.id) == [held.id])

        // The same image again is the same report, still waiting.
        let again = try site.hold(site.desk(.doubtful))
        #expect(!again.created && again.id == held.id)
    }

    @Test func approvalFlagsDeletesTheImageAndIsAudited() throws {
        let site = try Site()
        let desk = site.desk(.doubtful)
        let held = try site.hold(desk)
        let decided = try desk.decide(
            held.id,
            approve: true,
            by: .init(name: "Dr. Review", tokenID: "tok1"),
            note: "read the date myself"
        )
        #expect(decided.flagged)
        #expect(decided.line.contains("1 device flagged"), "\(decided.line)")
        let report = try site.report(held.id)
        #expect(report["status"] == "accepted")
        #expect(report["decidedBy"] == "Dr. Review")
        #expect(report["decidedAt"]?.timestampValue != nil)
        #expect(report["note"] == "read the date myself")
        #expect(try site.status("reporter")["status"] == "positive")
        #expect(try site.status("near")["status"] == "exposed")
        #expect(try site.status("far").exists == false)
        #expect(try site.images.image(held.id) == nil)
        #expect(!FileManager.default.fileExists(atPath: try site.images.file(held.id)))
        let audit = try site.store.getDocuments(Query(collection: Collections.audit))
        #expect(audit.count == 1)
        #expect(audit.first?["method"] == "APPROVE")
        #expect(audit.first?["path"] == .string("reports/\(held.id)"))
        #expect(audit.first?["tokenName"] == "Dr. Review")
        #expect(audit.first?["tokenId"] == "tok1")
        #expect(try desk.reports().isEmpty)

        // Decided once: a second decision is refused and changes nothing.
        #expect(throws: ReviewError.self) {
            try desk.decide(held.id, approve: false, by: .init(name: "Someone else", tokenID: "tok2"))
        }
        #expect(try site.report(held.id)["status"] == "accepted")
        #expect(try site.store.getDocuments(Query(collection: Collections.audit)).count == 1)
    }

    @Test func denialTellsTheReporterAndFlagsNobody() throws {
        let site = try Site()
        let desk = site.desk(.doubtful)
        let held = try site.hold(desk)
        let decided = try desk.decide(
            held.id,
            approve: false,
            by: .init(name: "Dr. Review", tokenID: "tok1"),
            note: "not a test result"
        )
        #expect(decided.report.status == .denied)
        #expect(try site.report(held.id)["status"] == "denied")
        #expect(
            try site.status("reporter")["report"]
                == .map(["id": .string(held.id), "status": "denied", "note": "not a test result"])
        )
        #expect(try site.status("reporter")["status"] == nil)
        #expect(try site.status("near").exists == false)
        #expect(try site.images.image(held.id) == nil)
        #expect(try site.store.getDocuments(Query(collection: Collections.audit)).first?["method"] == "DENY")
        // The same image again is not recorded again.
        guard
            case .decidedBefore(let before, _) = try desk.submit(
                Self.verification(confidence: 55),
                imageSHA256: "aa",
                image: Self.image,
                device: "reporter"
            )
        else {
            Issue.record("a denied image was taken again")
            return
        }
        #expect(before.status == .denied && !before.created)
        #expect(throws: ReviewError.self) {
            try desk.decide("0123456789abcdef0123", approve: true, by: .init(name: "x", tokenID: "-"))
        }
    }

    @Test func theSiteSettingDecidesWhatWaits() throws {
        let site = try Site()
        let doubtful = Self.verification(confidence: 55)
        let sure = Self.verification(confidence: 95)
        #expect(sure.decision == .accepted)
        // none: what the rules doubt is rejected, as before there was a review.
        guard
            case .rejected = try site.desk(.none).submit(
                doubtful,
                imageSHA256: "a1",
                image: Self.image,
                device: "reporter"
            )
        else {
            Issue.record("review none held a doubtful report")
            return
        }
        #expect(try site.store.getDocuments(Query(collection: Collections.reports)).isEmpty)
        // all: even a sure report waits.
        guard
            case .held(let held, _) = try site.desk(.all).submit(
                sure,
                imageSHA256: "a2",
                image: Self.image,
                device: "reporter"
            )
        else {
            Issue.record("review all did not hold a sure report")
            return
        }
        #expect(try site.report(held.id)["doubts"] == nil)
        #expect(try site.status("near").exists == false)
        // doubtful: a sure report is accepted and flagged at once.
        guard
            case .recorded(let accepted, _, _, let flagged) = try site.desk(.doubtful).submit(
                sure,
                imageSHA256: "a3",
                image: Self.image,
                device: "reporter"
            )
        else {
            Issue.record("a sure report was not accepted")
            return
        }
        #expect(flagged && accepted.status == .accepted)
        #expect(try site.status("near")["status"] == "exposed")
        // Only held reports keep their image.
        #expect(try FileManager.default.contentsOfDirectory(atPath: site.images.directory) == [held.id])
        // A rejected page is rejected under every setting.
        let negative = Verifier.verify(
            .text("SARS-CoV-2 RT-PCR\nCollected: 2026-11-20\nResult: NEGATIVE", confidence: 55),
            now: Date(timeIntervalSince1970: Self.t0 + 86_400)
        )
        for review in Review.allCases { #expect(site.desk(review).disposition(negative) == nil) }
    }

    /// The image is kept before the report is recorded: where it cannot be kept, nothing is
    /// recorded (the health team never sees a held report without its page).
    @Test func aReportWhoseImageCannotBeKeptIsNotRecorded() throws {
        let site = try Site()
        // A file where the review directory should be.
        _ = FileManager.default.createFile(atPath: site.images.directory, contents: Data("in the way".utf8))
        #expect(throws: (any Error).self) {
            try site.desk(.doubtful).submit(
                Self.verification(confidence: 55),
                imageSHA256: "aa",
                image: Self.image,
                device: "reporter"
            )
        }
        #expect(try site.store.getDocuments(Query(collection: Collections.reports)).isEmpty)
        #expect(try site.status("reporter").exists == false)
    }

    /// Several servers on one store each keep the images they received. A decision on another
    /// server deletes this one's copy at its next sweep (`tracer serve` sweeps every 30 s); an
    /// image whose report was never recorded goes after an hour, not while it may be on its way in.
    @Test func anImageGoesWhereverItsReportIsDecided() throws {
        let site = try Site()
        let received = site.desk(.doubtful)
        let other = site.desk(.doubtful, images: ReviewImages(directory: site.dir.file("review-b")))
        let held = try site.hold(received)
        #expect(site.images.has(held.id))
        #expect(received.sweepImages() == 0, "a pending report keeps its image")
        #expect(other.images?.has(held.id) == false, "the other server has no copy")

        _ = try other.decide(held.id, approve: false, by: .init(name: "Dr Other", tokenID: "tok-b"))
        #expect(site.images.has(held.id), "the deciding server deletes its own copy only")
        #expect(received.sweepImages() == 1)
        #expect(!site.images.has(held.id))
        #expect(try FileManager.default.contentsOfDirectory(atPath: site.images.directory).isEmpty)

        // An image with no report: on its way in for a moment, an orphan after an hour.
        try site.images.keep(Self.image, for: "0123456789abcdef0123")
        #expect(received.sweepImages() == 0)
        #expect(received.sweepImages(now: Date().addingTimeInterval(3601)) == 1)
        #expect(!site.images.has("0123456789abcdef0123"))
    }

    @Test func imagesGoAfterSeventyTwoHoursWhetherDecidedOrNot() throws {
        let site = try Site()
        let images = site.images
        try images.keep(Self.image, for: "0123456789abcdef0123")
        let now = Date()
        #expect(images.purge(now: now.addingTimeInterval(71 * 3600)) == 0)
        #expect(try images.image("0123456789abcdef0123", now: now.addingTimeInterval(71 * 3600)) == Self.image)
        // Past 72 hours it is not served, even before the purge runs.
        #expect(try images.image("0123456789abcdef0123", now: now.addingTimeInterval(72 * 3600 + 1)) == nil)
        try images.keep(Self.image, for: "abcdef0123456789abcd")
        #expect(images.purge(now: now.addingTimeInterval(72 * 3600 + 1)) == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: images.directory).isEmpty)
        // A report id is never a path.
        #expect(throws: ReviewError.self) { try images.keep(Self.image, for: "../escape") }
    }

    /// Flagging that fails (the store gone for a moment: a stand-in here, as no store a test
    /// can hold fails on cue) leaves the report recorded and says so where the reporter and the
    /// health team look, until a flagging succeeds.
    struct FailingFlagger: ExposureFlagging {
        func reportAccepted(_ report: RecordedReport, in db: StoreWriter) throws -> String {
            throw StoreError(.sqlite, "database is locked")
        }
    }

    @Test func aFailedFlaggingShowsWhereTheReporterAndTheHealthTeamLookUntilItSucceeds() throws {
        let site = try Site()
        let desk = StoreDesk(store: site.store, flagging: FailingFlagger(), policy: VerificationPolicy())
        let outcome = try desk.submit(
            Self.verification(confidence: 95),
            imageSHA256: "bb",
            image: Self.image,
            device: "reporter"
        )
        guard case .recorded(let report, _, let line, let flagged) = outcome else {
            Issue.record("not recorded: \(outcome)")
            return
        }
        #expect(!flagged && line.contains("flagging failed"), "\(line)")
        #expect(try site.report(report.id)["flaggingFailed"]?.stringValue?.contains("database is locked") == true)
        #expect(try site.status("reporter")["report.flagging"] == "failed")
        let shown = Components.Schemas.DeviceStatus("reporter", document: try site.status("reporter"), exposures: [])
        #expect(shown.report?.flagging == .failed && shown.status == .positive)
        let listed = try desk.reviewList(.accepted, unflaggedOnly: true)
        #expect(listed.map(\.report.id) == [report.id], "\(listed)")

        // Flagged at last: the near one is told, and neither place says it failed any more.
        var exposure = ExposurePolicy()
        exposure.separation = .sum
        let r = try site.store.write { db in try ExposureEngine(policy: exposure).flag(reportID: report.id, in: db) }
        #expect(r.exposedDevices == ["near"])
        #expect(try site.report(report.id)["flaggingFailed"] == nil)
        #expect(try site.status("reporter")["report.flagging"] == nil)
        #expect(try site.status("reporter")["report.status"] == "accepted")
        #expect(try desk.reviewList(.accepted, unflaggedOnly: true).isEmpty)
    }
}

/// A review desk on one store, each call as the command line makes it (the desk itself takes
/// the store's handle).
struct StoreDesk {
    let store: DocumentStore
    var desk: SelfReportDesk

    init(
        store: DocumentStore,
        flagging: any ExposureFlagging,
        policy: VerificationPolicy,
        images: ReviewImages? = nil
    ) {
        self.store = store
        desk = SelfReportDesk(flagging: flagging, policy: policy, images: images)
    }

    func disposition(_ verification: Verification) -> Report.Status? { desk.disposition(verification) }

    func submit(
        _ verification: Verification,
        imageSHA256: String,
        image: Data? = nil,
        device: String,
        answers: [String: Bool] = [:]
    ) throws -> SelfReportDesk.Outcome {
        try store.write { db in
            try desk.submit(
                verification,
                imageSHA256: imageSHA256,
                image: image,
                device: device,
                answers: answers,
                in: db
            )
        }
    }

    func decide(
        _ id: String,
        approve: Bool,
        by reviewer: SelfReportDesk.Reviewer,
        note: String? = nil
    ) throws -> SelfReportDesk.Decided {
        try store.write { db in try desk.decide(id, approve: approve, by: reviewer, note: note, in: db) }
    }

    var images: ReviewImages? { desk.images }

    func sweepImages(now: Date = Date()) -> Int { store.read { db in desk.sweepImages(now: now, in: db) } }

    func reports(_ status: Report.Status? = .pending) throws -> [Report] {
        try store.read { db in try desk.reports(status, in: db) }
    }

    func reviewList(
        _ status: Report.Status? = .pending,
        unflaggedOnly: Bool = false
    ) throws -> [(report: Report, image: Bool)] {
        try store.read { db in try desk.reviewList(status, unflaggedOnly: unflaggedOnly, in: db) }
    }
}

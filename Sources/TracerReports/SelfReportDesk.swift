import Foundation
import TracerCertificate
import TracerModel
import TracerSite
import TracerStore
import TracerVerification

/// The one self-report path, for `tracer self-report` and `POST /v1/reports` alike: decide on
/// the page under the site's policy, find the reporter, record the report, flag exposures. The
/// command and the API read the image their own way and only render the outcome.
public struct SelfReportDesk: Sendable {
    public let flagging: any ExposureFlagging
    public let policy: VerificationPolicy
    /// Where the images of reports held for review are kept until they are decided; nil: not
    /// kept (the health team decides on the evidence alone).
    public let images: ReviewImages?
    /// The issuers whose signed certificates the site accepts (nil: none; a signed certificate
    /// is then refused as from an unknown issuer).
    public let trustList: TrustList?
    /// How long a denied report holds the device's next reports (the site's retention).
    public var retention: Double = Retention.defaultSeconds

    public init(
        flagging: any ExposureFlagging,
        policy: VerificationPolicy,
        trustList: TrustList? = nil,
        images: ReviewImages? = nil
    ) {
        self.flagging = flagging
        self.policy = policy
        self.trustList = trustList
        self.images = images
    }

    /// What became of a report.
    public enum Outcome: Sendable {
        /// Verification failed: nothing was recorded.
        case rejected(Verification)
        /// Recorded (or already recorded: `report.created` is false), with the flagging's line for
        /// the reporter; `flagged` is false when flagging failed (the line says how to retry).
        case recorded(RecordedReport, Verification, flagging: String, flagged: Bool)
        /// Recorded as pending: the health team decides; nothing is flagged until then.
        case held(RecordedReport, Verification)
        /// The same image from the same device was reported before and denied (or revoked).
        case decidedBefore(RecordedReport, Verification)
    }

    /// What the site's policy does with a verification: reject it, hold it for review, or accept it.
    public func disposition(_ verification: Verification) -> Report.Status? {
        Self.disposition(verification, review: policy.review)
    }

    /// The same under a review setting: nil (rejected), `pending` or `accepted`.
    public static func disposition(_ verification: Verification, review: Review) -> Report.Status? {
        switch (verification.decision, review) {
        case (.rejected, _), (.doubtful, .none): nil
        case (.doubtful, _), (.accepted, .all): .pending
        case (.accepted, _): .accepted
        }
    }

    /// A device whose report was denied at review has its next reports held for the health team
    /// (a person whose photo was refused by a person must not pass with the next one unseen): the
    /// verification gains a failed, doubtful rule `history` saying so, once. A page rejected
    /// anyway stays rejected.
    public func withHistory(_ verification: Verification, device: String, in db: some StoreReads) throws -> Verification
    {
        guard verification.decision != .rejected, !verification.rules.contains(where: { $0.name == "history" })
        else { return verification }
        // For the site's retention: after it, the denial is forgotten like everything else.
        let since = Date().timeIntervalSince1970 - retention
        let denied = try db.getDocuments(Report.of(device: device)).filter {
            Report.is($0, .denied) && ((try? Report($0))?.createdAt.map { $0.seconds >= since } ?? true)
        }
        guard let report = denied.first else { return verification }
        var held = verification
        held.rules.append(
            VerificationRule(
                name: "history",
                passed: false,
                RuleMessage("history.denied", ["report": report.id]),
                evidence: [],
                doubtful: true
            )
        )
        held.accepted = false
        return held
    }

    /// The decision on a page, at `now`.
    public func verify(_ page: OCRPage, now: Date = Date()) -> Verification {
        Self.verify(page, policy: policy, trustList: trustList, now: now)
    }

    /// The decision on a page: a signed health certificate's QR code decides when the page has
    /// one (its signature, its issuer, its test), else the rules over the words OCR read.
    public static func verify(
        _ page: OCRPage,
        policy: VerificationPolicy,
        trustList: TrustList?,
        now: Date,
        timeZone: TimeZone = .current
    ) -> Verification {
        if let certificate = page.healthCertificate {
            return CertificateVerifier.verify(
                certificate,
                trustList: trustList,
                policy: policy,
                now: now,
                timeZone: timeZone
            )
        }
        return Verifier.verify(page, policy: policy, now: now, timeZone: timeZone)
    }

    /// The reporter: the device given, else the one device the kiosk `anchor` saw at immediate
    /// range in the 30 s before `since` (the person holds it there when they begin).
    public func reporter(device: String?, kiosk anchor: String?, since: Date, in db: some StoreReads) throws -> String {
        if let device { return device }
        guard let anchor else { throw SelfReportError(.noReporter, "no device id and no kiosk to find one at") }
        let seen = try SelfReport.immediateDevices(at: anchor, now: since, in: db)
        switch seen.count {
        case 1: return seen[0]
        case 0: throw SelfReportError(.noDeviceAtKiosk, "no device at immediate range of \(anchor)", anchor: anchor)
        default:
            throw SelfReportError(
                .severalDevicesAtKiosk,
                "\(seen.count) devices at immediate range of \(anchor) (\(seen.joined(separator: ", ")))",
                anchor: anchor
            )
        }
    }

    /// Records an accepted verification for `device` and flags those exposed; a rejected one
    /// records nothing. A flagging failure leaves the report recorded and says how to retry.
    /// A verification the policy doubts (or, with `review: all`, any it accepts) is recorded
    /// pending, with `image` kept for the reviewer, and nothing is flagged.
    public func submit(
        _ verification: Verification,
        imageSHA256: String,
        image: Data? = nil,
        device: String,
        answers: [String: Bool] = [:],
        in db: StoreWriter
    ) throws -> Outcome {
        switch try record(
            verification,
            imageSHA256: imageSHA256,
            image: image,
            device: device,
            answers: answers,
            in: db
        ) {
        case .done(let outcome):
            return outcome
        case .toFlag(let report, let verification):
            return Self.recorded(report, verification, flag(report, in: db))
        }
    }

    /// The same on a store others write to (the site server's): the report is recorded on the
    /// store's writer, and flagged after, through `ExposureFlagging.reportAccepted(_:on:)`, so
    /// that deciding who was near (a second or more a report) does not hold the writer.
    public func submit(
        _ verification: Verification,
        imageSHA256: String,
        image: Data? = nil,
        device: String,
        answers: [String: Bool] = [:],
        on store: DocumentStore
    ) async throws -> Outcome {
        let desk = self
        let recorded = try await store.writing { db in
            try desk.record(
                verification,
                imageSHA256: imageSHA256,
                image: image,
                device: device,
                answers: answers,
                in: db
            )
        }
        switch recorded {
        case .done(let outcome):
            return outcome
        case .toFlag(let report, let verification):
            return Self.recorded(report, verification, try await flag(report, on: store))
        }
    }

    /// A report recorded, and whether it is to be flagged now.
    enum Recorded: Sendable {
        case done(Outcome)
        case toFlag(RecordedReport, Verification)
    }

    /// A recorded report's outcome once flagged, or once its flagging failed.
    static func recorded(
        _ report: RecordedReport,
        _ verification: Verification,
        _ flagged: Result<String, any Error>
    ) -> Outcome {
        switch flagged {
        case .success(let line):
            return .recorded(report, verification, flagging: line, flagged: true)
        case .failure(let error):
            let line =
                "report \(report.id) is recorded, but flagging failed (\(error)): run `tracer report flag \(report.id)`"
            return .recorded(report, verification, flagging: line, flagged: false)
        }
    }

    /// Flags an accepted report (a self-report, or one approved at review); a failure is
    /// recorded where the reporter's page and the health team look, in the same write.
    func flag(_ report: RecordedReport, in db: StoreWriter) -> Result<String, any Error> {
        do {
            return .success(try flagging.reportAccepted(report, in: db))
        } catch {
            recordFlaggingFailure(report.id, device: report.deviceID, "\(error)", in: db)
            return .failure(error)
        }
    }

    /// The same on a store others write to: flagged through `ExposureFlagging.reportAccepted(_:on:)`,
    /// a failure recorded in a write of its own.
    func flag(_ report: RecordedReport, on store: DocumentStore) async throws -> Result<String, any Error> {
        do {
            return .success(try await flagging.reportAccepted(report, on: store))
        } catch {
            let desk = self
            try await store.writing { db in
                desk.recordFlaggingFailure(report.id, device: report.deviceID, "\(error)", in: db)
            }
            return .failure(error)
        }
    }

    /// `submit` up to the flagging: the verification decided on, the report recorded.
    func record(
        _ verification: Verification,
        imageSHA256: String,
        image: Data?,
        device: String,
        answers: [String: Bool],
        in db: StoreWriter
    ) throws -> Recorded {
        let verification = try withHistory(verification, device: device, in: db)
        guard let status = disposition(verification) else { return .done(.rejected(verification)) }
        images?.purge()
        // A held report's image is kept before the report is recorded: a report the health team
        // sees always has its image (a failure to keep it records nothing); an image whose
        // report was not recorded goes at once, or with the 72-hour sweep after a crash.
        let id = SelfReport.reportID(deviceID: device, imageSHA256: imageSHA256)
        var kept = false
        if status == .pending, let images, let image, !images.has(id) {
            try images.keep(image, for: id)
            kept = true
        }
        let report: RecordedReport
        do {
            report = try SelfReport.record(
                deviceID: device,
                imageSHA256: imageSHA256,
                verification: verification,
                answers: answers,
                status: status,
                in: db
            )
        } catch {
            if kept { images?.remove(id) }
            throw error
        }
        if kept && !(report.created && report.status == .pending) { images?.remove(id) }
        switch report.status {
        case .pending: return .done(.held(report, verification))
        case .denied, .revoked: return .done(.decidedBefore(report, verification))
        case .accepted: return .toFlag(report, verification)
        }
    }
}

extension SelfReportDesk {
    /// Who decides at review: a person's name (an admin token's, or the user at the command
    /// line) and the token's id ("-" at the command line), for the report and the audit log.
    public struct Reviewer: Sendable {
        public var name: String
        public var tokenID: String

        public init(name: String, tokenID: String) {
            self.name = name
            self.tokenID = tokenID
        }
    }

    /// What a decision did: the report as decided, and for an approval the flagging's line.
    public struct Decided: Sendable {
        public var report: Report
        /// The flagging's line (an approval), or what the reporter is told (a denial).
        public var line: String
        /// False when an approval's flagging failed (the line says how to retry).
        public var flagged: Bool
    }

    /// Deletes the review images kept here that no report waits on any more: past their 72 hours,
    /// decided (here or by another server of the site), or never recorded (`ReviewImages`).
    @discardableResult
    public func sweepImages(now: Date = Date(), in db: some StoreReads) -> Int {
        guard let images else { return 0 }
        return images.purge(now: now) { id in
            let doc = try db.get(try Collections.report(id))
            return doc.exists ? try Report(doc).status : nil
        }
    }

    /// The reports waiting for the health team (or with another status, or all), oldest first.
    public func reports(_ status: Report.Status? = .pending, in db: some StoreReads) throws -> [Report] {
        sweepImages(in: db)
        let query = status.map(Report.with(status:)) ?? Query(collection: Collections.reports)
        return try db.getDocuments(query).compactMap { try? Report($0) }.sorted {
            ($0.createdAt?.seconds ?? 0, $0.id) < ($1.createdAt?.seconds ?? 0, $1.id)
        }
    }

    /// The reports the health team reads (`GET /v1/reports`, `tracer report pending`), each with
    /// whether its image is kept here (pending reports only).
    public func reviewList(
        _ status: Report.Status? = .pending,
        unflaggedOnly: Bool = false,
        in db: some StoreReads
    ) throws -> [(report: Report, image: Bool)] {
        try reports(status, in: db).filter { !unflaggedOnly || $0.flaggingFailed != nil }.map {
            ($0, $0.status == .pending && images?.has($0.id) == true)
        }
    }

    /// Approves a pending report: it is accepted, the reporter marked positive, and exposures
    /// flagged. Or denies it: the reporter's device says so, with the note, and nothing is
    /// flagged. Either way the image is deleted and the decision is in the audit log (who, when,
    /// which report, the note), in the same transaction as the report.
    public func decide(
        _ reportID: String,
        approve: Bool,
        by reviewer: Reviewer,
        note: String? = nil,
        in db: StoreWriter
    ) throws -> Decided {
        switch try recordDecision(reportID, approve: approve, by: reviewer, note: note, in: db) {
        case .denied(let decided):
            return decided
        case .approved(let report, let recorded):
            return Self.approved(report, flag(recorded, in: db))
        }
    }

    /// The same on a store others write to (the site server's): the decision is recorded on the
    /// store's writer, and an approval flagged after, through
    /// `ExposureFlagging.reportAccepted(_:on:)`, so that deciding who was near (a second or more)
    /// does not hold the writer, and every kiosk's sync behind it, as `submit(…on:)` does.
    public func decide(
        _ reportID: String,
        approve: Bool,
        by reviewer: Reviewer,
        note: String? = nil,
        on store: DocumentStore
    ) async throws -> Decided {
        let desk = self
        let decision = try await store.writing { db in
            try desk.recordDecision(reportID, approve: approve, by: reviewer, note: note, in: db)
        }
        switch decision {
        case .denied(let decided):
            return decided
        case .approved(let report, let recorded):
            return Self.approved(report, try await flag(recorded, on: store))
        }
    }

    /// An approval's answer once flagged, or once its flagging failed.
    static func approved(_ report: Report, _ flagged: Result<String, any Error>) -> Decided {
        switch flagged {
        case .success(let line):
            return Decided(report: report, line: line, flagged: true)
        case .failure(let error):
            let line =
                "report \(report.id) is approved, but flagging failed (\(error)): run `tracer report flag \(report.id)`"
            return Decided(report: report, line: line, flagged: false)
        }
    }

    /// A decision recorded (`recordDecision`): a denial, done, or an approval still to flag.
    enum DecisionRecorded: Sendable {
        case denied(Decided)
        case approved(Report, RecordedReport)
    }

    /// `decide` up to the flagging: the decision recorded and audited, the image deleted.
    func recordDecision(
        _ reportID: String,
        approve: Bool,
        by reviewer: Reviewer,
        note: String?,
        in db: StoreWriter
    ) throws -> DecisionRecorded {
        let status: Report.Status = approve ? .accepted : .denied
        let path: DocumentPath
        do { path = try Collections.report(reportID) } catch {
            throw ReviewError(.notFound, "no report \(reportID.prefix(40))")
        }
        let note = note.map { String($0.prefix(2000)) }
        try db.runTransaction { t in
            let doc = try t.get(path)
            guard doc.exists, let report = try? Report(doc) else {
                throw ReviewError(.notFound, "no report \(reportID)")
            }
            guard report.status == .pending else {
                let by = report.decidedBy.map { " by \($0)" } ?? ""
                let at = report.decidedAt.map { " at \($0.iso8601Seconds)" } ?? ""
                throw ReviewError(.notPending, "report \(reportID) is \(report.status.rawValue)\(by)\(at), not pending")
            }
            t.update(path, Report.decision(status, by: reviewer.name, note: note))
            var decided = report
            decided.status = status
            decided.note = note
            var device: DocumentData = ["report": decided.forReporter]
            if approve { device.merge(DeviceStatus.positive) { _, new in new } }
            t.set(try Collections.device(report.deviceID), device, merge: true)
            let entry = AuditEntry(
                tokenID: reviewer.tokenID,
                tokenName: reviewer.name,
                role: .admin,
                method: approve ? "APPROVE" : "DENY",
                path: path.description,
                outcome: note.flatMap { $0.isEmpty ? nil : "note: \($0)" }
            )
            t.set(Collections.audit.newDocument(), entry.data)
        }
        images?.remove(reportID)
        guard let report = try? Report(try db.get(path)) else {
            throw ReviewError(.notFound, "no report \(reportID)")
        }
        guard approve else {
            return .denied(
                Decided(report: report, line: "report \(reportID) denied; the reporter's status says so", flagged: true)
            )
        }
        let recorded = RecordedReport(
            id: report.id,
            deviceID: report.deviceID,
            collectedAt: report.collectedAt.map { Date(timeIntervalSince1970: $0.seconds) },
            imageSHA256: report.imageSHA256,
            created: false,
            status: .accepted
        )
        return .approved(report, recorded)
    }
}

extension SelfReportDesk {
    /// A failed flagging, written where the reporter's page and the health team look (the
    /// report's `flaggingFailed`, the device's `report.flagging`) until a flagging succeeds. Best
    /// effort: the store may be what failed, and the caller says so in any case.
    func recordFlaggingFailure(_ reportID: String, device: String, _ error: String, in db: StoreWriter) {
        let fields = Report.flaggingFailure(error)
        _ = try? db.runTransaction { t in
            let reportPath = try Collections.report(reportID)
            let devicePath = try Collections.device(device)
            let (report, reporter) = (try t.get(reportPath), try t.get(devicePath))
            if report.exists { t.update(reportPath, fields.report) }
            if reporter["report"]?["id"] == .string(reportID) { t.update(devicePath, fields.device) }
        }
    }
}

/// Why a self-report could not go ahead (other than a rejected verification, an outcome).
public struct SelfReportError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// Neither a device nor a kiosk was given.
        case noReporter
        /// The kiosk saw no device at immediate range.
        case noDeviceAtKiosk
        /// The kiosk saw more than one.
        case severalDevicesAtKiosk
    }

    public var code: Code
    public var message: String
    /// The kiosk's anchor key.
    public var anchor: String?

    public init(_ code: Code, _ message: String, anchor: String? = nil) {
        self.code = code
        self.message = message
        self.anchor = anchor
    }

    public var description: String { message }
}

extension TrustList {
    /// The site's trust list (its map's `trustList`), or nil when it names none; a PEM file that
    /// is not one is an error naming it.
    public init?(_ settings: VerificationSettings) throws {
        guard let pem = settings.trustListPEM else { return nil }
        try self.init(pem: pem, file: settings.trustListFile ?? "the site's trust list")
    }
}

extension VerificationPolicy {
    /// A site's verification settings (the BeaconMap's `settings:`).
    public init(_ settings: VerificationSettings) {
        self.init()
        minConfidence = settings.minConfidence
        maxAgeDays = settings.maxAgeDays
        review = Review(rawValue: settings.review) ?? .doubtful
    }
}

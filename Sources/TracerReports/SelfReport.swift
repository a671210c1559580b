import Foundation
import TracerModel
import TracerStore
import TracerVerification

/// What happens after a report is accepted: flagging the people who were near the reporter.
/// The self-report command calls it once the report is stored; the exposure engine (its own
/// piece of work) implements it.
public protocol ExposureFlagging: Sendable {
    /// Flags exposures for an accepted report; returns a line for the person reporting.
    func reportAccepted(_ report: RecordedReport, in db: StoreWriter) throws -> String

    /// The same on a store others write to (the site server's): by default inside one `writing`;
    /// the exposure engine decides on a reader thread and only writes on the writer.
    func reportAccepted(_ report: RecordedReport, on store: DocumentStore) async throws -> String
}

extension ExposureFlagging {
    public func reportAccepted(_ report: RecordedReport, on store: DocumentStore) async throws -> String {
        try await store.writing { db in try self.reportAccepted(report, in: db) }
    }
}

/// A report as stored in `reports/{id}`.
public struct RecordedReport: Sendable, Equatable {
    public var id: String
    public var deviceID: String
    public var collectedAt: Date?
    public var imageSHA256: String
    /// False when the same image had already been reported for the same device.
    public var created: Bool
    /// Where it stands (for one already reported: as it was found).
    public var status: Report.Status = .accepted
}

/// Records accepted self-reports: `reports/{id}` (never the image: its SHA-256), and the
/// reporter's device marked positive.
public enum SelfReport {
    /// The report's id: the same image for the same device is the same report.
    public static func reportID(deviceID: String, imageSHA256: String) -> String {
        String(Digest.sha256Hex("\(deviceID)\n\(imageSHA256)").prefix(20))
    }

    /// Stores the report and, when it is accepted, marks the device positive, in one
    /// transaction; a pending one (held for the health team) leaves the device as it is. The
    /// device's `report` field says where the report stands. An existing report for the same
    /// image and device is returned as it is.
    public static func record(
        deviceID: String,
        imageSHA256: String,
        verification: Verification,
        answers: [String: Bool] = [:],
        status: Report.Status = .accepted,
        in db: StoreWriter
    ) throws -> RecordedReport {
        let id = reportID(deviceID: deviceID, imageSHA256: imageSHA256)
        let reportPath = try Collections.report(id)
        let devicePath = try Collections.device(deviceID)
        var report = Report(
            id: id,
            deviceID: deviceID,
            status: status,
            collectedAt: verification.collectedAt.map { Timestamp(seconds: $0.timeIntervalSince1970) },
            imageSHA256: imageSHA256,
            evidence: verification.rules.map(Self.evidence),
            answers: answers
        )
        report.doubts = verification.doubts
        let (created, stored) = try db.runTransaction { t -> (Bool, Report.Status) in
            let existing = try t.get(reportPath)
            if existing.exists { return (false, (try? Report(existing))?.status ?? status) }
            t.create(reportPath, report.data)
            var device: DocumentData = ["report": report.forReporter]
            if status == .accepted { device.merge(DeviceStatus.positive) { _, new in new } }
            t.set(devicePath, device, merge: true)
            return (true, status)
        }
        return RecordedReport(
            id: id,
            deviceID: deviceID,
            collectedAt: verification.collectedAt,
            imageSHA256: imageSHA256,
            created: created,
            status: stored
        )
    }

    static func evidence(_ rule: VerificationRule) -> Value {
        var fields: [String: Value] = [
            "rule": .string(rule.name),
            "passed": .bool(rule.passed),
            "detail": .string(rule.detail),
            "doubtful": .bool(rule.doubtful),
            "words": .array(
                rule.evidence.map {
                    .map(["text": .string($0.text), "confidence": .double(($0.confidence * 10).rounded() / 10)])
                }
            ),
        ]
        // The detail as the verifier's texts say it, so the health team reads it in its language.
        if let message = rule.message {
            fields["message"] = .map([
                "key": .string(message.key),
                "values": .map(message.values.mapValues(Value.string)),
                "terms": .map(message.terms.mapValues { .array($0.map(Value.string)) }),
            ])
        }
        return .map(fields)
    }

    /// The device a kiosk sees at immediate range now: the interactions at `anchor` that ended
    /// within `within` seconds and were immediate. Exactly one device, or the candidates.
    public static func immediateDevices(
        at anchor: String,
        now: Date = Date(),
        within: Double = 30,
        in db: some StoreReads
    ) throws -> [String] {
        // Windows last 30 s: one that ended within `within` started within `within + 30`.
        let since = Timestamp(seconds: now.timeIntervalSince1970 - within - 30)
        let query = Query(collection: try Collections.interactions(at: anchor))
            .where(Interaction.Field.start, .greaterThanOrEqual, .timestamp(since))
        let horizon = Timestamp(seconds: now.timeIntervalSince1970 - within)
        var devices: Set<String> = []
        for doc in try db.getDocuments(query) {
            guard let i = try? Interaction(doc), i.proximity == .immediate, i.end >= horizon else { continue }
            devices.insert(i.deviceID)
        }
        return devices.sorted()
    }
}

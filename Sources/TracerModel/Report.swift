import TracerStore

/// `reports/{id}`: a self-report. Never the image: its SHA-256 and the evidence that decided.
public struct Report: Sendable, Equatable {
    public static let collectionID = "reports"

    /// Where a report stands.
    public enum Status: String, Sendable, CaseIterable {
        /// Held for the health team's review: recorded, nothing flagged yet.
        case pending
        /// Verified (or approved): the reporter is positive and their contacts are flagged.
        case accepted
        /// Refused at review.
        case denied
        /// Withdrawn: its exposures are gone.
        case revoked
    }

    /// The stored field names.
    public enum Field {
        public static let deviceID: FieldPath = "deviceId"
        public static let status: FieldPath = "status"
        public static let createdAt: FieldPath = "createdAt"
    }

    public var id: String
    public var deviceID: String
    public var status: Status
    /// When the test's sample was taken, as read from the result; nil when it could not be read.
    public var collectedAt: Timestamp?
    public var imageSHA256: String
    /// The verification's rules with the words that decided them (see `evidence`).
    public var evidence: [Value]
    /// The questionnaire's answers (`symptoms`, `tested`).
    public var answers: [String: Bool]
    /// Set by the store on creation.
    public var createdAt: Timestamp?
    /// Why it waits for the health team (the doubtful rules' details; empty when the site
    /// reviews every report and nothing was doubtful).
    public var doubts: [String] = []
    /// Who decided it at review, when, and what they noted.
    public var decidedBy: String?
    public var decidedAt: Timestamp?
    public var note: String?
    /// Why flagging this accepted report failed, until a flagging succeeds: the reporter is
    /// positive and nobody near them is told yet (the page and the health team's view say so).
    public var flaggingFailed: String?

    public init(
        id: String,
        deviceID: String,
        status: Status,
        collectedAt: Timestamp?,
        imageSHA256: String,
        evidence: [Value] = [],
        answers: [String: Bool] = [:],
        createdAt: Timestamp? = nil
    ) {
        self.id = id
        self.deviceID = deviceID
        self.status = status
        self.collectedAt = collectedAt
        self.imageSHA256 = imageSHA256
        self.evidence = evidence
        self.answers = answers
        self.createdAt = createdAt
    }

    public init(_ doc: DocumentSnapshot) throws(ModelError) {
        let r = try FieldReader(doc)
        var answers: [String: Bool] = [:]
        for (key, value) in r.data["answers"]?.mapValue ?? [:] {
            if case .bool(let b) = value { answers[key] = b }
        }
        self.init(
            id: doc.id,
            deviceID: try r.string("deviceId"),
            status: try r.enum("status", Status.self),
            collectedAt: r.optionalTime("collectedAt"),
            imageSHA256: r.optionalString("imageSHA256") ?? "",
            evidence: r.data["evidence"].flatMap { if case .array(let a) = $0 { a } else { nil } } ?? [],
            answers: answers,
            createdAt: r.optionalTime("createdAt")
        )
        if case .array(let doubts)? = r.data["doubts"] { self.doubts = doubts.compactMap(\.stringValue) }
        decidedBy = r.optionalString("decidedBy")
        decidedAt = r.optionalTime("decidedAt")
        note = r.optionalString("note")
        flaggingFailed = r.optionalString("flaggingFailed")
    }

    /// The document as first written; `createdAt` is the commit time.
    public var data: DocumentData {
        var data: DocumentData = [
            "deviceId": .string(deviceID),
            "status": .string(status.rawValue),
            "evidence": .array(evidence),
            "createdAt": createdAt.map(Value.timestamp) ?? .serverTimestamp,
            "collectedAt": collectedAt.map(Value.timestamp) ?? .null,
        ]
        if !imageSHA256.isEmpty { data["imageSHA256"] = .string(imageSHA256) }
        if !answers.isEmpty { data["answers"] = .map(answers.mapValues(Value.bool)) }
        if !doubts.isEmpty { data["doubts"] = .array(doubts.map(Value.string)) }
        return data
    }

    /// The fields a reviewer's decision writes: the status, who, when (the commit time), and
    /// their note.
    public static func decision(_ status: Status, by reviewer: String, note: String?) -> [FieldPath: Value] {
        var fields: [FieldPath: Value] = [
            "status": .string(status.rawValue), "decidedBy": .string(reviewer), "decidedAt": .serverTimestamp,
        ]
        if let note, !note.isEmpty { fields["note"] = .string(note) }
        return fields
    }

    /// The fields a failed flagging writes on the report, and on the reporter's device
    /// (`devices/{id}.report.flagging`): the page and the health team's view read them there.
    public static func flaggingFailure(_ error: String) -> (report: [FieldPath: Value], device: [FieldPath: Value]) {
        (
            ["flaggingFailed": .string(String(error.prefix(300))), "flaggingFailedAt": .serverTimestamp],
            ["report.flagging": .string("failed")]
        )
    }

    /// The fields a successful flagging clears, where a failure had written them.
    public static let flaggingDone: (report: [FieldPath: Value], device: [FieldPath: Value]) = (
        ["flaggingFailed": .delete, "flaggingFailedAt": .delete], ["report.flagging": .delete]
    )

    /// The reports with a status (`pending`: those waiting for the health team).
    public static func with(status: Status) -> Query {
        Query(collection: Collections.reports).where(Field.status, .equal, .string(status.rawValue))
    }

    /// What the reporter's device document says of their latest report (`devices/{id}.report`), so
    /// that `tracer status` and its listeners tell them it waits, and then what was decided.
    public var forReporter: Value {
        var fields: [String: Value] = ["id": .string(id), "status": .string(status.rawValue)]
        if let note, status == .denied { fields["note"] = .string(note) }
        return .map(fields)
    }

    /// The fields a revocation writes.
    public static var revocation: [FieldPath: Value] {
        ["status": .string(Status.revoked.rawValue), "revokedAt": .serverTimestamp]
    }

    /// Whether a stored report has this status (false for a missing document or another shape).
    public static func `is`(_ doc: DocumentSnapshot, _ status: Status) -> Bool {
        doc["status"] == .string(status.rawValue)
    }

    /// A query for one device's reports.
    public static func of(device: String) -> Query {
        Query(collection: Collections.reports).where(Field.deviceID, .equal, .string(device))
    }
}

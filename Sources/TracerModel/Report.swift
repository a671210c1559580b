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
        return data
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

import TracerStore

/// `kiosks/{anchor}`: a replicating kiosk as the site server last saw it, written in the same
/// transaction as each batch it sends: when, how far behind, and how far off its clock is.
public struct KioskSync: Sendable, Equatable {
    public static let collectionID = "kiosks"

    /// The stored field names.
    public enum Field {
        public static let lastSeen: FieldPath = "lastSeen"
    }

    public var anchor: String
    /// The server's time of the last batch.
    public var lastSeen: Timestamp?
    /// The kiosk's clock minus the server's, seconds.
    public var clockOffset: Double?
    /// The kiosk's change token the server has acknowledged.
    public var acknowledged: Int64
    /// Changes still queued at the kiosk, and the kiosk's time of the oldest.
    public var backlog: Int64
    public var backlogOldest: Timestamp?
    /// Documents taken from it, and refused (outside its anchor), since it first replicated.
    public var documents: Int64
    public var refused: Int64
    /// The token it replicates with.
    public var tokenID: String?
    /// Whole batches refused (another kiosk's token), and the last reason.
    public var refusedBatches: Int64 = 0
    public var lastRefusal: String?

    public init(anchor: String, acknowledged: Int64, backlog: Int64) {
        self.anchor = anchor
        self.acknowledged = acknowledged
        self.backlog = backlog
        self.documents = 0
        self.refused = 0
    }

    public init(_ doc: DocumentSnapshot) throws(ModelError) {
        let r = try FieldReader(doc)
        self.init(anchor: doc.id, acknowledged: Int64(r.integer("acknowledged")), backlog: Int64(r.integer("backlog")))
        lastSeen = r.optionalTime("lastSeen")
        clockOffset = r.optionalDouble("clockOffset")
        backlogOldest = r.optionalTime("backlogOldest")
        documents = Int64(r.integer("documents"))
        refused = Int64(r.integer("refused"))
        tokenID = r.optionalString("tokenId")
        refusedBatches = Int64(r.integer("refusedBatches"))
        lastRefusal = r.optionalString("lastRefusal")
    }

    /// The fields a refused batch merges in.
    public static func refusal(_ reason: String) -> DocumentData {
        ["refusedBatches": .increment(Int64(1)), "lastRefusal": .string(reason), "lastRefusedAt": .serverTimestamp]
    }

    /// The fields one batch merges in: `lastSeen` is the commit time, the counts are increments
    /// (so the document needs no read inside the batch's transaction).
    public static func batch(
        acknowledged: Int64,
        backlog: Int64,
        backlogOldest: Timestamp?,
        clockOffset: Double?,
        applied: Int,
        refused: Int,
        tokenID: String
    ) -> DocumentData {
        var data: DocumentData = [
            "acknowledged": .integer(acknowledged), "backlog": .integer(backlog),
            "backlogOldest": backlogOldest.map { .timestamp($0) } ?? .null,
            "lastSeen": .serverTimestamp, "documents": .increment(Int64(applied)),
            "refused": .increment(Int64(refused)), "tokenId": .string(tokenID),
        ]
        if let clockOffset { data["clockOffset"] = .double(clockOffset) }
        return data
    }
}

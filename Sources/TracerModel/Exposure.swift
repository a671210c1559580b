import TracerStore

/// `devices/{device}/exposures/{id}`: one episode of a device near a reporter at one anchor.
public struct Exposure: Sendable, Equatable {
    public static let collectionID = "exposures"

    /// The stored field names.
    public enum Field {
        public static let reportID: FieldPath = "reportId"
        public static let beaconKey: FieldPath = "beaconKey"
        public static let from: FieldPath = "from"
        public static let flaggedAt = "flaggedAt"
    }

    public var deviceID: String
    public var reportID: String
    public var beaconKey: String
    public var from: Timestamp
    public var to: Timestamp
    /// The closest bounds of the separation over the episode, metres.
    public var separationMin: Double
    public var separationMax: Double
    /// Seconds both were heard at once.
    public var overlapSeconds: Int
    /// The separation rule that flagged it.
    public var rule: String
    /// The chance that the two were within the radius, in one room, within the window of each
    /// other over the episode: the pair decision's (nil where distances alone decided).
    public var chance: Double?

    public init(
        deviceID: String,
        reportID: String,
        beaconKey: String,
        from: Timestamp,
        to: Timestamp,
        separationMin: Double,
        separationMax: Double,
        overlapSeconds: Int,
        rule: String,
        chance: Double? = nil
    ) {
        self.deviceID = deviceID
        self.reportID = reportID
        self.beaconKey = beaconKey
        self.from = from
        self.to = to
        self.separationMin = separationMin
        self.separationMax = separationMax
        self.overlapSeconds = overlapSeconds
        self.rule = rule
        self.chance = chance
    }

    /// A stored exposure; missing numbers read as 0 (older documents), a missing time is an error.
    public init(_ doc: DocumentSnapshot) throws(ModelError) {
        let r = try FieldReader(doc)
        let separation = r.data["separation"]?.mapValue ?? [:]
        self.init(
            deviceID: Collections.device(ofExposure: doc.path) ?? r.optionalString("deviceId") ?? "",
            reportID: r.optionalString("reportId") ?? "",
            beaconKey: r.optionalString("beaconKey") ?? "",
            from: try r.time("from"),
            to: try r.time("to"),
            separationMin: separation["min"]?.doubleValue ?? 0,
            separationMax: separation["max"]?.doubleValue ?? 0,
            overlapSeconds: r.integer("overlapSeconds"),
            rule: r.optionalString("rule") ?? "",
            chance: r.data["chance"]?.doubleValue
        )
    }

    /// The id: the same (report, device, anchor, episode start) is the same exposure, so a
    /// re-run writes nothing new.
    public var id: String {
        Self.id(reportID: reportID, deviceID: deviceID, beaconKey: beaconKey, from: from)
    }

    /// See `id`: 20 hex digits of a SHA-256 over the four.
    public static func id(reportID: String, deviceID: String, beaconKey: String, from: Timestamp) -> String {
        String(
            Digest.sha256Hex("\(reportID)\n\(deviceID)\n\(beaconKey)\n\(Int(saturating: from.seconds * 1000))").prefix(
                20
            )
        )
    }

    /// `devices/{device}/exposures/{id}`.
    public func path() throws(StoreError) -> DocumentPath {
        try Collections.exposures(of: deviceID).document(id)
    }

    /// The document, without `flaggedAt` (the write adds it; comparing leaves it out).
    public var data: DocumentData {
        var data: DocumentData = [
            "reportId": .string(reportID),
            "deviceId": .string(deviceID),
            "beaconKey": .string(beaconKey),
            "from": .timestamp(from),
            "to": .timestamp(to),
            "separation": ["min": .double(separationMin), "max": .double(separationMax)],
            "overlapSeconds": .integer(Int64(overlapSeconds)),
            "rule": .string(rule),
        ]
        if let chance { data["chance"] = .double(chance) }
        return data
    }

    /// Whether a stored exposure holds the same data, `flaggedAt` aside.
    public static func same(_ stored: DocumentData?, _ wanted: DocumentData) -> Bool {
        guard var stored else { return false }
        stored[Field.flaggedAt] = nil
        return stored == wanted
    }

    /// A report's exposures, across devices (the `reportId` group index).
    public static func of(report: String) -> Query {
        Query.exposures.where(Field.reportID, .equal, .string(report))
    }

    /// A device's exposures, oldest first.
    public static func of(device: String) throws(StoreError) -> Query {
        Query(collection: try Collections.exposures(of: device)).order(by: Field.from)
    }

    /// A device's exposures read as a whole collection (`DocumentStore.fetch`, in the order of
    /// their ids), in `of(device:)`'s order: oldest first, then by id.
    public static func ordered(_ exposures: [DocumentSnapshot]) -> [DocumentSnapshot] {
        exposures.sorted { a, b in
            let order = Value.compare(a[Field.from] ?? .null, b[Field.from] ?? .null)
            return order != 0 ? order < 0 : a.path.id < b.path.id
        }
    }

    /// Exposures at an anchor from `since` on, oldest first (the `beaconKey, from` group index).
    public static func at(beacon: String, since: Timestamp) -> Query {
        Query.exposures.where(Field.beaconKey, .equal, .string(beacon))
            .where(Field.from, .greaterThanOrEqual, .timestamp(since)).order(by: Field.from)
    }
}

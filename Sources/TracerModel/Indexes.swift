import TracerStore

/// The indexes the product declares, in one list: the daemon, the exposure engine, the server
/// and the commands all declare exactly these, so each is built as its documents are written.
public enum Indexes {
    /// Interactions at one anchor by time (a kiosk's recent windows).
    public static let interactionsByStart = IndexDefinition(
        collectionID: Interaction.collectionID,
        Interaction.Field.start
    )
    /// A device's interactions anywhere, by time (the reporter's windows).
    public static let interactionsByDevice = IndexDefinition(
        collectionID: Interaction.collectionID,
        scope: .collectionGroup,
        Interaction.Field.deviceID,
        Interaction.Field.start
    )
    /// Every interaction by time (occupancy, retention).
    public static let interactionsByTime = IndexDefinition(
        collectionID: Interaction.collectionID,
        scope: .collectionGroup,
        Interaction.Field.start
    )
    /// A report's exposures.
    public static let exposuresByReport = IndexDefinition(
        collectionID: Exposure.collectionID,
        scope: .collectionGroup,
        Exposure.Field.reportID
    )
    /// Exposures at an anchor by time.
    public static let exposuresByBeacon = IndexDefinition(
        collectionID: Exposure.collectionID,
        scope: .collectionGroup,
        Exposure.Field.beaconKey,
        Exposure.Field.from
    )
    /// A device's exposures by time.
    public static let exposuresByTime = IndexDefinition(
        collectionID: Exposure.collectionID,
        Exposure.Field.from
    )

    /// Every exposure by when it began (retention).
    public static let exposuresByStart = IndexDefinition(
        collectionID: Exposure.collectionID,
        scope: .collectionGroup,
        Exposure.Field.from
    )

    /// Every kiosk's hearings by when they ended (the site's calibration, retention).
    public static let hearingsByEnd = IndexDefinition(
        collectionID: Hearing.collectionID,
        scope: .collectionGroup,
        Hearing.Field.end
    )

    /// Every index the product declares.
    public static let all = [
        interactionsByStart,
        interactionsByDevice,
        interactionsByTime,
        PresenceIndex.definition,
        WhereaboutsIndex.definition,
        exposuresByReport,
        exposuresByBeacon,
        exposuresByTime,
        exposuresByStart,
        hearingsByEnd,
    ]

    /// Declares them all (declaring one that exists takes no write lock).
    public static func declare(in db: StoreWriter) throws {
        for index in all { try db.declareIndex(index) }
    }

    /// Whether every index is declared already, found by reading (`ExposureEngine.flag(reportID:on:)`
    /// need not wait for the store's writer to learn it).
    public static func declared(in db: some StoreReads) throws -> Bool {
        let have = try db.indexes()
        return all.allSatisfy(have.contains)
    }
}

/// A device's window at an anchor, as the covering indexes give it (no document loaded).
public struct Presence: Sendable, Equatable {
    public var deviceID: String
    public var anchor: String
    public var start: Timestamp
    public var end: Timestamp
    public var distance: Double

    public init(deviceID: String, anchor: String, start: Timestamp, end: Timestamp, distance: Double) {
        self.deviceID = deviceID
        self.anchor = anchor
        self.start = start
        self.end = end
        self.distance = distance
    }

    /// From a whole interaction; nil when it has no distance.
    public init?(_ i: Interaction) {
        guard let distance = i.distance else { return nil }
        self.init(deviceID: i.deviceID, anchor: i.anchor, start: i.start, end: i.end, distance: distance)
        guard isUsable else { return nil }
    }

    /// The longest window flagging takes: a daemon closes a window after minutes; one that claims
    /// more than a day was not written by one.
    public static let longestWindow: Double = 86_400

    /// Whether flagging can use this window: its device id one tracer takes (`Identifier`), its
    /// times in `Timestamp.range`, in order and at most a day apart, its distance a finite
    /// number of metres. Anything else (a document a kiosk or
    /// an old store planted) is skipped and counted, so that stored data can never stop the flagger.
    public var isUsable: Bool {
        Identifier.isValid(deviceID) && start.isInRange && end.isInRange && start <= end
            && end.seconds - start.seconds <= Self.longestWindow
            && distance.isFinite && distance >= 0
    }

    /// Where each field sits in a covering index's entries, found by name from its field list
    /// once: reordering an index's fields changes its key order, never what a reader takes for
    /// which field, and an index without one of the four is no covering index at all.
    struct Layout: Sendable {
        let count: Int
        let start: Int
        let device: Int
        let end: Int
        let distance: Int

        init?(_ fields: [FieldPath]) {
            guard let start = fields.firstIndex(of: Interaction.Field.start),
                let device = fields.firstIndex(of: Interaction.Field.deviceID),
                let end = fields.firstIndex(of: Interaction.Field.end),
                let distance = fields.firstIndex(of: Interaction.Field.distance)
            else { return nil }
            (count, self.start, self.device, self.end, self.distance) = (fields.count, start, device, end, distance)
        }
    }

    /// Decodes a covering index's entry by its layout.
    init?(_ entry: IndexEntry, layout: Layout, anchor: String?) {
        let v = entry.values
        guard v.count == layout.count, let start = v[layout.start].timestampValue,
            case .string(let device) = v[layout.device], let end = v[layout.end].timestampValue,
            let distance = v[layout.distance].doubleValue,
            let anchor = anchor ?? entry.path.flatMap(Collections.anchor(ofInteraction:))
        else { return nil }
        self.init(deviceID: device, anchor: anchor, start: start, end: end, distance: distance)
        guard isUsable else { return nil }
    }
}

/// Who was at an anchor when: flagging's neighbour reads come from this index alone. Its first
/// field is `start`, the field a range read covers.
public enum PresenceIndex {
    static let fields = [
        Interaction.Field.start, Interaction.Field.deviceID, Interaction.Field.end, Interaction.Field.distance,
    ]
    public static let definition = IndexDefinition(
        collectionID: Interaction.collectionID,
        fields: fields.map { .init($0) }
    )
    static let layout = Presence.Layout(fields)!

    /// An entry read at `anchor` (the index is per collection: the anchor is the caller's).
    public static func decode(_ entry: IndexEntry, anchor: String) -> Presence? {
        Presence(entry, layout: layout, anchor: anchor)
    }
}

/// Where else a device was heard: room attribution reads flagged devices' windows from this
/// index alone. Its first field is `deviceId` (an equality), then `start` (the range).
public enum WhereaboutsIndex {
    static let fields = [
        Interaction.Field.deviceID, Interaction.Field.start, Interaction.Field.end, Interaction.Field.distance,
    ]
    public static let definition = IndexDefinition(
        collectionID: Interaction.collectionID,
        scope: .collectionGroup,
        fields: fields.map { .init($0) }
    )

    static let layout = Presence.Layout(fields)!

    /// An entry read with its path (the anchor is the path's parent's key).
    public static func decode(_ entry: IndexEntry) -> Presence? {
        Presence(entry, layout: layout, anchor: nil)
    }
}

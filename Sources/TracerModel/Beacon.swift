import TracerSite
import TracerStore

/// `beacons/{key}`: an anchor of the site (a kiosk or a fixed beacon), written from the BeaconMap.
public struct Beacon: Sendable, Equatable {
    public static let collectionID = "beacons"

    public var key: String
    public var kind: Anchor.Kind
    public var room: String
    public var name: String
    public var position: Point
    public var site: String
    /// The fixed beacon's identity (kiosks have none).
    public var uuid: String?
    public var major: Int?
    public var minor: Int?
    public var measuredPower: Int?

    /// An anchor of a site, named after its room.
    public init(_ anchor: Anchor, of site: Site) {
        let roomName = site.room(anchor.room)?.name ?? anchor.room
        key = anchor.key
        kind = anchor.kind
        room = anchor.room
        name = anchor.kind == .kiosk ? "\(roomName) kiosk" : "\(roomName) beacon"
        position = anchor.position
        self.site = site.name
        uuid = anchor.identity?.uuid.description
        major = anchor.identity.map { Int($0.major) }
        minor = anchor.identity.map { Int($0.minor) }
        measuredPower = anchor.measuredPower
    }

    /// The document, to be merged (so that fields others added stay); `ts` is the commit time.
    public var data: DocumentData {
        var data: DocumentData = [
            "kind": .string(kind.rawValue), "room": .string(room), "name": .string(name),
            "position": [.double(position.x), .double(position.y)],
            "site": .string(site), "ts": .serverTimestamp,
        ]
        if let uuid { data["uuid"] = .string(uuid) }
        if let major { data["major"] = .integer(Int64(major)) }
        if let minor { data["minor"] = .integer(Int64(minor)) }
        if let measuredPower { data["measuredPower"] = .integer(Int64(measuredPower)) }
        return data
    }

    /// A kiosk's receiver offset as it fitted it from the fixed beacons in its room (the
    /// `calibration` field of `beacons/{kiosk}`): dB added to its readings on top of the site's
    /// `receiverOffset`, the windows it rests on, and when it was stored.
    public struct Calibration: Sendable, Equatable {
        public var receiverOffset: Double
        public var windows: Int
        public var references: Int
        /// What it was fitted from: nil (or `beacons`) the fixed beacons in the kiosk's room,
        /// `kiosks` the site server's fit of the kiosks hearing each other.
        public var source: String?
        /// While the site server names the kiosk as moved: what it ranged with before the move,
        /// and the move's shift followed (dB added), so that a restart does not add it twice.
        public var movedFrom: Double?
        public var shift: Double?
        /// When the server first named it (Unix seconds).
        public var movedAt: Double?
        /// The map's `receiverOffset` for this kiosk when the calibration was stored: a map
        /// published with another one sets the calibration aside (`isSetAside`). Nil in
        /// calibrations stored before it was kept, which stand whatever the map says.
        public var mapOffset: Double?
        public var updatedAt: Timestamp?

        public init(receiverOffset: Double, windows: Int, references: Int, source: String? = nil) {
            self.receiverOffset = receiverOffset
            self.windows = windows
            self.references = references
            self.source = source
        }

        /// Nil when the document has no calibration.
        public init?(_ doc: DocumentSnapshot) {
            guard case .map(let m)? = doc["calibration"], let offset = m["receiverOffset"]?.doubleValue,
                offset.isFinite
            else { return nil }
            receiverOffset = offset
            windows = Int(saturating: m["windows"]?.doubleValue ?? 0)
            references = Int(saturating: m["references"]?.doubleValue ?? 0)
            source = m["source"]?.stringValue
            movedFrom = m["movedFrom"]?.doubleValue
            shift = m["shift"]?.doubleValue
            movedAt = m["movedAt"]?.timestampValue?.seconds
            mapOffset = m["mapOffset"]?.doubleValue
            updatedAt = m["updatedAt"]?.timestampValue
        }

        /// Whether a map giving the kiosk `offset` (its anchor's `receiverOffset`, 0 when none)
        /// was published after this calibration: the operator's new value wins over what the
        /// kiosk fitted or followed under the old one.
        public func isSetAside(byMapOffset offset: Double) -> Bool {
            mapOffset.map { Self.differ($0, offset) } ?? false
        }

        /// Whether two of the map's offsets for a kiosk differ (to a hundredth of a dB).
        public static func differ(_ a: Double, _ b: Double) -> Bool { abs(a - b) > 0.005 }

        /// The field's value (offset to 0.1 dB).
        public var data: DocumentData {
            var data: DocumentData = [
                "receiverOffset": .double((receiverOffset * 10).rounded() / 10),
                "windows": .integer(Int64(windows)),
                "references": .integer(Int64(references)),
                "updatedAt": .serverTimestamp,
            ]
            if let source { data["source"] = .string(source) }
            if let movedFrom { data["movedFrom"] = .double((movedFrom * 10).rounded() / 10) }
            if let shift { data["shift"] = .double((shift * 10).rounded() / 10) }
            if let movedAt { data["movedAt"] = .timestamp(Timestamp(seconds: movedAt)) }
            if let mapOffset { data["mapOffset"] = .double(mapOffset) }
            return data
        }
    }

    /// What a stored beacon says of itself, for anchors the site's map does not name.
    public struct Stored: Sendable, Equatable {
        public var room: String?
        public var name: String?

        public init(_ doc: DocumentSnapshot) {
            room = doc["room"]?.stringValue
            name = doc["name"]?.stringValue
        }
    }
}

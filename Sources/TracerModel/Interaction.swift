import TracerRanging
import TracerStore

/// `beacons/{anchor}/interactions/{id}`: one device at one anchor over one window, as the daemon
/// summarised it.
public struct Interaction: Sendable, Equatable {
    public static let collectionID = "interactions"

    /// The stored field names.
    public enum Field {
        public static let deviceID: FieldPath = "deviceId"
        public static let anchor: FieldPath = "anchor"
        public static let beacon: FieldPath = "beacon"
        public static let proximity: FieldPath = "proximity"
        public static let proximityCode: FieldPath = "proximityCode"
        public static let distance: FieldPath = "distance"
        public static let minDistance: FieldPath = "minDistance"
        public static let rssi: FieldPath = "rssi"
        public static let measuredPower: FieldPath = "measuredPower"
        public static let start: FieldPath = "start"
        public static let end: FieldPath = "end"
        public static let samples: FieldPath = "samples"
        public static let testResult: FieldPath = "testResult"
        public static let ts: FieldPath = "ts"
    }

    /// The beacon's identity as stored: `{uuid, major, minor}`.
    public struct BeaconID: Sendable, Equatable {
        public var uuid: String
        public var major: Int
        public var minor: Int

        public init(uuid: String, major: Int, minor: Int) {
            self.uuid = uuid
            self.major = major
            self.minor = minor
        }
    }

    public var deviceID: String
    public var anchor: String
    public var beacon: BeaconID?
    /// Nil when the window had no usable RSSI.
    public var proximity: Proximity?
    /// Metres, rounded to centimetres; nil when unknown.
    public var distance: Double?
    public var minDistance: Double?
    /// Smoothed dBm.
    public var rssi: Double?
    public var measuredPower: Double?
    public var start: Timestamp
    public var end: Timestamp
    public var samples: Int
    /// Whether the device's owner has since reported a positive test.
    public var testResult: Bool

    public init(
        deviceID: String,
        anchor: String,
        beacon: BeaconID? = nil,
        proximity: Proximity? = nil,
        distance: Double? = nil,
        minDistance: Double? = nil,
        rssi: Double? = nil,
        measuredPower: Double? = nil,
        start: Timestamp,
        end: Timestamp,
        samples: Int = 0,
        testResult: Bool = false
    ) {
        self.deviceID = deviceID
        self.anchor = anchor
        self.beacon = beacon
        self.proximity = proximity
        self.distance = distance
        self.minDistance = minDistance
        self.rssi = rssi
        self.measuredPower = measuredPower
        self.start = start
        self.end = end
        self.samples = samples
        self.testResult = testResult
    }

    /// How a rotating badge's device id starts (`badge:SERIAL`).
    public static let badgePrefix = "badge:"

    /// A window the ranging closed.
    public init(_ s: InteractionSummary) {
        self.init(
            deviceID: s.deviceID,
            anchor: s.anchorKey,
            // A rotating badge's interaction keeps no beacon identity: its ids say nothing lasting,
            // and the number its windows were keyed by is the site's own.
            beacon: s.deviceID.hasPrefix(Self.badgePrefix)
                ? nil
                : BeaconID(uuid: s.beacon.uuid.description, major: Int(s.beacon.major), minor: Int(s.beacon.minor)),
            proximity: s.proximity,
            distance: s.distance.map(Self.centimetres),
            minDistance: s.minDistance.map(Self.centimetres),
            rssi: (s.rssi * 10).rounded() / 10,
            measuredPower: s.measuredPower.rounded(),
            start: Timestamp(seconds: s.start),
            end: Timestamp(seconds: s.end),
            samples: s.samples
        )
    }

    /// A stored interaction; the anchor is its parent's key.
    public init(_ doc: DocumentSnapshot) throws(ModelError) {
        let r = try FieldReader(doc)
        guard let anchor = Collections.anchor(ofInteraction: doc.path) ?? r.optionalString("anchor") else {
            throw ModelError(.missingField, path: doc.path, field: "anchor", "not under beacons/{key}/interactions")
        }
        var beacon: BeaconID?
        if let b = r.data["beacon"]?.mapValue, case .string(let uuid)? = b["uuid"],
            let major = b["major"]?.doubleValue, let minor = b["minor"]?.doubleValue
        {
            beacon = BeaconID(uuid: uuid, major: Int(major), minor: Int(minor))
        }
        self.init(
            deviceID: try r.string("deviceId"),
            anchor: anchor,
            beacon: beacon,
            proximity: r.optionalString("proximity").flatMap(Proximity.init(rawValue:)),
            distance: r.optionalDouble("distance"),
            minDistance: r.optionalDouble("minDistance"),
            rssi: r.optionalDouble("rssi"),
            measuredPower: r.optionalDouble("measuredPower"),
            start: try r.time("start"),
            end: try r.time("end"),
            samples: r.integer("samples"),
            testResult: r.bool("testResult")
        )
    }

    /// The document: docs/design.md's fields, plus the least distance and the anchor's key; `ts` is
    /// the server's commit time.
    public var data: DocumentData {
        var data: DocumentData = [
            "deviceId": .string(deviceID),
            "anchor": .string(anchor),
            "distance": distance.map(Value.double) ?? .null,
            "minDistance": minDistance.map(Value.double) ?? .null,
            "start": .timestamp(start),
            "end": .timestamp(end),
            "samples": .integer(Int64(samples)),
            "testResult": .bool(testResult),
            "ts": .serverTimestamp,
        ]
        if let beacon {
            data["beacon"] = [
                "uuid": .string(beacon.uuid), "major": .integer(Int64(beacon.major)),
                "minor": .integer(Int64(beacon.minor)),
            ]
        }
        if let proximity {
            data["proximity"] = .string(proximity.rawValue)
            data["proximityCode"] = .integer(Int64(proximity.code))
        }
        if let rssi { data["rssi"] = .double(rssi) }
        if let measuredPower { data["measuredPower"] = .integer(Int64(measuredPower)) }
        return data
    }

    static func centimetres(_ metres: Double) -> Double { (metres * 100).rounded() / 100 }
}

import TracerSite
import TracerStore

/// `beacons/{kiosk}/hearings/{emitter}-{start}`: what a kiosk heard of another advertiser of the
/// map (a kiosk advertising as a fixed beacon, or a fixed beacon) over five minutes. No person is
/// in it: the site server fits the site's radio from every kiosk's (`SiteCalibration`).
public enum Hearing {
    public static let collectionID = "hearings"

    /// The stored field names.
    public enum Field {
        public static let emitter: FieldPath = "emitter"
        public static let rssi: FieldPath = "rssi"
        public static let count: FieldPath = "count"
        public static let spread: FieldPath = "spread"
        public static let weakest: FieldPath = "weakest"
        public static let measuredPower: FieldPath = "measuredPower"
        public static let start: FieldPath = "start"
        public static let end: FieldPath = "end"
    }

    /// The document's id: one per emitter and slot, so that writing a slot again replaces it.
    public static func id(_ h: KioskHearing) -> String {
        "\(h.emitter)-\(Int64(h.start))"
    }

    public static func data(_ h: KioskHearing) -> DocumentData {
        [
            "emitter": .string(h.emitter), "rssi": .double((h.rssi * 100).rounded() / 100),
            "count": .integer(Int64(h.count)), "measuredPower": .double(h.measuredPower),
            "spread": .double((h.spread * 100).rounded() / 100), "weakest": .double(h.weakest),
            "start": .timestamp(Timestamp(seconds: h.start)), "end": .timestamp(Timestamp(seconds: h.end)),
        ]
    }

    /// A stored hearing; nil when a field is missing or not what it should be (one bad document
    /// never stops a fit).
    public static func hearing(_ doc: DocumentSnapshot) -> KioskHearing? {
        let s = doc.path.segments
        guard s.count == 4, s[0] == Beacon.collectionID, s[2] == collectionID, let data = doc.data,
            case .string(let emitter)? = data["emitter"], let rssi = data["rssi"]?.doubleValue, rssi.isFinite,
            case .integer(let count)? = data["count"], count > 0,
            let power = data["measuredPower"]?.doubleValue, power.isFinite,
            let start = data["start"]?.timestampValue, let end = data["end"]?.timestampValue
        else { return nil }
        return KioskHearing(
            receiver: s[1],
            emitter: emitter,
            rssi: rssi,
            count: Int(count),
            spread: data["spread"]?.doubleValue ?? 0,
            weakest: data["weakest"]?.doubleValue,
            measuredPower: power,
            start: start.seconds,
            end: end.seconds
        )
    }

    /// Every kiosk's hearings that end after `from` and start before `to`.
    public static func query(from: Double, to: Double) -> Query {
        Query(collectionGroup: collectionID)
            .where(Field.end, .greaterThan, .timestamp(Timestamp(seconds: from)))
            .where(Field.end, .lessThanOrEqual, .timestamp(Timestamp(seconds: to + 300)))
    }
}

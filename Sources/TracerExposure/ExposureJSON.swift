import Foundation
import TracerStore

/// Exposures and device statuses in the contract's JSON shape, shared by the command line
/// (`tracer exposure --json`, `tracer status --json`) and the HTTP API.
public enum ExposureJSON {
    /// A time as ISO 8601 with milliseconds, or null.
    public static func iso(_ v: Value?) -> Any {
        guard let t = v?.timestampValue else { return NSNull() }
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.string(from: t.date)
    }

    /// `devices/{id}/exposures/{x}` as `{"deviceId", "reportId", "beaconKey", "from", "to", ...}`.
    public static func object(_ doc: DocumentSnapshot) -> [String: Any] {
        let segments = doc.path.description.split(separator: "/")
        return [
            "deviceId": segments.count > 1 ? String(segments[1]) : "",
            "reportId": doc["reportId"]?.stringValue ?? "",
            "beaconKey": doc["beaconKey"]?.stringValue ?? "",
            "from": iso(doc["from"]),
            "to": iso(doc["to"]),
            "separation": [
                "min": doc["separation.min"]?.doubleValue ?? 0, "max": doc["separation.max"]?.doubleValue ?? 0,
            ],
            "overlapSeconds": Int(doc["overlapSeconds"]?.doubleValue ?? 0),
        ]
    }

    /// A device's exposures, oldest first.
    public static func exposures(of device: String, store: DocumentStore) throws -> [DocumentSnapshot] {
        try store.getDocuments(Query(collection: CollectionPath("devices/\(device)/exposures")).order(by: "from"))
    }

    /// `{"deviceId", "status", "risk", "exposures": [...]}`: what a device is told. A device
    /// nobody has written of is clear, at low risk.
    public static func status(
        _ device: String,
        document doc: DocumentSnapshot,
        exposures: [DocumentSnapshot]
    ) -> [String: Any] {
        [
            "deviceId": device, "status": doc["status"]?.stringValue ?? "clear",
            "risk": doc["risk"]?.stringValue ?? "low", "exposures": exposures.map(object),
        ]
    }

    /// Exposures at a beacon from `since` on, oldest first (served by the exposures index).
    public static func atBeacon(_ key: String, since: Timestamp?, store: DocumentStore) throws -> [DocumentSnapshot] {
        try store.getDocuments(
            Query(collectionGroup: "exposures").where("beaconKey", .equal, .string(key))
                .where("from", .greaterThanOrEqual, .timestamp(since ?? Timestamp(seconds: 0))).order(by: "from")
        )
    }

    /// Compact JSON with sorted keys.
    public static func json(_ object: Any) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}

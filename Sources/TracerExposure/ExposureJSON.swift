import Foundation
import TracerModel
import TracerStore

/// Exposures and device statuses in the contract's JSON shape, shared by the command line
/// (`tracer exposure --json`, `tracer status --json`) and the HTTP API.
public enum ExposureJSON {
    /// A time as ISO 8601 with milliseconds, or null.
    public static func iso(_ v: Value?) -> Value {
        guard let t = v?.timestampValue else { return .null }
        return .string(t.iso8601Milliseconds)
    }

    /// `devices/{id}/exposures/{x}` as `{"deviceId", "reportId", "beaconKey", "from", "to", ...}`.
    /// Fields are read by key, not parsed as field paths: this runs for every exposure served.
    public static func value(_ doc: DocumentSnapshot) -> Value {
        let data = doc.data ?? [:]
        let separation = data["separation"]?.mapValue ?? [:]
        return .map([
            "deviceId": .string(Collections.device(ofExposure: doc.path) ?? ""),
            "reportId": .string(data["reportId"]?.stringValue ?? ""),
            "beaconKey": .string(data["beaconKey"]?.stringValue ?? ""),
            "from": iso(data["from"]),
            "to": iso(data["to"]),
            "separation": .map([
                "min": .double(separation["min"]?.doubleValue ?? 0),
                "max": .double(separation["max"]?.doubleValue ?? 0),
            ]),
            "overlapSeconds": .integer(Int64(saturating: data["overlapSeconds"]?.doubleValue ?? 0)),
        ])
    }

    /// A device's exposures, oldest first.
    public static func exposures(of device: String, store: DocumentStore) throws -> [DocumentSnapshot] {
        try store.getDocuments(Exposure.of(device: device))
    }

    /// `{"deviceId", "status", "risk", "colocatedMinutes", "exposures": [...]}`: what a device is
    /// told. A device nobody has written of is clear, at low risk.
    public static func status(
        _ device: String,
        document doc: DocumentSnapshot,
        exposures: [DocumentSnapshot]
    ) -> Value {
        let d = DeviceStatus(doc)
        var fields: [String: Value] = [
            "deviceId": .string(device), "status": .string(d.status.rawValue),
            "risk": .string(d.risk.rawValue), "colocatedMinutes": .double(d.colocatedMinutes),
            "exposures": .array(exposures.map(value)),
        ]
        // The device's own latest report, while the health team reviews it and once decided.
        if case .map(let report)? = doc["report"] { fields["report"] = .map(report) }
        return .map(fields)
    }

    /// Exposures at a beacon from `since` on, oldest first (served by the exposures index).
    public static func atBeacon(_ key: String, since: Timestamp?, store: DocumentStore) throws -> [DocumentSnapshot] {
        try store.getDocuments(Exposure.at(beacon: key, since: since ?? Timestamp(seconds: 0)))
    }

    /// Compact JSON with sorted keys (the store's writer: no Foundation on the way).
    public static func json(_ value: Value) -> String { JSON.string(value) }
}

import Foundation
import TracerAPI
import TracerModel
import TracerSite
import TracerStore

/// Exposures and device statuses in the contract's JSON shape, shared by the command line
/// (`tracer exposure --json`, `tracer status --json`) and the HTTP API.
public enum ExposureJSON {
    /// A time as ISO 8601 with milliseconds, or null.
    public static func iso(_ v: Value?) -> Value {
        guard let t = v?.timestampValue else { return .null }
        return .string(t.iso8601Milliseconds)
    }

    /// `devices/{id}/exposures/{x}` as the contract's `Exposure`. Fields are read by key, not
    /// parsed as field paths: this runs for every exposure served.
    public static func exposure(_ doc: DocumentSnapshot) -> Responses.Exposure {
        let data = doc.data ?? [:]
        let separation = data["separation"]?.mapValue ?? [:]
        return Responses.Exposure(
            deviceId: Collections.device(ofExposure: doc.path) ?? "",
            reportId: data["reportId"]?.stringValue ?? "",
            beaconKey: data["beaconKey"]?.stringValue ?? "",
            from: data["from"]?.timestampValue?.iso8601Milliseconds,
            to: data["to"]?.timestampValue?.iso8601Milliseconds,
            separation: .init(
                min: separation["min"]?.doubleValue ?? 0,
                max: separation["max"]?.doubleValue ?? 0
            ),
            overlapSeconds: Int64(saturating: data["overlapSeconds"]?.doubleValue ?? 0),
            chance: data["chance"]?.doubleValue
        )
    }

    /// A device's exposures, oldest first.
    public static func exposures(of device: String, in db: some StoreReads) throws -> [DocumentSnapshot] {
        try db.getDocuments(Exposure.of(device: device))
    }

    /// What a device is told (the contract's `DeviceStatus`). A device nobody has written of
    /// is clear, at low risk.
    public static func status(
        _ device: String,
        document doc: DocumentSnapshot,
        exposures: [DocumentSnapshot]
    ) -> Responses.DeviceStatus {
        let d = DeviceStatus(doc)
        // The device's own latest report, while the health team reviews it and once decided.
        let report = doc["report"].flatMap { r -> Responses.DeviceStatus.Report? in
            guard let id = r["id"]?.stringValue, let status = r["status"]?.stringValue else { return nil }
            return .init(id: id, status: status, note: r["note"]?.stringValue, flagging: r["flagging"]?.stringValue)
        }
        return Responses.DeviceStatus(
            deviceId: device,
            status: d.status.rawValue,
            risk: d.risk.rawValue,
            colocatedMinutes: d.colocatedMinutes,
            exposures: exposures.map(exposure),
            report: report
        )
    }

    /// Exposures at a beacon from `since` on, oldest first (served by the exposures index).
    public static func atBeacon(_ key: String, since: Timestamp?, in db: some StoreReads) throws -> [DocumentSnapshot] {
        try db.getDocuments(Exposure.at(beacon: key, since: since ?? Timestamp(seconds: 0)))
    }

    /// Who was flagged for one report, and where (nil: no such report), oldest first.
    public static func forReport(_ id: String, in db: some StoreReads) throws -> Responses.ReportExposures? {
        let doc = try db.get(try Collections.report(id))
        guard doc.exists, let report = try? Report(doc) else { return nil }
        let exposures = try db.getDocuments(Exposure.of(report: id)).map(exposure)
            .sorted { ($0.from ?? "", $0.deviceId) < ($1.from ?? "", $1.deviceId) }
        return Responses.ReportExposures(
            reportId: id,
            deviceId: report.deviceID,
            status: report.status.rawValue,
            exposures: exposures,
            visits: try visits(of: report.deviceID, before: report.collectedAt ?? report.createdAt, in: db)
        )
    }

    /// Where a device was in the `lookback` before `time` (or the last 14 days), by the
    /// device index: its windows at each anchor, those within `gap` of each other joined.
    public static func visits(
        of device: String,
        before time: Timestamp?,
        lookback: Double = 14 * 86_400,
        gap: Double = 300,
        in db: some StoreReads
    ) throws -> [Responses.ReportExposures.Visit] {
        let end = time?.seconds ?? Date().timeIntervalSince1970
        let windows = try db.getDocuments(
            Query.interactions.where(Interaction.Field.deviceID, .equal, .string(device))
                .where(Interaction.Field.start, .greaterThanOrEqual, .timestamp(Timestamp(seconds: end - lookback)))
                .order(by: Interaction.Field.start)
        ).compactMap { try? Interaction($0) }
        var visits: [(anchor: String, from: Timestamp, to: Timestamp)] = []
        var open: [String: Int] = [:]
        for w in windows {
            if let i = open[w.anchor], w.start.seconds - visits[i].to.seconds <= gap {
                visits[i].to = max(visits[i].to, w.end)
            } else {
                open[w.anchor] = visits.count
                visits.append((w.anchor, w.start, w.end))
            }
        }
        return visits.map {
            .init(beaconKey: $0.anchor, from: $0.from.iso8601Milliseconds, to: $0.to.iso8601Milliseconds)
        }
    }

    /// Why `key` is no beacon of this site (nil: it is one): not an anchor of the site published
    /// in the store, nor a beacon anything was ranged at. The closest known keys are named.
    public static func unknownBeacon(_ key: String, site: Site? = nil, in db: some StoreReads) throws -> String? {
        var keys = Set(site?.anchors.map(\.key) ?? [])
        keys.formUnion(try PublishedSite.load(from: db)?.site.anchors.map(\.key) ?? [])
        keys.formUnion(try db.getDocuments(Query(collection: CollectionPath(Beacon.collectionID))).map(\.id))
        guard !keys.contains(key) else { return nil }
        return keys.isEmpty
            ? "no beacon \(key): this store knows none (no site published, nothing ranged yet)"
            : "no beacon \(key): the closest known are \(Closest.to(key, in: keys).joined(separator: ", "))"
    }

    /// Compact JSON with sorted keys (the store's writer: no Foundation on the way).
    public static func json(_ value: Value) -> String { JSON.string(value) }
}

import Foundation
import TracerAPI
import TracerExposure
import TracerModel
import TracerSite
import TracerStore

/// The reads behind the exposure routes, shared with the command line's own reading of a store
/// (`tracer exposure`, `tracer status` without `--server`): what they answer is the contract's
/// types (`Components.Schemas`), made from the stored documents (`TracerAPI`).
public enum ExposureViews {
    /// A device's exposures, oldest first.
    public static func exposures(of device: String, in db: some StoreReads) throws -> [DocumentSnapshot] {
        try db.getDocuments(Exposure.of(device: device))
    }

    /// Exposures at a beacon from `since` on, oldest first (served by the exposures index).
    public static func atBeacon(_ key: String, since: Timestamp?, in db: some StoreReads) throws -> [DocumentSnapshot] {
        try db.getDocuments(Exposure.at(beacon: key, since: since ?? Timestamp(seconds: 0)))
    }

    /// Who was flagged for one report, and where (nil: no such report), oldest first.
    public static func forReport(_ id: String, in db: some StoreReads) throws -> Components.Schemas.ReportExposures? {
        let doc = try db.get(try Collections.report(id))
        guard doc.exists, let report = try? Report(doc) else { return nil }
        let docs = try db.getDocuments(Exposure.of(report: id))
        let exposures = docs.map(Components.Schemas.Exposure.init)
            .sorted { ($0.from ?? "", $0.deviceId) < ($1.from ?? "", $1.deviceId) }
        return Components.Schemas.ReportExposures(
            reportId: id,
            deviceId: report.deviceID,
            status: .init(rawValue: report.status.rawValue) ?? .pending,
            exposures: exposures,
            told: try told(docs, in: db),
            visits: try visits(of: report.deviceID, before: report.collectedAt ?? report.createdAt, in: db)
        )
    }

    /// Per device flagged by these exposures: whether a card of it was opened (an unrevoked
    /// link token with `linkedAt`), and when its page first read its status after the newest of
    /// them (`devices/{id}.seenAt`, which the device route writes then), and when a push service
    /// last took a push for one of its browsers after it (`deliveredAt` on its subscriptions), so
    /// the health team knows whom to call.
    static func told(
        _ exposures: [DocumentSnapshot],
        in db: some StoreReads
    ) throws -> [Components.Schemas.ReportExposures.ToldPayloadPayload] {
        var newest: [String: Double] = [:]
        for doc in exposures {
            guard let device = Collections.device(ofExposure: doc.path) else { continue }
            let flagged = doc[FieldPath(stringLiteral: Exposure.Field.flaggedAt)]?.timestampValue?.seconds ?? 0
            newest[device] = max(newest[device] ?? 0, flagged)
        }
        guard !newest.isEmpty else { return [] }
        let opened = Set(try TokenStore.cards(in: db).filter { $0.linkedAt != nil }.compactMap(\.deviceID))
        return try newest.keys.sorted().map { device in
            let seen = try db.get(try Collections.device(device))["seenAt"]?.timestampValue
            let after = seen.flatMap { $0.seconds >= newest[device] ?? .infinity ? $0 : nil }
            let pushed = try db.getDocuments(Query(collection: try Collections.pushSubscriptions(of: device)))
                .compactMap { $0[FieldPath(stringLiteral: PushSubscription.Field.deliveredAt)]?.timestampValue }
                .filter { $0.seconds >= newest[device] ?? .infinity }.max { $0.seconds < $1.seconds }
            return .init(
                deviceId: device,
                cardOpened: opened.contains(device),
                seenAt: after?.iso8601Milliseconds,
                pushedAt: pushed?.iso8601Milliseconds
            )
        }
    }

    /// Where a device was in the `lookback` before `time` (or the last 14 days), by the
    /// device index: its windows at each anchor, those within `gap` of each other joined.
    public static func visits(
        of device: String,
        before time: Timestamp?,
        lookback: Double = 14 * 86_400,
        gap: Double = 300,
        in db: some StoreReads
    ) throws -> [Components.Schemas.ReportExposures.VisitsPayloadPayload] {
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
}

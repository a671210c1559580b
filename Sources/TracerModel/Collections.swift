import TracerStore

/// The collections of docs/design.md's data model, and the paths into them: the only place in tracer
/// where a collection's name is spelled.
///
/// Builders take ids as single segments and validate them (`"a/b"` is an error naming the
/// collection, not a path one level deeper), so a device id from a URL or a report can never
/// reach outside its collection.
public enum Collections {
    /// `beacons`: one document per anchor of the site.
    public static let beacons = root(Beacon.collectionID)
    /// `reports`: self-reports.
    public static let reports = root(Report.collectionID)
    /// `devices`: each device's status.
    public static let devices = root(DeviceStatus.collectionID)
    /// `tokens`: API tokens, by hash.
    public static let tokens = root(TokenRecord.collectionID)
    /// `audit`: the admin requests served.
    public static let audit = root(AuditEntry.collectionID)

    /// `kiosks`: each replicating kiosk's sync state, as the site server sees it.
    public static let kiosks = root(KioskSync.collectionID)

    /// `kiosks/{anchor}`.
    public static func kiosk(_ anchor: String) throws(StoreError) -> DocumentPath {
        try kiosks.document(anchor)
    }

    /// `config`: the site's settings.
    public static let config = root(PublishedSite.collectionID)

    /// `config/site`: the published BeaconMap.
    public static var site: DocumentPath {
        do { return try config.document(PublishedSite.documentID) } catch { preconditionFailure("\(error)") }
    }

    /// `badges`: the site's badges (serial, number, key generation).
    public static let badges = root(BadgeRegistry.collectionID)

    /// `config/badgeKeys`: the site's badge keys (the site server's store only).
    public static var badgeKeys: DocumentPath {
        do { return try config.document("badgeKeys") } catch { preconditionFailure("\(error)") }
    }

    /// `badgeIDs`: the days of badge ids a kiosk holds.
    public static let badgeIDs = root(BadgeIDDays.collectionID)

    /// `flaggings`: each report's flagging, while it runs and once done, so that the desk that
    /// recorded a report and the flagger that saw it arrive decide it once between them.
    public static let flaggings = root(Flagging.collectionID)

    /// `flaggings/{reportId}`.
    public static func flagging(_ reportID: String) throws(StoreError) -> DocumentPath {
        try flaggings.document(reportID)
    }

    /// `beacons/{key}`.
    public static func beacon(_ key: String) throws(StoreError) -> DocumentPath {
        try beacons.document(key)
    }

    /// `beacons/{key}/interactions`.
    public static func interactions(at anchor: String) throws(StoreError) -> CollectionPath {
        try beacon(anchor).collection(Interaction.collectionID)
    }

    /// `beacons/{kiosk}/hearings`: what a kiosk heard of the map's other advertisers.
    public static func hearings(at kiosk: String) throws(StoreError) -> CollectionPath {
        try beacon(kiosk).collection(Hearing.collectionID)
    }

    /// `reports/{id}`.
    public static func report(_ id: String) throws(StoreError) -> DocumentPath {
        try reports.document(id)
    }

    /// `devices/{id}`.
    public static func device(_ id: String) throws(StoreError) -> DocumentPath {
        try devices.document(id)
    }

    /// `devices/{id}/exposures`.
    public static func exposures(of device: String) throws(StoreError) -> CollectionPath {
        try self.device(device).collection(Exposure.collectionID)
    }

    /// `devices/{id}/push`: the browsers that asked to be told of the device's changes (Web Push).
    public static func pushSubscriptions(of device: String) throws(StoreError) -> CollectionPath {
        try self.device(device).collection("push")
    }

    /// `config/push`: the site's Web Push (VAPID) key.
    public static var pushKey: DocumentPath {
        do { return try config.document("push") } catch { preconditionFailure("\(error)") }
    }

    /// `config/watchKey`: the key the server signs watch tickets with (never leaves the server).
    public static var watchKey: DocumentPath {
        do { return try config.document("watchKey") } catch { preconditionFailure("\(error)") }
    }

    /// `tokens/{id}`.
    public static func token(_ id: String) throws(StoreError) -> DocumentPath {
        try tokens.document(id)
    }

    /// The anchor an interaction belongs to: `beacons/{key}/interactions/{id}` → key.
    public static func anchor(ofInteraction path: DocumentPath) -> String? {
        let s = path.segments
        guard s.count == 4, s[0] == Beacon.collectionID, s[2] == Interaction.collectionID else { return nil }
        return s[1]
    }

    /// The device an exposure belongs to: `devices/{id}/exposures/{x}` → id.
    public static func device(ofExposure path: DocumentPath) -> String? {
        let s = path.segments
        guard s.count == 4, s[0] == DeviceStatus.collectionID, s[2] == Exposure.collectionID else { return nil }
        return s[1]
    }

    /// A top-level collection from a constant name.
    private static func root(_ id: String) -> CollectionPath {
        // The names are this file's constants: a failure here is a typo caught by the first test.
        do { return try CollectionPath(id) } catch { preconditionFailure("\(error)") }
    }
}

extension Query {
    /// Every interaction at every anchor.
    public static var interactions: Query { Query(collectionGroup: Interaction.collectionID) }
    /// Every exposure of every device.
    public static var exposures: Query { Query(collectionGroup: Exposure.collectionID) }
}

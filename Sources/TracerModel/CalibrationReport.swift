import TracerSite
import TracerStore

/// The site's calibration as a person reads it (`tracer site calibration`): the last hour's fit
/// of every kiosk, and the kiosks whose receiver moved in the last half hour against the three
/// hours before it (re-mounted, turned, put in a new enclosure).
public struct CalibrationReport: Sendable {
    /// The time it is fitted up to.
    public var at: Double
    public var fit: SiteCalibration.Fit
    public var changes: [SiteCalibration.Change]

    /// The span of the fit, the recent span and the span it is compared with, seconds.
    public static let span = 3600.0
    public static let recent = 1800.0
    public static let baseline = 3 * 3600.0

    /// The report at `at` from the store's hearings; nil when no kiosk heard another anchor of
    /// the map in the hour before it. With `exponent`, the exponent is held there, not fitted.
    public static func make(
        in db: some StoreReads,
        site: Site,
        at: Double,
        exponent: Double? = nil
    ) throws -> CalibrationReport? {
        let hearings = try db.getDocuments(Hearing.query(from: at - recent - baseline, to: at))
            .compactMap(Hearing.hearing)
        guard let fit = SiteCalibration.fit(hearings, site: site, from: at - span, to: at, exponent: exponent)
        else { return nil }
        let changes = SiteCalibration.changes(
            hearings,
            site: site,
            before: (at - recent - baseline)...(at - recent),
            recent: (at - recent)...at
        )
        return CalibrationReport(at: at, fit: fit, changes: changes)
    }

    /// When the store's last hearing ended (nil: none).
    public static func latest(in db: some StoreReads) throws -> Double? {
        try db.getDocuments(
            Query(collectionGroup: Hearing.collectionID).order(by: Hearing.Field.end, descending: true).limit(1)
        ).first.flatMap { $0.data?["end"]?.timestampValue?.seconds }
    }
}

import Synchronization
import TracerColocation
import TracerModel
import TracerSite
import TracerStore

/// Kiosks range with their own calibrations (fitted from fixed beacons, or followed from the site
/// server's fit of the kiosks hearing each other; `beacons/{key}.calibration`, replicated to the
/// site server), and a window's distance is ranged with the offset its kiosk used. So where a kiosk
/// stops hearing a badge — the silence positions weigh — moves with that offset, not the map's.
extension ExposureEngine {
    /// The receiver offsets kiosks range with where the store holds a calibration of their own
    /// (by kiosk key, dB), under `plan`: a calibration made under another of the map's offsets
    /// for its kiosk is set aside, as the kiosk itself sets it aside (`Beacon.Calibration
    /// .isSetAside`), one beyond what a map may give (±40 dB, `Anchor.receiverOffsets`) is not
    /// taken, and anchors the plan does not name as kiosks are not read.
    public static func kioskOffsets(for plan: Plan, in db: some StoreReads) throws -> [String: Double] {
        let kiosks = Dictionary(
            plan.receivers.filter { $0.kind == .kiosk }.map { ($0.key, $0.mapOffset) },
            uniquingKeysWith: { first, _ in first }
        )
        guard !kiosks.isEmpty else { return [:] }
        var offsets: [String: Double] = [:]
        for doc in try db.reader.getDocuments(Query(collection: Collections.beacons)) {
            guard let mapOffset = kiosks[doc.id], let c = Beacon.Calibration(doc),
                !c.isSetAside(byMapOffset: mapOffset), Anchor.receiverOffsets.contains(c.receiverOffset)
            else { continue }
            offsets[doc.id] = c.receiverOffset
        }
        return offsets
    }

    /// The plan positions place people with now: the policy's, with the kiosks' own calibrations
    /// in the store (nil when the policy does not place people by positions).
    public func plan(in db: some StoreReads) throws -> Plan? {
        guard colocation.positioning != nil, let plan = colocation.policy.plan else { return nil }
        return plan.calibrated(try Self.kioskOffsets(for: plan, in: db))
    }

    /// The rule to flag with now: the policy's, or, where kiosks range with calibrations of their
    /// own, the same rule on the plan they give (kept across reports while they stand, so that
    /// its rooms' grids are worked out once).
    func colocation(in db: some StoreReads) throws -> Colocation {
        guard let plan = try plan(in: db), plan != colocation.policy.plan else { return colocation }
        return calibrated.colocation(plan, policy: colocation.policy)
    }
}

/// The rule under the kiosks' calibrations last asked for (`ExposureEngine.colocation(in:)`).
final class CalibratedColocation: Sendable {
    private let last = Mutex<Colocation?>(nil)

    /// The rule kept, if any.
    var kept: Colocation? { last.withLock { $0 } }

    func colocation(_ plan: Plan, policy: ExposurePolicy) -> Colocation {
        var policy = policy
        policy.plan = plan
        return last.withLock { last in
            // The whole policy: an engine's policy may change while the calibrations stand.
            if let kept = last, kept.policy == policy { return kept }
            let made = Colocation(policy: policy)
            last = made
            return made
        }
    }
}

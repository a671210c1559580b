import Foundation

/// RSSI to metres.
public enum DistanceModel: Sendable, Hashable {
    /// Log-distance path loss: d = 10^((P − RSSI) / (10·n)); n ≈ 2 in free space, 2.5–4 indoors.
    case logDistance(exponent: Double)
    /// AltBeacon's curve fit (Nexus 4): ratio = RSSI/P; d = ratio^10 below 1, else
    /// 0.89976·ratio^7.7095 + 0.111.
    case altBeaconCurve

    /// The default: log-distance with n = 2.
    public static let standard = DistanceModel.logDistance(exponent: 2)

    /// The distance in metres for a (smoothed) RSSI and the measured power at 1 m, both dBm,
    /// after adding the receiver's calibration offset to the RSSI. Nil without a usable reading.
    public func distance(rssi: Double, measuredPower: Double, receiverOffset: Double = 0) -> Double? {
        let r = rssi + receiverOffset
        guard r < 0, r > -127, measuredPower < 0, measuredPower > -127 else { return nil }
        switch self {
        case .logDistance(let n):
            guard n > 0 else { return nil }
            return pow(10, (measuredPower - r) / (10 * n))
        case .altBeaconCurve:
            let ratio = r / measuredPower
            return ratio < 1 ? pow(ratio, 10) : 0.89976 * pow(ratio, 7.7095) + 0.111
        }
    }
}

/// CoreLocation's proximity classes, with the codes the original app stored.
public enum Proximity: String, Sendable, CaseIterable, Comparable {
    case immediate, near, far, unknown

    /// 1 immediate, 2 near, 3 far, 0 unknown.
    public var code: Int {
        switch self {
        case .immediate: 1
        case .near: 2
        case .far: 3
        case .unknown: 0
        }
    }

    /// Closer classes sort first; unknown last.
    public static func < (a: Proximity, b: Proximity) -> Bool {
        (a.code == 0 ? 4 : a.code) < (b.code == 0 ? 4 : b.code)
    }
}

/// Where immediate ends and far begins, per site.
public struct ProximityThresholds: Sendable, Hashable, Codable {
    /// Below this: immediate (m).
    public var immediate: Double = 0.5
    /// Up to this: near; beyond: far (m).
    public var near: Double = 3

    public init(immediate: Double = 0.5, near: Double = 3) {
        self.immediate = immediate
        self.near = near
    }

    /// The class of a distance; unknown without one.
    public func classify(_ distance: Double?) -> Proximity {
        guard let d = distance, d.isFinite, d >= 0 else { return .unknown }
        if d < immediate { return .immediate }
        if d <= near { return .near }
        return .far
    }
}

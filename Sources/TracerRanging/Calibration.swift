import Foundation

/// A fit of the log-distance model to readings taken at known distances:
/// rssi − P = offset − 10·n·log10(d), solved by least squares for n and the receiver offset.
public struct PathLossFit: Sendable, Equatable {
    /// The path-loss exponent n.
    public var exponent: Double
    /// dB to add to readings so that the advert's measured power holds at 1 m (the receiver's
    /// calibration; the negative of `offset` in the equation above).
    public var receiverOffset: Double
    /// How many readings it rests on.
    public var samples: Int
    /// The spread of single readings around the fitted line (dB).
    public var residual: Double

    /// Fits readings (true distance in metres, rssi dBm, measured power dBm). Nil with fewer than
    /// two distinct distances, or a slope that is not a loss.
    public static func fit(_ readings: [(distance: Double, rssi: Double, measuredPower: Double)]) -> PathLossFit? {
        let points = readings.filter { $0.distance > 0.05 }.map {
            (x: -10 * log10($0.distance), y: $0.rssi - $0.measuredPower)
        }
        guard points.count >= 2 else { return nil }
        let n = Double(points.count)
        let mx = points.reduce(0) { $0 + $1.x } / n
        let my = points.reduce(0) { $0 + $1.y } / n
        let sxx = points.reduce(0) { $0 + ($1.x - mx) * ($1.x - mx) }
        guard sxx > 1e-9 else { return nil }
        let sxy = points.reduce(0) { $0 + ($1.x - mx) * ($1.y - my) }
        let slope = sxy / sxx
        let intercept = my - slope * mx
        guard slope > 0.1 else { return nil }
        let residual = sqrt(points.reduce(0) { $0 + pow($1.y - (intercept + slope * $1.x), 2) } / n)
        return PathLossFit(exponent: slope, receiverOffset: -intercept, samples: points.count, residual: residual)
    }

    /// The exponents a building's path loss takes (free space 2, 1.6–1.8 along corridors, up to
    /// 4 through furniture and people). A free fit outside them is a body shadowing the receiver,
    /// not the building: on pc-ng's captures it finds n = 0.4–0.9 with a phone in a pocket or a
    /// backpack, whose readings hardly fall with distance.
    public static let plausibleExponents = 1.5...4.5

    /// Whether this fit's exponent is one a building has.
    public var isPlausible: Bool { Self.plausibleExponents.contains(exponent) }

    /// The receiver offset alone at a given exponent: the median of every reading's offset, so
    /// that readings shadowed by a body or a passer-by (which read low) move it little. Nil with
    /// no reading.
    public static func fit(
        _ readings: [(distance: Double, rssi: Double, measuredPower: Double)],
        exponent: Double
    ) -> PathLossFit? {
        let offsets = readings.filter { $0.distance > 0.05 }.map {
            $0.measuredPower - 10 * exponent * log10($0.distance) - $0.rssi
        }
        guard let offset = median(offsets) else { return nil }
        let residual = sqrt(offsets.reduce(0) { $0 + ($1 - offset) * ($1 - offset) } / Double(offsets.count))
        return PathLossFit(exponent: exponent, receiverOffset: offset, samples: offsets.count, residual: residual)
    }

    public static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let s = values.sorted()
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }
}

/// A kiosk's receiver offset, fitted continuously from the map's fixed beacons it hears at known
/// distances (its calibration references): every reference's readings are averaged over 30 s
/// windows, each window gives the offset that would put it on the distance model, and the
/// offset is the median of the last hour's windows across references.
///
/// The median makes it robust: a person standing in front of a beacon for a while, or a door
/// propped open, moves a minority of windows, not the median. A value type with no I/O: the
/// daemon feeds it and stores what it says.
public struct RunningCalibration: Sendable {
    /// A reference: its plan distance from the kiosk.
    public struct Reference: Sendable, Equatable {
        public var distance: Double

        public init(distance: Double) {
            self.distance = distance
        }
    }

    public let references: [String: Reference]
    public let exponent: Double
    /// Seconds per window.
    public let window: Double
    /// Windows kept (all references together): an hour of 30 s windows from two references.
    public let capacity: Int
    /// Windows needed before the fit is used.
    public let minimumWindows: Int

    /// Closed windows' offsets, oldest first.
    public private(set) var offsets: [Double] = []
    /// Windows closed since the start.
    public private(set) var windowsSeen = 0
    /// The receiver's offset (dB to add to its readings), once `minimumWindows` have closed:
    /// the median of `offsets`, computed as a window closes (readings arrive many times a second).
    public private(set) var offset: Double?
    private var open: [String: (slot: Double, sum: Double, count: Int)] = [:]

    public init(
        references: [String: Reference],
        exponent: Double,
        window: Double = 30,
        capacity: Int = 240,
        minimumWindows: Int = 6
    ) {
        self.references = references
        self.exponent = exponent
        self.window = window
        self.capacity = capacity
        self.minimumWindows = minimumWindows
    }

    /// A reading of a reference with the power it claims at 1 m (the advert's, or the map's
    /// override); readings of keys that are no reference are ignored. Readings come in time order.
    public mutating func add(reference key: String, rssi: Double, measuredPower: Double, at time: Double) {
        guard let r = references[key] else { return }
        let slot = (time / window).rounded(.down)
        let offset = measuredPower - 10 * exponent * log10(max(r.distance, 0.1)) - rssi
        if let o = open[key], o.slot == slot {
            open[key] = (slot, o.sum + offset, o.count + 1)
            return
        }
        if let o = open[key] { close(o.sum / Double(o.count)) }
        open[key] = (slot, offset, 1)
    }

    private mutating func close(_ offset: Double) {
        offsets.append(offset)
        windowsSeen += 1
        if offsets.count > capacity { offsets.removeFirst(offsets.count - capacity) }
        if offsets.count >= minimumWindows { self.offset = PathLossFit.median(offsets) }
    }
}

/// Distance errors of windowed estimates against the truth, grouped by true distance.
public struct DistanceErrors: Sendable {
    /// (true distance, estimated distance) per window.
    public var pairs: [(truth: Double, estimate: Double)] = []

    public init() {}

    /// Median absolute error and the median estimate of windows whose true distance lies within
    /// `tolerance` of `distance`; nil when there are none.
    public func at(
        _ distance: Double,
        tolerance: Double = 0.25
    ) -> (count: Int, medianError: Double, medianEstimate: Double)? {
        let near = pairs.filter { abs($0.truth - distance) <= tolerance }
        guard !near.isEmpty else { return nil }
        let errors = near.map { abs($0.estimate - $0.truth) }.sorted()
        let estimates = near.map(\.estimate).sorted()
        return (near.count, errors[errors.count / 2], estimates[estimates.count / 2])
    }
}

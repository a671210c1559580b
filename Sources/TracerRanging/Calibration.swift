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

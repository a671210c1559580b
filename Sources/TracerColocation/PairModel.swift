import Foundation

/// The pair decision: the chance that a neighbour was within the radius of the reporter, in the
/// same room, within the window of each other, somewhere in one stretch of `Evidence` — a
/// logistic model over what the stretch's pairs say together (their chances, by distances and
/// by positions; the neighbour's chance of being in the room; how long both were heard; the
/// closest bounds; the two badges' readings compared kiosk by kiosk).
///
/// Fitted by `Tools/bench/pair-model` on random sites nobody reports on (seeds 1001–1008), and
/// checked there site by site (fitted on seven, judged on the eighth); reported on seeds 1–20
/// (EFFICACY.md, "One decision over the window"). Its weights are data
/// (`PairModel+Fitted.swift`, written by the fit); this code only reads them.
public struct PairModel: Sendable, Equatable {
    /// The features' names, in the weights' order (the first is the constant).
    public static let names = [
        "constant", "best", "mean", "bestJoint", "roomMean", "roomHigh", "near", "pairs", "together", "low", "high",
        "gap", "common", "compared", "byPositions", "bestByPositions",
    ]
    public var weights: [Double]

    public init(weights: [Double]) {
        precondition(weights.count == Self.names.count, "a pair model has \(Self.names.count) weights")
        self.weights = weights
    }

    /// The features of one stretch of evidence, as the fit computed them.
    public static func features(_ e: Evidence) -> [Double] {
        func logit(_ p: Double) -> Double {
            let q = min(max(p, 0.001), 0.999)
            return log(q / (1 - q))
        }
        return [
            1,
            logit(e.best),
            logit(e.mean),
            logit(e.bestJoint),
            logit(e.roomMean),
            logit(e.roomHigh),
            log1p(Double(e.near)),
            log1p(Double(e.pairs)),
            log1p(e.together / 30),
            min(e.low, 20) / 6,
            min(e.high, 30) / 6,
            min(e.gap, 3),
            Double(e.common),
            e.compared > 0 ? 1 : 0,
            log1p(Double(e.byPositions)),
            e.byPositions > 0 ? logit(e.bestByPositions) : 0,
        ]
    }

    /// The chance, from 0 to 1.
    public func chance(_ e: Evidence) -> Double {
        let x = Self.features(e)
        var z = 0.0
        for i in weights.indices { z += weights[i] * x[i] }
        return 1 / (1 + exp(-z))
    }
}

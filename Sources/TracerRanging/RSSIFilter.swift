/// How RSSI samples are smoothed, selectable per site.
public enum RSSIFilterKind: String, Sendable, CaseIterable, Codable {
    /// AltBeacon's running average: the samples of the last `window` seconds, with about 10% cut
    /// from each end before averaging.
    case trimmedMean = "trimmed-mean"
    /// Auto-regressive moving average: each sample moves the estimate by `coefficient` of the
    /// difference (≈0.1 for 1 Hz adverts, 0.25–0.5 for 10 Hz).
    case arma
    /// A one-dimensional Kalman filter with constant-signal dynamics.
    case kalman
}

/// The smoothing settings of a site.
public struct RSSIFilterSettings: Sendable, Hashable, Codable {
    public var kind: RSSIFilterKind = .kalman
    /// Trimmed mean: how many seconds of samples.
    public var window: Double = 20
    /// Trimmed mean: the share cut from each end.
    public var trim: Double = 0.1
    /// ARMA: how far each sample moves the estimate.
    public var coefficient: Double = 0.1
    /// Kalman: how much the true signal may wander per second (dB²/s).
    public var processNoise: Double = 0.5
    /// Kalman: the variance of one reading (dB²).
    public var measurementNoise: Double = 16
    /// A single sample further than this from the estimate is clamped to it (dB).
    public var outlierClamp: Double = 15

    public init() {}
}

/// One (device, anchor) pair's smoothing state: a value type, fed samples in time order.
public struct RSSIFilter: Sendable {
    public let settings: RSSIFilterSettings
    private var estimate: Double?
    private var variance: Double = 0
    private var lastTime: Double = 0
    /// Trimmed mean: the samples in the window, oldest first.
    private var recent: [(time: Double, rssi: Double)] = []
    private var sortedScratch: [Double] = []

    public init(_ settings: RSSIFilterSettings) {
        self.settings = settings
    }

    /// The current smoothed RSSI, once there is one.
    public var value: Double? { estimate }

    /// Adds a reading (dBm at Unix time `time`) and returns the smoothed RSSI.
    @discardableResult
    public mutating func add(_ rssi: Double, at time: Double) -> Double {
        var sample = rssi
        if let e = estimate, settings.outlierClamp > 0 {
            // One wild reading (a reflection, a body in the way) moves the estimate only so far.
            sample = min(max(sample, e - settings.outlierClamp), e + settings.outlierClamp)
        }
        switch settings.kind {
        case .arma:
            estimate = estimate.map { $0 + settings.coefficient * (sample - $0) } ?? sample
        case .kalman:
            guard let e = estimate else {
                estimate = sample
                variance = settings.measurementNoise
                lastTime = time
                return sample
            }
            let dt = max(0, time - lastTime)
            let predicted = variance + settings.processNoise * max(dt, 0.1)
            let gain = predicted / (predicted + settings.measurementNoise)
            estimate = e + gain * (sample - e)
            variance = (1 - gain) * predicted
        case .trimmedMean:
            recent.append((time, sample))
            let cutoff = time - settings.window
            var drop = 0
            while drop < recent.count - 1, recent[drop].time < cutoff { drop += 1 }
            if drop > 0 { recent.removeFirst(drop) }
            sortedScratch.removeAll(keepingCapacity: true)
            for r in recent { sortedScratch.append(r.rssi) }
            sortedScratch.sort()
            let cut = Int(Double(sortedScratch.count) * settings.trim)
            let kept = sortedScratch[cut..<(sortedScratch.count - cut)]
            estimate = kept.reduce(0, +) / Double(kept.count)
        }
        lastTime = time
        return estimate!
    }
}

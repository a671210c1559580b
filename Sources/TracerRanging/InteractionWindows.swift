/// One reading attributed to a (device, anchor) pair.
public struct Sighting: Sendable {
    /// Unix seconds.
    public var time: Double
    /// The person's anonymous device id.
    public var deviceID: String
    /// The anchor's key in the BeaconMap.
    public var anchorKey: String
    /// The beacon whose advert was heard (the badge in gateway mode, the fixed beacon in scanner mode).
    public var beacon: IBeacon
    /// dBm as received.
    public var rssi: Double
    /// The measured power at 1 m to range against (the advert's, or the map's override).
    public var measuredPower: Double

    public init(time: Double, deviceID: String, anchorKey: String, beacon: IBeacon, rssi: Double, measuredPower: Double)
    {
        self.time = time
        self.deviceID = deviceID
        self.anchorKey = anchorKey
        self.beacon = beacon
        self.rssi = rssi
        self.measuredPower = measuredPower
    }
}

/// What one window of sightings of one device at one anchor comes to: one interaction document.
public struct InteractionSummary: Sendable, Equatable {
    public var deviceID: String
    public var anchorKey: String
    public var beacon: IBeacon
    /// The first and last sighting in the window (Unix seconds).
    public var start: Double
    public var end: Double
    public var samples: Int
    /// Mean and least distance over the window's sightings with a usable reading (m).
    public var distance: Double?
    public var minDistance: Double?
    /// The closest class seen in the window.
    public var proximity: Proximity
    /// The mean smoothed RSSI (dBm).
    public var rssi: Double
    public var measuredPower: Double
}

/// How sightings become distances, classes and windows: the site's ranging settings.
public struct RangingSettings: Sendable, Hashable {
    public var filter = RSSIFilterSettings()
    public var model = DistanceModel.standard
    /// Added to every RSSI before ranging: the receiver's calibration (dB).
    public var receiverOffset: Double = 0
    public var thresholds = ProximityThresholds()
    /// Seconds summarised by one interaction document; windows are aligned to multiples of it.
    public var window: Double = 30
    /// A device unseen this long has its window closed early (s).
    public var lostAfter: Double = 10

    public init() {}
}

/// Per (device, anchor): smoothing state and the open window; emits a summary for each window
/// that ends. A value-type state machine with no I/O: the daemon writes what it returns.
public struct InteractionWindows: Sendable {
    public let settings: RangingSettings
    private var open: [Pair: Window] = [:]
    private var lastExpiry: Double = -.infinity

    struct Pair: Hashable, Sendable {
        var device: String
        var anchor: String
    }

    struct Window: Sendable {
        var filter: RSSIFilter
        var slot: Double
        var start: Double
        var end: Double
        var samples = 0
        var distanceSum = 0.0
        var distanceCount = 0
        var minDistance: Double?
        var rssiSum = 0.0
        var closest = Proximity.unknown
        var beacon: IBeacon
        var measuredPower: Double
    }

    public init(settings: RangingSettings) {
        self.settings = settings
    }

    /// How many (device, anchor) pairs are being tracked.
    public var openCount: Int { open.count }

    /// Adds a sighting; returns the summaries of windows it ends (its own pair's previous
    /// window, and, at most once a second, pairs unseen for `lostAfter`).
    public mutating func add(_ s: Sighting, into out: inout [InteractionSummary]) {
        let pair = Pair(device: s.deviceID, anchor: s.anchorKey)
        let slot = (s.time / settings.window).rounded(.down) * settings.window
        var window: Window
        if var existing = open[pair] {
            if slot != existing.slot || s.time - existing.end > settings.lostAfter {
                out.append(summary(pair, existing))
                let lost = s.time - existing.end > settings.lostAfter
                existing = Window(
                    filter: lost ? RSSIFilter(settings.filter) : existing.filter,
                    slot: slot,
                    start: s.time,
                    end: s.time,
                    beacon: s.beacon,
                    measuredPower: s.measuredPower
                )
            }
            window = existing
        } else {
            window = Window(
                filter: RSSIFilter(settings.filter),
                slot: slot,
                start: s.time,
                end: s.time,
                beacon: s.beacon,
                measuredPower: s.measuredPower
            )
        }
        let smoothed = window.filter.add(s.rssi, at: s.time)
        let d = settings.model.distance(
            rssi: smoothed,
            measuredPower: s.measuredPower,
            receiverOffset: settings.receiverOffset
        )
        window.end = s.time
        window.samples += 1
        window.rssiSum += smoothed
        window.measuredPower = s.measuredPower
        if let d {
            window.distanceSum += d
            window.distanceCount += 1
            window.minDistance = min(window.minDistance ?? d, d)
        }
        window.closest = min(window.closest, settings.thresholds.classify(d))
        open[pair] = window
        if s.time - lastExpiry >= 1 { expire(now: s.time, into: &out) }
    }

    /// Closes the windows of pairs unseen for `lostAfter` seconds at `now`, forgetting them.
    public mutating func expire(now: Double, into out: inout [InteractionSummary]) {
        lastExpiry = now
        for (pair, window) in open where now - window.end > settings.lostAfter {
            out.append(summary(pair, window))
            open[pair] = nil
        }
    }

    /// Closes every open window (end of input, shutdown).
    public mutating func closeAll(into out: inout [InteractionSummary]) {
        for (pair, window) in open.sorted(by: { $0.value.start < $1.value.start }) {
            out.append(summary(pair, window))
        }
        open.removeAll()
    }

    private func summary(_ pair: Pair, _ w: Window) -> InteractionSummary {
        InteractionSummary(
            deviceID: pair.device,
            anchorKey: pair.anchor,
            beacon: w.beacon,
            start: w.start,
            end: w.end,
            samples: w.samples,
            distance: w.distanceCount > 0 ? w.distanceSum / Double(w.distanceCount) : nil,
            minDistance: w.minDistance,
            proximity: w.closest,
            rssi: w.rssiSum / Double(max(1, w.samples)),
            measuredPower: w.measuredPower
        )
    }
}

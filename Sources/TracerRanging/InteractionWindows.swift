/// One reading attributed to a (device, anchor) pair.
public struct Sighting: Sendable {
    /// Unix seconds.
    public var time: Double
    /// The person's anonymous device id: `deviceName` when this host is the device (scanner
    /// mode), else the advertising badge's `uuid:major:minor`, built only when a summary is.
    public var deviceID: String { deviceName ?? beacon.deviceID }
    /// The device's id when it is not the advertising beacon (scanner mode).
    public var deviceName: String?
    /// The anchor's key in the BeaconMap.
    public var anchorKey: String
    /// The beacon whose advert was heard (the badge in gateway mode, the fixed beacon in scanner mode).
    public var beacon: IBeacon
    /// dBm as received.
    public var rssi: Double
    /// The measured power at 1 m to range against (the advert's, or the map's override).
    public var measuredPower: Double

    public init(
        time: Double,
        deviceName: String? = nil,
        anchorKey: String,
        beacon: IBeacon,
        rssi: Double,
        measuredPower: Double
    ) {
        self.time = time
        self.deviceName = deviceName
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
    public private(set) var settings: RangingSettings
    private var open: [Pair: Window] = [:]
    private var lastExpiry: Double = -.infinity

    /// A (device, anchor) pair in fixed-size form: the advertising beacon's identity and the
    /// anchor. In gateway mode the beacon is the person's badge; in scanner mode it is the
    /// anchor's beacon and the device is this host's, one per process.
    struct Pair: Hashable, Sendable {
        var high: UInt64
        var low: UInt64
        var majorMinor: UInt32
        var anchor: String

        init(_ s: Sighting) {
            high = s.beacon.uuid.high
            low = s.beacon.uuid.low
            majorMinor = UInt32(s.beacon.major) << 16 | UInt32(s.beacon.minor)
            anchor = s.anchorKey
        }
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
        var deviceName: String?
        var anchorKey: String
        var measuredPower: Double

        init(_ s: Sighting, slot: Double, filter: RSSIFilter) {
            self.anchorKey = s.anchorKey
            self.filter = filter
            self.slot = slot
            self.start = s.time
            self.end = s.time
            self.beacon = s.beacon
            self.deviceName = s.deviceName
            self.measuredPower = s.measuredPower
        }

        /// Starts the next window in place, keeping the filter unless the device was lost.
        mutating func restart(_ s: Sighting, slot: Double, freshFilter: RSSIFilter?) {
            if let freshFilter { filter = freshFilter }
            self.slot = slot
            start = s.time
            end = s.time
            samples = 0
            distanceSum = 0
            distanceCount = 0
            minDistance = nil
            rssiSum = 0
            closest = .unknown
        }
    }

    public init(settings: RangingSettings) {
        self.settings = settings
    }

    /// How many (device, anchor) pairs are being tracked.
    public var openCount: Int { open.count }

    /// Adds a sighting; appends the summaries of windows it ends (its own pair's previous
    /// window, and, at most once a second, pairs unseen for `lostAfter`).
    /// Returns the reading's smoothed RSSI and distance (nil without a usable reading).
    @discardableResult
    public mutating func add(_ s: Sighting, into out: inout [InteractionSummary]) -> (rssi: Double, distance: Double?) {
        let pair = Pair(s)
        let slot = (s.time / settings.window).rounded(.down) * settings.window
        let index: Dictionary<Pair, Window>.Index
        if let i = open.index(forKey: pair) {
            index = i
            // Mutated in place: a copy out of the dictionary would copy the filter's buffers too.
            let lost = s.time - open.values[i].end > settings.lostAfter
            if slot != open.values[i].slot || lost {
                out.append(summary(open.values[i]))
                open.values[i].restart(s, slot: slot, freshFilter: lost ? RSSIFilter(settings.filter) : nil)
            }
        } else {
            open[pair] = Window(s, slot: slot, filter: RSSIFilter(settings.filter))
            index = open.index(forKey: pair)!
        }
        // A static function: calling a method of `self` here would copy `self`, and with it the
        // dictionary, on every sighting (it is borrowed in place just now).
        let reading = Self.update(&open.values[index], s, settings)
        if s.time - lastExpiry >= 1 { expire(now: s.time, into: &out) }
        return reading
    }

    private static func update(
        _ window: inout Window,
        _ s: Sighting,
        _ settings: RangingSettings
    ) -> (
        rssi: Double, distance: Double?
    ) {
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
        return (smoothed, d)
    }

    /// Ranges from now on with another receiver offset (a kiosk's calibration as it runs).
    public mutating func setReceiverOffset(_ offset: Double) {
        settings.receiverOffset = offset
    }

    /// Closes the windows of pairs unseen for `lostAfter` seconds at `now`, forgetting them.
    public mutating func expire(now: Double, into out: inout [InteractionSummary]) {
        lastExpiry = now
        let lostAfter = settings.lostAfter
        guard open.values.contains(where: { now - $0.end > lostAfter }) else { return }
        for (pair, window) in open where now - window.end > lostAfter {
            out.append(summary(window))
            open[pair] = nil
        }
    }

    /// Closes every open window (end of input, shutdown).
    public mutating func closeAll(into out: inout [InteractionSummary]) {
        for window in open.values.sorted(by: { $0.start < $1.start }) {
            out.append(summary(window))
        }
        open.removeAll()
    }

    private func summary(_ w: Window) -> InteractionSummary {
        InteractionSummary(
            deviceID: w.deviceName ?? w.beacon.deviceID,
            anchorKey: w.anchorKey,
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

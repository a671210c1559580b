import Foundation

/// What one kiosk heard of one other advertiser of the map (another kiosk, or a fixed beacon)
/// over a few minutes: the raw mean RSSI, before any offset of its own.
public struct KioskHearing: Sendable, Equatable {
    /// The kiosk that heard.
    public var receiver: String
    /// The anchor heard (a kiosk advertising as a fixed beacon, or a fixed beacon).
    public var emitter: String
    /// Mean RSSI, dBm, as the adapter reported it.
    public var rssi: Double
    /// Adverts it averages.
    public var count: Int
    /// Their standard deviation, and the weakest of them, dB.
    public var spread: Double
    public var weakest: Double
    /// The power the advert claims at 1 m (or the map's override), dBm.
    public var measuredPower: Double
    /// Unix seconds.
    public var start: Double
    public var end: Double

    public init(
        receiver: String,
        emitter: String,
        rssi: Double,
        count: Int,
        spread: Double = 0,
        weakest: Double? = nil,
        measuredPower: Double,
        start: Double,
        end: Double
    ) {
        self.receiver = receiver
        self.emitter = emitter
        self.rssi = rssi
        self.count = count
        self.spread = spread
        self.weakest = weakest ?? rssi
        self.measuredPower = measuredPower
        self.start = start
        self.end = end
    }
}

/// A kiosk's hearings of the map's other advertisers, kept as it ranges: each anchor's adverts
/// summed over slots of `slot` seconds (5 minutes), a slot closed when an advert of a later one
/// arrives or at the end. A value type with no I/O: the daemon drains what closed and stores it
/// beside its interactions, and the site server fits the site's radio from every kiosk's.
///
/// Means of RSSI in dB, not of power: a kiosk's windows average dB, and the fit's model is in dB.
public struct KioskHearings: Sendable {
    public let receiver: String
    public let slot: Double
    private struct Open {
        var slot: Double
        var sum: Double
        var squares: Double
        var weakest: Double
        var count: Int
        var power: Double
    }
    private var open: [String: Open] = [:]
    /// Closed slots, oldest first, until drained.
    public private(set) var closed: [KioskHearing] = []

    public init(receiver: String, slot: Double = 300) {
        self.receiver = receiver
        self.slot = slot
    }

    /// One advert of `emitter` heard at `time` (times in order for each emitter).
    public mutating func add(emitter: String, rssi: Double, measuredPower: Double, at time: Double) {
        guard emitter != receiver else { return }
        let s = (time / slot).rounded(.down)
        if var o = open[emitter] {
            if o.slot == s {
                o.sum += rssi
                o.squares += rssi * rssi
                o.weakest = min(o.weakest, rssi)
                o.count += 1
                open[emitter] = o
                return
            }
            close(emitter, o)
        }
        open[emitter] = Open(slot: s, sum: rssi, squares: rssi * rssi, weakest: rssi, count: 1, power: measuredPower)
    }

    private mutating func close(_ emitter: String, _ o: Open) {
        let n = Double(o.count)
        let mean = o.sum / n
        closed.append(
            KioskHearing(
                receiver: receiver,
                emitter: emitter,
                rssi: mean,
                count: o.count,
                spread: max(0, o.squares / n - mean * mean).squareRoot(),
                weakest: o.weakest,
                measuredPower: o.power,
                start: o.slot * slot,
                end: (o.slot + 1) * slot
            )
        )
    }

    /// Closes the slots that ended before `time` (a live kiosk, on its timer).
    public mutating func expire(now time: Double) {
        let s = (time / slot).rounded(.down)
        for (emitter, o) in open where o.slot < s {
            close(emitter, o)
            open[emitter] = nil
        }
    }

    /// Closes every slot (end of input, shutdown).
    public mutating func closeAll() {
        for (emitter, o) in open.sorted(by: { $0.key < $1.key }) { close(emitter, o) }
        open.removeAll()
    }

    /// What closed since the last drain.
    public mutating func drain() -> [KioskHearing] {
        defer { closed.removeAll(keepingCapacity: true) }
        return closed
    }
}

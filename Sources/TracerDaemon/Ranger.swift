import TracerBadges
import TracerRanging
import TracerSite

/// Which side of the interaction this host is.
public enum DaemonMode: Sendable, Equatable {
    /// A kiosk: it is the anchor; adverts with a personal-device UUID are people.
    case gateway(anchor: String)
    /// A person's own host: it is the device; adverts from the map's fixed beacons are anchors.
    case scanner(device: String)
}

/// What happened to the adverts, for the daemon's report.
public struct RangingCounts: Sendable, Equatable {
    public var adverts = 0
    public var iBeacons = 0
    public var attributed = 0
    /// Fixed beacons heard by a kiosk: calibration references, not interactions.
    public var references = 0
    public var interactions = 0
    /// Rotating badges' adverts whose id matched no badge of the table (another site's, a
    /// revoked badge, a clock far off), and those whose id two badges share this epoch.
    public var badgesUnresolved = 0
    public var badgeCollisions = 0

    /// Adds another ranger's counts (the one before a site change).
    public mutating func add(_ other: RangingCounts) {
        adverts += other.adverts
        iBeacons += other.iBeacons
        attributed += other.attributed
        references += other.references
        interactions += other.interactions
        badgesUnresolved += other.badgesUnresolved
        badgeCollisions += other.badgeCollisions
    }
}

/// Adverts to interaction summaries: parse, attribute by the map, smooth, window. No I/O.
public struct Ranger: Sendable {
    public let site: Site
    public let mode: DaemonMode
    public private(set) var windows: InteractionWindows
    public private(set) var counts = RangingCounts()
    /// A kiosk's receiver offset fitted from the fixed beacons in its room as it runs (nil in
    /// scanner mode, with `calibration: map`, or with no fixed beacon in the room).
    public private(set) var calibration: RunningCalibration?
    /// The rotating badges' ids for the epochs around the adverts' (a kiosk with a site that has
    /// `settings: badgeUUID`); the daemon gives the next as epochs pass.
    public var badges: ResolutionTable?
    /// A kiosk's hearings of the map's other advertisers (kiosks advertising as fixed beacons,
    /// and fixed beacons), over 5-minute slots: what the site server fits the site's radio from.
    public private(set) var hearings: KioskHearings?

    public init(site: Site, mode: DaemonMode) throws {
        switch mode {
        case .gateway(let key):
            guard let anchor = site.anchor(key) else {
                throw DaemonError("no anchor '\(key)' in \(site.file)")
            }
            guard anchor.kind == .kiosk else {
                throw DaemonError("'\(key)' in \(site.file) is a beacon, not a kiosk: use --device on a person's host")
            }
        case .scanner(let device):
            guard !device.isEmpty, !device.contains("/") else {
                throw DaemonError("--device takes an anonymous device id (like uuid:major:minor), not '\(device)'")
            }
        }
        self.site = site
        self.mode = mode
        if case .gateway(let key) = mode {
            self.windows = InteractionWindows(settings: site.ranging(at: key))
            hearings = KioskHearings(receiver: key)
            let references = site.references(for: key)
            if site.exposure.runningCalibration, !references.isEmpty {
                var exponent = 2.0
                if case .logDistance(let n) = site.ranging(at: key).model { exponent = n }
                calibration = RunningCalibration(
                    references: Dictionary(
                        references.map {
                            (
                                $0.anchor.key,
                                RunningCalibration.Reference(distance: $0.distance)
                            )
                        },
                        uniquingKeysWith: { a, _ in a }
                    ),
                    exponent: exponent,
                    window: site.ranging.window
                )
            }
        } else {
            self.windows = InteractionWindows(settings: site.ranging)
        }
    }

    /// Ranges with a kiosk's stored offset (added to the site's, as the fit is) until its own fit
    /// is ready: a restart keeps the fit. A kiosk with no fixed beacon in its room has no fit of
    /// its own: it ranges with the site server's fit of it (`SiteFit`), stored, until the next.
    public mutating func seed(offset: Double) {
        guard case .gateway = mode, site.exposure.runningCalibration, calibration?.offset == nil else { return }
        windows.setReceiverOffset(site.ranging.receiverOffset + offset)
    }

    /// Receives each attributed reading, smoothed and ranged (the CSV logs).
    public var onReading: (@Sendable (Sighting, Double, Double?) -> Void)?

    /// Ranges one advert; summaries of windows that end are appended to `out`.
    public mutating func add(_ advert: Advert, into out: inout [InteractionSummary]) {
        counts.adverts += 1
        advert.forEachIBeacon { beacon in
            counts.iBeacons += 1
            var resolved: Sighting?
            if beacon.uuid == site.badgeUUID {
                switch badge(beacon, advert) {
                case .sighting(let s): resolved = s
                case .unknown: counts.badgesUnresolved += 1
                case .collision: counts.badgeCollisions += 1
                }
            } else {
                resolved = attribute(beacon, advert)
            }
            guard let sighting = resolved else {
                if case .gateway = mode, let reference = site.fixedBeacon(for: beacon) {
                    counts.references += 1
                    let power = Double(reference.measuredPower ?? Int(beacon.measuredPower))
                    calibrate(reference.key, rssi: Double(advert.rssi), measuredPower: power, at: advert.time)
                    hearings?.add(
                        emitter: reference.key,
                        rssi: Double(advert.rssi),
                        measuredPower: power,
                        at: advert.time
                    )
                }
                return
            }
            counts.attributed += 1
            let before = out.count
            let reading = windows.add(sighting, into: &out)
            counts.interactions += out.count - before
            onReading?(sighting, reading.rssi, reading.distance)
        }
    }

    /// A reference's reading into the running fit; people's distances use the fit once it has
    /// enough windows (changes under 0.1 dB are left out, so that windows keep one offset).
    private mutating func calibrate(_ reference: String, rssi: Double, measuredPower: Double, at time: Double) {
        guard calibration != nil else { return }
        calibration!.add(reference: reference, rssi: rssi, measuredPower: measuredPower, at: time)
        guard let fitted = calibration!.offset else { return }
        let offset = site.ranging.receiverOffset + fitted
        if abs(offset - windows.settings.receiverOffset) >= 0.1 { windows.setReceiverOffset(offset) }
    }

    /// Closes windows of devices unseen for a while (for live sources, on a timer).
    public mutating func expire(now: Double, into out: inout [InteractionSummary]) {
        let before = out.count
        windows.expire(now: now, into: &out)
        hearings?.expire(now: now)
        counts.interactions += out.count - before
    }

    /// Closes every window (end of input, shutdown).
    public mutating func closeAll(into out: inout [InteractionSummary]) {
        let before = out.count
        windows.closeAll(into: &out)
        hearings?.closeAll()
        counts.interactions += out.count - before
    }

    /// Whether hearings closed since the last drain.
    public var hasClosedHearings: Bool { !(hearings?.closed.isEmpty ?? true) }

    /// The kiosk's hearings that closed since the last call (to be stored with its interactions).
    public mutating func drainHearings() -> [KioskHearing] {
        hearings?.drain() ?? []
    }

    /// The sightings an advert gives, without ranging them (for calibration).
    public func sightings(_ advert: Advert) -> [Sighting] {
        var out: [Sighting] = []
        advert.forEachIBeacon { beacon in
            if beacon.uuid == site.badgeUUID {
                if case .sighting(let s) = badge(beacon, advert) { out.append(s) }
            } else if let s = attribute(beacon, advert) {
                out.append(s)
            }
        }
        return out
    }

    /// What a rotating badge's advert comes to at a kiosk.
    enum BadgeOutcome {
        case sighting(Sighting)
        /// No badge of the table has the id (or there is no table yet, or this is not a kiosk).
        case unknown
        /// Two badges share the id in the table's epochs.
        case collision
    }

    /// A rotating badge's advert heard by a kiosk, as its badge: the device is `badge:SERIAL`, and
    /// the beacon ranged is the badge's number under the badge UUID (one window across a change
    /// of id).
    private func badge(_ beacon: IBeacon, _ advert: Advert) -> BadgeOutcome {
        guard case .gateway(let kiosk) = mode, let table = badges,
            let index = table.index(major: beacon.major, minor: beacon.minor)
        else { return .unknown }
        guard index >= 0 else { return .collision }
        let number = table.numbers[Int(index)]
        return .sighting(
            Sighting(
                time: advert.time,
                deviceName: table.deviceIDs[Int(index)],
                anchorKey: kiosk,
                beacon: IBeacon(
                    uuid: beacon.uuid,
                    major: UInt16(truncatingIfNeeded: number >> 16),
                    minor: UInt16(truncatingIfNeeded: number),
                    measuredPower: beacon.measuredPower
                ),
                rssi: Double(advert.rssi),
                measuredPower: Double(beacon.measuredPower)
            )
        )
    }

    /// Who and where an iBeacon advert stands for in this mode; nil when it is not an interaction.
    private func attribute(_ beacon: IBeacon, _ advert: Advert) -> Sighting? {
        switch mode {
        case .gateway(let kiosk):
            if site.isPersonalDevice(beacon) {
                return Sighting(
                    time: advert.time,
                    anchorKey: kiosk,
                    beacon: beacon,
                    rssi: Double(advert.rssi),
                    measuredPower: Double(beacon.measuredPower)
                )
            }
            return nil
        case .scanner(let device):
            guard let anchor = site.fixedBeacon(for: beacon) else { return nil }
            return Sighting(
                time: advert.time,
                deviceName: device,
                anchorKey: anchor.key,
                beacon: beacon,
                rssi: Double(advert.rssi),
                measuredPower: Double(anchor.measuredPower ?? Int(beacon.measuredPower))
            )
        }
    }
}

/// A daemon that cannot start or go on: a code, the file concerned, and one line saying why.
public struct DaemonError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Code: String, Sendable {
        /// The map, the mode or an option does not fit (the user's input).
        case badInput
        /// A file could not be read or written.
        case io
        /// Calibration had nothing to fit.
        case calibration
    }

    public var code: Code
    public var description: String
    /// The file concerned, when there is one.
    public var file: String?

    public init(_ description: String, code: Code = .badInput, file: String? = nil) {
        self.code = code
        self.description = description
        self.file = file
    }
}

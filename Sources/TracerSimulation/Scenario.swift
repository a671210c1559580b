import Foundation
import TracerBadges
import TracerRanging
import TracerSite

/// What a simulation is asked for: who, how long, and how hard the radio is.
public struct SimulationParameters: Sendable, Equatable {
    /// People wearing badges.
    public var people: Int
    /// Hours simulated from `start`.
    public var hours: Double
    public var seed: UInt64
    /// Unix seconds of the first moment simulated (the site's clock is UTC).
    public var start: Double
    /// Gaussian RSSI noise σ, dB.
    public var noise = 4.0
    /// Share of adverts a kiosk misses.
    public var loss = 0.2
    /// Kiosks that miss their own share of adverts instead of `loss`, by key (a busy or badly
    /// placed receiver).
    public var kioskLoss: [String: Double] = [:]
    /// The share of the noise's variance that drifts slowly (shadowing by people and furniture
    /// moving, correlated over `driftSeconds`) rather than changing advert by advert; 0: none.
    public var drift = 0.0
    /// How long the slow part of the noise stays correlated, seconds (an exponential decay).
    public var driftSeconds = 10.0
    /// Body shadowing: dB lost when the wearer's back is turned to the kiosk (half that side-on).
    public var shadow = 6.0
    /// σ of each badge's transmit-power offset from what it advertises, dB.
    public var badgeSpread = 2.0
    /// When set, each badge's offset is drawn evenly from ±this many dB instead (`badgeSpread`
    /// unused): transmitters as published measurements find them, off by up to a few dB.
    public var badgeOffsetBound: Double?
    /// Seconds between a badge's adverts, drawn evenly from this range for each badge.
    public var badgeIntervals: ClosedRange<Double> = 0.1...1.0
    /// Whether people move within every stay of 20 minutes or more (stand up, go to a board or a
    /// colleague, come back), not only in work rooms.
    public var movement = false
    /// dB lost through each wall between a badge and a kiosk.
    public var wallLoss = 10.0
    /// A kiosk hears nothing weaker than this, dBm.
    public var sensitivity = -95.0
    /// The path-loss exponent of the radio world (nil: the site's calibrated one).
    public var exponent: Double?
    /// Seconds between a fixed beacon's adverts (0: fixed beacons are not simulated).
    public var beaconInterval = 1.0
    /// Whether each person's phone scans too (scanner mode, the original app's design): what it
    /// hears of the fixed beacons is written as a replay of its own.
    public var phones = false
    /// Kiosks whose receivers read off, by key: dB added to all they hear (a receiver that reads
    /// 6 dB low is −6). The map does not know it; calibration as the kiosks run has to find it.
    public var receiverErrors: [String: Double] = [:]
    /// Seconds between the adverts of each kiosk the map gives an identity (`tracer advertise`
    /// beside its daemon; 0: kiosks do not advertise). The other kiosks hear them, which is what
    /// the site's calibration is fitted from.
    public var kioskInterval = 0.0
    /// How much stronger than it claims each advertising kiosk transmits, dB, by key (its
    /// receive error plus its chip's own difference: one antenna and one mounting both ways).
    public var transmitErrors: [String: Double] = [:]
    /// σ of the fading that stays on each pair of kiosks (dB): two fixed radios see the same
    /// reflections for hours, so it does not average away; drawn once per pair, the same both ways.
    public var linkFading = 0.0
    /// Kiosks re-mounted during the run, by key: from `at` (Unix seconds) on, `dB` more on all
    /// they hear and on their own adverts (a kiosk turned into its enclosure is −6).
    public var remounts: [String: Remount] = [:]

    /// A kiosk re-mounted: from `at` (Unix seconds) on, `dB` more on all it hears and sends.
    public struct Remount: Sendable, Equatable {
        public var at: Double
        public var dB: Double

        public init(at: Double, dB: Double) {
            self.at = at
            self.dB = dB
        }
    }

    /// A kiosk's change from re-mounting at time `t`, dB.
    func remount(_ key: String, at t: Double) -> Double {
        guard let r = remounts[key], t >= r.at else { return 0 }
        return r.dB
    }

    public init(people: Int, hours: Double, seed: UInt64, start: Double) {
        self.people = people
        self.hours = hours
        self.seed = seed
        self.start = start
    }

    public var end: Double { start + hours * 3600 }
}

/// Someone wearing a badge: an anonymous id and how the badge advertises.
public struct Person: Sendable {
    public enum Role: String, Sendable {
        case student, staff, visitor
    }

    public var index: Int
    public var role: Role
    public var uuid: String
    public var major: UInt16
    public var minor: UInt16
    /// Seconds between the badge's adverts (0.1–1).
    public var interval: Double
    /// When in its interval the badge's first advert falls.
    public var phase: Double
    /// The badge's real power less what it advertises, dB.
    public var offset: Double
    /// Its Bluetooth address: in the replays, as a capture would have it; never in the store.
    public var address: String
    /// The power it advertises at 1 m, dBm.
    public var measuredPower: Int = -59
    /// A rotating badge's serial, number and key (then `uuid` is the site's badge UUID and the
    /// major and minor change every epoch).
    public var badge: BadgeKey?

    /// docs/design.md's device id: `uuid:major:minor`, or a rotating badge's `badge:SERIAL`.
    public var deviceID: String {
        badge.map { RotatingID.deviceID(serial: $0.serial) } ?? "\(uuid):\(major):\(minor)"
    }
}

/// Where one person was from one time to another: in a room at a point, or outdoors.
public struct Segment: Sendable, Equatable {
    public var person: Int
    /// The room's index in the site (nil: outdoors, between buildings, heard by no kiosk).
    public var room: Int?
    public var from: Double
    public var to: Double
    public var position: Point
    /// The way the wearer faces, radians (their body shadows the badge from kiosks behind).
    public var facing: Double

    public init(person: Int, room: Int?, from: Double, to: Double, position: Point, facing: Double) {
        self.person = person
        self.room = room
        self.from = from
        self.to = to
        self.position = position
        self.facing = facing
    }
}

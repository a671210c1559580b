import Foundation
import TracerSite

/// One interaction document as the evaluation needs it.
public struct ObservedWindow: Sendable {
    public var device: String
    public var anchor: String
    public var start: Double
    public var end: Double
    public var distance: Double?

    public init(device: String, anchor: String, start: Double, end: Double, distance: Double?) {
        self.device = device
        self.anchor = anchor
        self.start = start
        self.end = end
        self.distance = distance
    }
}

/// One exposure tracer flagged for a reporter.
public struct FlaggedExposure: Sendable {
    public var reporter: String
    public var device: String
    public var anchor: String
    public var from: Double
    public var to: Double
    /// The pair decision's chance, where it decided.
    public var chance: Double?

    public init(reporter: String, device: String, anchor: String, from: Double, to: Double, chance: Double? = nil) {
        self.reporter = reporter
        self.device = device
        self.anchor = anchor
        self.from = from
        self.to = to
        self.chance = chance
    }
}

/// True and false positives and negatives, and what follows from them.
public struct Counts: Sendable, Equatable {
    public var truePositives = 0
    public var falsePositives = 0
    public var falseNegatives = 0

    public init() {}

    /// Nil when nothing was flagged.
    public var precision: Double? {
        truePositives + falsePositives == 0 ? nil : Double(truePositives) / Double(truePositives + falsePositives)
    }
    /// Nil when there was nobody to find.
    public var recall: Double? {
        truePositives + falseNegatives == 0 ? nil : Double(truePositives) / Double(truePositives + falseNegatives)
    }

    mutating func add<T: Hashable>(truth: Set<T>, flagged: Set<T>) {
        truePositives += truth.intersection(flagged).count
        falsePositives += flagged.subtracting(truth).count
        falseNegatives += truth.subtracting(flagged).count
    }
}

/// How well tracer did against a simulation's truth: exposures found (precision and recall,
/// overall and by room) and Herald's ranging measures (detection, continuity, distance error).
public struct Evaluation: Sendable {
    /// Distance error near one true distance.
    public struct DistanceError: Sendable {
        /// The true distance the band is centred on, metres (±0.5 m).
        public var nominal: Double
        public var count = 0
        /// Median and 90th percentile of |estimated − true|, metres.
        public var medianAbsolute = 0.0
        public var p90Absolute = 0.0
        /// Median of estimated − true: above 0, distances come out long.
        public var medianSigned = 0.0
    }

    public var reporters: [String]
    /// (reporter, exposed device) pairs.
    public var overall = Counts()
    /// (reporter, exposed device) pairs by room.
    public var byRoom: [String: Counts] = [:]
    /// The same pairs under the nearest-kiosk room rule (`nearestKioskRoom`), on the same windows.
    public var roomRule: Counts?
    /// Devices flagged that were never within the radius, by where they were (`sortFalseFlags`).
    public var falseFlags: [String: Int] = [:]
    /// Flagged exposures by the chance the pair decision gave them, in tenths: whether a chance
    /// means what it says (of those given 0.8, about eight in ten truly near).
    public var reliability: [Reliability] = []
    /// Each reporter's true neighbours.
    var truthPartners: [String: Set<String>] = [:]
    /// Stays in a kiosk's room (of a minute or more) in which that kiosk saw the badge.
    public var stays = 0
    public var staysDetected = 0
    /// 30-second windows of those stays with a distance estimate from the room's kiosk.
    public var windows = 0
    public var windowsCovered = 0
    public var distanceErrors: [DistanceError] = []
    /// (true, estimated) distance of every window whose badge was in the kiosk's room throughout.
    public var scatter: [(truth: Double, estimate: Double)] = []
    /// Interaction windows of badges in another room than the kiosk's (heard through a wall).
    public var throughWalls = 0
    /// Position error where several kiosks heard a badge sitting still in the room it was
    /// placed in (`position(_:truth:)`).
    public var positionError = PositionError()

    /// Seconds in which a kiosk heard a badge that was in a kiosk's room, and of those, the
    /// seconds whose room tracer attributed right (`rooms(_:truth:)`).
    public var roomSeconds = 0.0
    public var roomSecondsRight = 0.0
    public var roomAttribution: Double? { roomSeconds == 0 ? nil : roomSecondsRight / roomSeconds }
    /// The same over every place on the map, rooms no kiosk covers (a corridor) included.
    public var placeSeconds = 0.0
    public var placeSecondsRight = 0.0
    public var placeAttribution: Double? { placeSeconds == 0 ? nil : placeSecondsRight / placeSeconds }
    /// Where the seconds of `roomSeconds` attributed wrong went: by the room the badge was in,
    /// the seconds given to each other place (`roomsWrong["room-4"]["room-5"]`).
    public var roomsWrong: [String: [String: Double]] = [:]

    /// Judges room attribution: each step's room against the room the badge was in at its
    /// middle, weighed by the step's length; `roomSeconds` counts badges in a kiosk's room,
    /// `placeSeconds` badges anywhere on the map (outdoors is not counted).
    public mutating func rooms(_ estimates: [PositionEstimate], truth: GroundTruth) {
        let kioskRooms = Set(truth.kiosks.map(\.room))
        roomSeconds = 0
        roomSecondsRight = 0
        placeSeconds = 0
        placeSecondsRight = 0
        roomsWrong = [:]
        for e in estimates {
            guard let s = truth.segment(of: e.device, at: (e.from + e.to) / 2), let room = s.room else { continue }
            placeSeconds += e.to - e.from
            if room == e.room { placeSecondsRight += e.to - e.from }
            guard kioskRooms.contains(room) else { continue }
            roomSeconds += e.to - e.from
            if room == e.room {
                roomSecondsRight += e.to - e.from
            } else {
                roomsWrong[room, default: [:]][e.room, default: 0] += e.to - e.from
            }
        }
    }

    /// Exposures whose chance fell in [low, low + 0.1): how many, their mean chance, and how
    /// many were truly near (the two within the radius, in the exposure's room, within the
    /// window of it).
    public struct Reliability: Sendable, Equatable {
        public var low: Double
        public var count = 0
        public var chanceSum = 0.0
        public var near = 0
        public var stated: Double { count == 0 ? 0 : chanceSum / Double(count) }
        public var observed: Double { count == 0 ? 0 : Double(near) / Double(count) }
    }

    /// Sorts the exposures with a chance into `reliability`'s tenths.
    public static func reliability(
        _ exposures: [FlaggedExposure],
        truth: GroundTruth,
        roomOf: (String) -> String
    ) -> [Reliability] {
        var bins = (0..<10).map { Reliability(low: Double($0) / 10) }
        for e in exposures {
            guard let chance = e.chance else { continue }
            let k = min(9, max(0, Int(chance * 10)))
            let room = roomOf(e.anchor)
            bins[k].count += 1
            bins[k].chanceSum += chance
            if truth.near(e.reporter, e.device, room: room, from: e.from, to: e.to) { bins[k].near += 1 }
        }
        return bins.filter { $0.count > 0 }
    }

    /// How far estimated positions were from the truth.
    public struct PositionError: Sendable {
        /// Slots judged: a badge still throughout, in the room it was placed in.
        public var count = 0
        /// Metres.
        public var median = 0.0
        public var p90 = 0.0
        /// Slots placed in a room the badge was not in.
        public var wrongRoom = 0
    }

    /// One estimated position: a device in a room over a window slot.
    public struct PositionEstimate: Sendable {
        public var device: String
        public var room: String
        public var from: Double
        public var to: Double
        public var point: Point

        public init(device: String, room: String, from: Double, to: Double, point: Point) {
            self.device = device
            self.room = room
            self.from = from
            self.to = to
            self.point = point
        }
    }

    /// Judges positions against the truth: each estimate whose badge sat at one point in that room
    /// throughout its slot.
    public mutating func position(_ estimates: [PositionEstimate], truth: GroundTruth) {
        var e = PositionError()
        var errors: [Double] = []
        for p in estimates {
            guard let s = truth.segment(of: p.device, at: (p.from + p.to) / 2) else { continue }
            guard s.room == p.room else {
                if s.room != nil { e.wrongRoom += 1 }
                continue
            }
            guard s.from <= p.from, s.to >= p.to else { continue }
            errors.append(s.position.distance(to: p.point))
        }
        errors.sort()
        e.count = errors.count
        e.median = Self.quantile(errors, 0.5)
        e.p90 = Self.quantile(errors, 0.9)
        positionError = e
    }

    public var detectionRate: Double? { stays == 0 ? nil : Double(staysDetected) / Double(stays) }
    public var continuity: Double? { windows == 0 ? nil : Double(windowsCovered) / Double(windows) }

    /// Compares what was flagged and ranged with the truth.
    public init(
        truth: GroundTruth,
        site: Site,
        reporters: [String],
        exposures: [FlaggedExposure],
        observed: [ObservedWindow]
    ) {
        self.reporters = reporters
        let roomOf = Dictionary(site.anchors.map { ($0.key, $0.room) }, uniquingKeysWith: { a, _ in a })
        let kioskRooms = Set(truth.kiosks.map(\.room))

        // Exposures.
        struct Unit: Hashable {
            var device: String
            var room: String
        }
        for r in reporters {
            let trueUnits = Set(
                truth.pairs.filter { $0.involves(r) }.map { Unit(device: $0.other(than: r), room: $0.room) }
            )
            let flaggedUnits = Set(
                exposures.filter { $0.reporter == r }.map {
                    Unit(device: $0.device, room: roomOf[$0.anchor] ?? $0.anchor)
                }
            )
            let partners = Set(trueUnits.map(\.device))
            truthPartners[r] = partners
            overall.add(truth: partners, flagged: Set(flaggedUnits.map(\.device)))
            for room in Set(trueUnits.map(\.room)).union(flaggedUnits.map(\.room)) {
                byRoom[room, default: Counts()].add(
                    truth: Set(trueUnits.filter { $0.room == room }.map(\.device)),
                    flagged: Set(flaggedUnits.filter { $0.room == room }.map(\.device))
                )
            }
        }

        reliability = Self.reliability(exposures, truth: truth, roomOf: { roomOf[$0] ?? $0 })

        // Ranging: the windows of each (device, anchor), in time order.
        struct Key: Hashable {
            var device: String
            var anchor: String
        }
        var byKey: [Key: [ObservedWindow]] = [:]
        for o in observed { byKey[Key(device: o.device, anchor: o.anchor), default: []].append(o) }
        for k in byKey.keys { byKey[k]!.sort { $0.start < $1.start } }
        // The receivers of each room: its kiosks, and its fixed beacons, at which a phone in
        // scanner mode has its windows (a badge's are only ever at kiosks).
        let receiversByRoom = Dictionary(grouping: site.anchors, by: \.room)

        func overlapping(_ list: [ObservedWindow], _ from: Double, _ to: Double) -> ArraySlice<ObservedWindow> {
            // Windows last at most a few minutes: start from the first that starts within an hour.
            var lo = 0
            var hi = list.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if list[mid].start < from - 3600 { lo = mid + 1 } else { hi = mid }
            }
            var end = lo
            while end < list.count, list[end].start < to { end += 1 }
            return list[lo..<end]
        }

        for (device, segments) in truth.segments {
            // Stays: a device's consecutive segments in one room.
            var stays: [(room: String, from: Double, to: Double)] = []
            for s in segments {
                guard let room = s.room else { continue }
                if let last = stays.last, last.room == room, s.from - last.to < 1 {
                    stays[stays.count - 1].to = s.to
                } else {
                    stays.append((room, s.from, s.to))
                }
            }
            for stay in stays where kioskRooms.contains(stay.room) && stay.to - stay.from >= 60 {
                let lists = (receiversByRoom[stay.room] ?? []).compactMap { byKey[Key(device: device, anchor: $0.key)] }
                self.stays += 1
                if lists.contains(where: { l in overlapping(l, stay.from, stay.to).contains { $0.end > stay.from } }) {
                    staysDetected += 1
                }
                var w = stay.from
                while w + 30 <= stay.to {
                    windows += 1
                    if lists.contains(where: { l in
                        overlapping(l, w, w + 30).contains { $0.end > w && $0.distance != nil }
                    }) {
                        windowsCovered += 1
                    }
                    w += 30
                }
            }
        }

        // Distance error: windows whose badge stayed at one point in the kiosk's room.
        var errors: [Double: [Double]] = [1: [], 3: [], 6: []]
        let anchors = Dictionary(site.anchors.map { ($0.key, $0) }, uniquingKeysWith: { a, _ in a })
        for o in observed {
            guard let estimate = o.distance, let anchor = anchors[o.anchor],
                let s = truth.segment(of: o.device, at: (o.start + o.end) / 2)
            else { continue }
            guard s.room == anchor.room else {
                if s.room != nil { throughWalls += 1 }
                continue
            }
            guard s.from <= o.start, s.to >= o.end else { continue }
            let d = Radio.range(s.position, anchor.position)
            scatter.append((d, estimate))
            for nominal in [1.0, 3.0, 6.0] where abs(d - nominal) < 0.5 {
                errors[nominal]!.append(estimate - d)
            }
        }
        distanceErrors = [1.0, 3.0, 6.0].map { nominal in
            let e = errors[nominal]!
            var out = DistanceError(nominal: nominal)
            out.count = e.count
            guard !e.isEmpty else { return out }
            let abs = e.map { Swift.abs($0) }.sorted()
            out.medianAbsolute = Self.quantile(abs, 0.5)
            out.p90Absolute = Self.quantile(abs, 0.9)
            out.medianSigned = Self.quantile(e.sorted(), 0.5)
            return out
        }
        scatter.sort { $0.truth < $1.truth }
    }

    static func quantile(_ sorted: [Double], _ q: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let i = q * Double(sorted.count - 1)
        let lo = Int(i)
        let hi = min(lo + 1, sorted.count - 1)
        return sorted[lo] + (sorted[hi] - sorted[lo]) * (i - Double(lo))
    }

    /// Reporters drawn for a simulation: `count` of its people, by its seed.
    public static func reporters(_ truth: GroundTruth, count: Int) -> [String] {
        let people = truth.segments.keys.sorted()
        guard count < people.count else { return people }
        var rng = SeededGenerator(seed: truth.seed, stream: "reporters")
        var pool = people
        var chosen: [String] = []
        for _ in 0..<count { chosen.append(pool.remove(at: rng.index(pool.count))) }
        return chosen.sorted()
    }
}

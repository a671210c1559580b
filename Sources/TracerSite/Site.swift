import TracerRanging

/// A site's exposure policy: docs/design.md's defaults unless the map's `settings:` says otherwise.
public struct ExposureSettings: Sendable, Equatable {
    /// Metres (`exposureRadius`).
    public var radius = 6.0
    /// Minutes between windows that still count (`exposureWindow`).
    public var windowMinutes = 5.0
    /// Days looked back from a test's collection date (`lookbackDays`).
    public var lookbackDays = 14.0
    /// `geometric` (by the kiosk's room: the default, the best trade-off in EFFICACY.md), `sum`
    /// (d1 + d2 within the radius) or `possible` (|d1 − d2| within it) (`separation`).
    public var separation = "geometric"
    /// The geometric rule flags from this chance of being within the radius (`separationLikelihood`).
    public var likelihood = 0.3
    /// Under positions, an exposure is flagged when the chance the pair decision gives it
    /// reaches this (`exposureChance`).
    public var chance = 0.15
    /// Whether kiosks fit their own receiver offset from the map's fixed beacons as they run
    /// (`calibration: running`, the default) or keep the map's (`calibration: map`).
    public var runningCalibration = true
    /// Whether the map's settings give a `pathLossExponent` (the site's fit written, or a walk's),
    /// rather than leaving the default 2: kiosks follow the site server's fit of their offsets at
    /// the map's exponent only when it is one (`SiteFit`).
    public var exponentGiven = false
    /// Whether the geometric rule judges pairs by positions where several kiosks of a room heard
    /// both, and attributes rooms from every kiosk's readings over time (`positions: on`, the
    /// default), or by distances to one kiosk and the closest kiosk (`positions: off`).
    public var positions = true
    /// Days the site keeps interactions, exposures and review holds (`retentionDays`, 1–60).
    public var retentionDays = 14.0
    /// dB lost through each interior wall between a badge and a kiosk, as positions and rooms
    /// assume it (`wallLoss`, 0–30): plasterboard and glass lose 3–8 dB, brick and concrete 10
    /// and more.
    public var wallLoss = 5.0
    /// What a map's `wallLoss` may be (dB).
    public static let wallLosses: ClosedRange<Double> = 0...30

    public init() {}
}

/// How this site verifies photographed test results (the map's `settings:` section): the same
/// for `tracer self-report` on a kiosk and `POST /v1/reports` on the site server.
public struct VerificationSettings: Sendable, Equatable {
    /// The deciding words' least OCR confidence, 0–100 (`minConfidence`).
    public var minConfidence = 70.0
    /// How many days old a test may be (`resultMaxAgeDays`).
    public var maxAgeDays = 14
    /// Which reports wait for the health team's review (`review`): `none`, `doubtful` (what the
    /// policy cannot decide with confidence; the default) or `all` (every report).
    public var review = "doubtful"
    /// The spellings `review` takes.
    public static let reviewModes = ["none", "doubtful", "all"]
    /// The trust list as the map names it (`trustList`: a PEM file of accepted issuers'
    /// certificates, relative to the map's directory), and the line that names it.
    public var trustListFile: String?
    public var trustListLine: Int?
    /// The trust list's PEM text: read from `trustListFile` beside a map file, or from the store
    /// for a published site (a kiosk has no copy of the server's file).
    public var trustListPEM: String?

    public init() {}
}

/// A site as its BeaconMap file describes it: who counts as a person, its rooms, its anchors.
public struct Site: Sendable {
    /// The site's name.
    public var name: String
    /// Proximity UUIDs of the site's personal devices (badges, phones).
    public var deviceUUIDs: Set<UUIDBytes>
    /// The same, in the map's order (the first is the site's main badge UUID).
    public var deviceUUIDOrder: [UUIDBytes] = []
    public var rooms: [Room]
    public var anchors: [Anchor]
    /// The ranging settings (the map's `settings:` section over the defaults).
    public var ranging: RangingSettings
    /// Who counts as exposed at this site (the same section).
    public var exposure = ExposureSettings()
    /// How self-reports are verified at this site (the same section).
    public var verification = VerificationSettings()
    /// What the person's page tells people to do next (`settings: guidance:`), if the site says.
    public var guidance: Guidance?
    /// The push services (host names) the server may send Web Push to (`settings: pushServices`);
    /// nil: the three big browsers' (`PushSubscription.defaultServices`).
    public var pushServices: Set<String>?
    /// The proximity UUID of the site's rotating badges (`settings: badgeUUID`): their major and
    /// minor change every epoch and resolve to a badge only at the site's kiosks. Nil: none.
    public var badgeUUID: UUIDBytes?
    /// K: a rotating badge's epoch is 2^K seconds (`settings: badgeEpochBits`, 10 by default).
    public var badgeEpochBits = 10
    /// The file it came from.
    public var file: String

    private var anchorsByKey: [String: Int] = [:]
    private var beaconsByIdentity: [BeaconIdentity: Int] = [:]

    struct BeaconIdentity: Hashable, Sendable {
        var uuid: UUIDBytes
        var major: UInt16
        var minor: UInt16
    }

    public init(
        name: String,
        deviceUUIDs: Set<UUIDBytes>,
        rooms: [Room],
        anchors: [Anchor],
        ranging: RangingSettings,
        file: String
    ) {
        self.name = name
        self.deviceUUIDs = deviceUUIDs
        self.rooms = rooms
        self.anchors = anchors
        self.ranging = ranging
        self.file = file
        for (i, a) in anchors.enumerated() {
            anchorsByKey[a.key] = i
            if let id = a.identity {
                beaconsByIdentity[BeaconIdentity(uuid: id.uuid, major: id.major, minor: id.minor)] = i
            }
        }
    }

    /// The anchor with this key.
    public func anchor(_ key: String) -> Anchor? {
        anchorsByKey[key].map { anchors[$0] }
    }

    /// The fixed beacon of the map that this advert comes from, if any.
    public func fixedBeacon(for beacon: IBeacon) -> Anchor? {
        beaconsByIdentity[BeaconIdentity(uuid: beacon.uuid, major: beacon.major, minor: beacon.minor)].map {
            anchors[$0]
        }
    }

    /// Whether an advert comes from one of the site's personal devices.
    public func isPersonalDevice(_ beacon: IBeacon) -> Bool {
        deviceUUIDs.contains(beacon.uuid)
    }

    /// The room with this key.
    public func room(_ key: String) -> Room? {
        rooms.first { $0.key == key }
    }

    /// The ranging settings at one anchor: the site's, with the kiosk's own offset added and its
    /// own exponent, if it has them.
    public func ranging(at anchorKey: String) -> RangingSettings {
        var r = ranging
        r.receiverOffset += anchor(anchorKey)?.receiverOffset ?? 0
        if let n = anchor(anchorKey)?.pathLossExponent { r.model = .logDistance(exponent: n) }
        return r
    }

    /// The fixed beacons a kiosk can calibrate from, with their plan distances: those in its room.
    public func references(for kioskKey: String) -> [(anchor: Anchor, distance: Double)] {
        guard let kiosk = anchor(kioskKey) else { return [] }
        return anchors.filter { $0.kind == .beacon && $0.room == kiosk.room }.map {
            ($0, $0.position.distance(to: kiosk.position))
        }
    }
}

/// A point on the floor plan, in metres.
public struct Point: Sendable, Hashable {
    public var x: Double
    public var y: Double

    public init(_ x: Double, _ y: Double) {
        self.x = x
        self.y = y
    }

    /// The distance on the plan to another point, metres.
    public func distance(to other: Point) -> Double {
        ((x - other.x) * (x - other.x) + (y - other.y) * (y - other.y)).squareRoot()
    }
}

/// A room: its outline on the floor plan.
public struct Room: Sendable, Equatable {
    /// What a room is used for: the simulator's schedules send people by it.
    public enum Use: String, Sendable, CaseIterable {
        /// Classes and lectures: people arrive together, sit in rows, leave together.
        case teaching
        /// Meetings and seminars: a group around a table.
        case meeting
        /// Desks, benches and shelves: people stay a long while, spread out.
        case work
        /// A café or canteen: tables of a few, at breaks and lunch.
        case dining
        /// Corridors: people pass through.
        case circulation
        /// Reception and entrances: people pass through on arrival and departure.
        case entrance
        /// A clinic or a waiting room: short visits.
        case care
    }

    public var key: String
    public var name: String
    public var building: String?
    public var floor: Int?
    public var outline: [Point]
    /// What it is used for (the map's `use:`; `work` when not given).
    public var use: Use = .work

    public init(
        key: String,
        name: String,
        building: String? = nil,
        floor: Int? = nil,
        outline: [Point],
        use: Use = .work
    ) {
        self.key = key
        self.name = name
        self.building = building
        self.floor = floor
        self.outline = outline
        self.use = use
    }

    /// The outline's bounding box.
    public var bounds: (min: Point, max: Point) {
        let xs = outline.map(\.x)
        let ys = outline.map(\.y)
        return (Point(xs.min() ?? 0, ys.min() ?? 0), Point(xs.max() ?? 0, ys.max() ?? 0))
    }

    /// Whether a point lies inside the outline or on its edge.
    public func contains(_ p: Point) -> Bool {
        var inside = false
        var j = outline.count - 1
        for i in 0..<outline.count {
            let a = outline[i]
            let b = outline[j]
            // On an edge counts as inside: a kiosk is often mounted on a wall.
            let cross = (b.x - a.x) * (p.y - a.y) - (b.y - a.y) * (p.x - a.x)
            if abs(cross) < 1e-9, p.x >= min(a.x, b.x) - 1e-9, p.x <= max(a.x, b.x) + 1e-9,
                p.y >= min(a.y, b.y) - 1e-9, p.y <= max(a.y, b.y) + 1e-9
            {
                return true
            }
            if (a.y > p.y) != (b.y > p.y), p.x < (b.x - a.x) * (p.y - a.y) / (b.y - a.y) + a.x {
                inside.toggle()
            }
            j = i
        }
        return inside
    }
}

extension Room {
    /// Walls crossed on the straight line from `p` (in `rooms[a]`) to `q` (in `rooms[b]`): each
    /// change of room along it (going outside the rooms counts as one), sampled every 25 cm. The
    /// simulator's radio and the position model count walls with this one function, so that the
    /// model expects what the simulated world does. Many lines over the same rooms: `Walls`.
    public static func walls(from p: Point, in a: Int, to q: Point, in b: Int, rooms: [Room]) -> Int {
        Walls(rooms).count(from: p, in: a, to: q, in: b)
    }

    /// Walls counted over one list of rooms, each room's bounding box worked out once: a line
    /// looks for the room each of its points is in only among the rooms whose boxes its own box
    /// meets, not among all of them. The answer is `Room.walls`' to the last wall (a point
    /// outside a room's box is never inside it). On Tools/bench/campus's 250 rooms, searching
    /// every room at each change of room was 28% of flagging a report (the rooms' grids count
    /// the walls from every cell to every kiosk in hearing), 3% with the boxes (BENCHMARKS.md,
    /// "Flagging at a campus").
    public struct Walls: Sendable {
        public let rooms: [Room]
        /// Each room's bounding box, widened by `slack`.
        let boxes: [(min: Point, max: Point)]
        /// More than `contains`' tolerance on an edge (1e-9) and a sample's rounding.
        static let slack = 1e-6

        public init(_ rooms: [Room]) {
            self.rooms = rooms
            boxes = rooms.map { r in
                let b = r.bounds
                return (
                    Point(b.min.x - Self.slack, b.min.y - Self.slack), Point(b.max.x + Self.slack, b.max.y + Self.slack)
                )
            }
        }

        /// `Room.walls(from:in:to:in:rooms:)` over these rooms.
        public func count(from p: Point, in a: Int, to q: Point, in b: Int) -> Int {
            let (x0, x1) = (min(p.x, q.x), max(p.x, q.x))
            let (y0, y1) = (min(p.y, q.y), max(p.y, q.y))
            // The rooms a point of the line can be in, in the rooms' order (the first that holds
            // a point is the room it is in, as before).
            let candidates = boxes.indices.filter { i in
                boxes[i].min.x <= x1 && boxes[i].max.x >= x0 && boxes[i].min.y <= y1 && boxes[i].max.y >= y0
            }
            let d = p.distance(to: q)
            let steps = max(1, Int(d / 0.25))
            var current: Int? = a
            var count = 0
            for i in 1...steps {
                let f = Double(i) / Double(steps)
                let s = Point(p.x + (q.x - p.x) * f, p.y + (q.y - p.y) * f)
                if let c = current, rooms[c].contains(s) { continue }
                let next = candidates.first { rooms[$0].contains(s) }
                if next != current {
                    count += 1
                    current = next
                }
            }
            if current != b { count += 1 }
            return count
        }
    }
}

/// A kiosk or a fixed beacon at a known position.
public struct Anchor: Sendable {
    public enum Kind: String, Sendable {
        case kiosk, beacon
    }

    public var key: String
    public var kind: Kind
    public var room: String
    public var position: Point
    /// For beacons: what they advertise.
    public var identity: (uuid: UUIDBytes, major: UInt16, minor: UInt16)?
    /// Overrides the advert's measured power (dBm at 1 m).
    public var measuredPower: Int?
    /// For kiosks: this receiver's own offset (dB), added to the site's `receiverOffset` (what
    /// every receiver shares, such as worn badges' body loss). `tracer calibrate --write` sets it;
    /// a kiosk that hears the map's fixed beacons measures it as it runs instead (`calibration`).
    public var receiverOffset: Double?
    /// What a receiver offset may be (dB): a map's for a kiosk, and a kiosk's stored calibration
    /// the site server takes.
    public static let receiverOffsets: ClosedRange<Double> = -40...40
    /// For kiosks: this receiver's own path-loss exponent, when a calibration walk found one a
    /// building has (replaces the site's).
    public var pathLossExponent: Double?
    /// What a path-loss exponent in a map may be (the settings' or a kiosk's own).
    public static let pathLossExponents: ClosedRange<Double> = 1...6
}

/// What a site tells the people who wear its badges to do next: its own words and a link (the
/// person's page shows them under "What to do next"). Plain text: never read as HTML.
public struct Guidance: Sendable, Equatable {
    public var text: String
    /// An http(s) address, or nil.
    public var link: String?

    public init(text: String, link: String? = nil) {
        self.text = text
        self.link = link
    }
}

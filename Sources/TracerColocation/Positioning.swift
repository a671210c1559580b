import Foundation
import TracerRanging
import TracerSite

/// The site as positioning sees it: the rooms, and every anchor with what it takes to turn its
/// distances back into decibels. Kiosks hear badges; fixed beacons are heard by phones in scanner
/// mode (docs/design.md), whose windows are at the beacon with the distance from it, so to the
/// likelihood a beacon is a receiver like a kiosk: a known point, a distance, a path loss.
public struct Plan: Sendable, Equatable {
    public struct Receiver: Sendable, Equatable {
        public var key: String
        /// A kiosk, or a fixed beacon heard by phones.
        public var kind: Anchor.Kind
        public var room: String
        public var position: Point
        /// The path-loss exponent its distances were ranged with.
        public var exponent: Double
        /// 10·n·log10(d) (dB) beyond which a badge's window goes unheard: the measured power at
        /// 1 m, less the receiver's offset, less the adapter's floor, plus the margin by which a
        /// window's loudest advert beats its mean (`Positioning.hearingMargin`). A window's y is
        /// the measured power less its RSSI with the offset added (`DistanceModel`), and the
        /// adapter drops adverts below its floor before any offset: a receiver that reads 6 dB
        /// low (offset +6) stops hearing a badge 6 dB sooner.
        public var floor: Double
        /// The receiver's own offset (dB) its distances were ranged with, on top of the site's
        /// `receiverOffset`: the map's for its anchor, or the kiosk's calibration
        /// (`calibrated(_:)`). 0 for a fixed beacon.
        public var offset: Double
        /// The anchor's own `receiverOffset` in the map (0 when none): what a kiosk's stored
        /// calibration records it was made under (`Beacon.Calibration.mapOffset`).
        public var mapOffset: Double

        public init(
            key: String,
            kind: Anchor.Kind = .kiosk,
            room: String,
            position: Point,
            exponent: Double = 2,
            floor: Double = 45,
            offset: Double = 0,
            mapOffset: Double = 0
        ) {
            self.key = key
            self.kind = kind
            self.room = room
            self.position = position
            self.exponent = exponent
            self.floor = floor
            self.offset = offset
            self.mapOffset = mapOffset
        }

        /// Path loss at a distance by this kiosk's model, 10·n·log10(d) dB: a window's distance
        /// turned back into decibels, or a cell's range into what the kiosk would read.
        func loss(at distance: Double) -> Double { 10 * exponent * log10(max(distance, 0.1)) }
    }

    public var rooms: [Room] { didSet { adjacent = Self.adjacency(rooms) } }
    public var receivers: [Receiver] { didSet { index = Self.index(receivers) } }
    /// dB lost through each wall between a badge and a receiver (the map's `wallLoss`).
    public var wallLoss: Double
    /// Each receiver's place in `receivers` by key (the first of a key): `receiver(_:)` is asked
    /// once per window the engine reads.
    private var index: [String: Int]
    /// By room index, the rooms next door (`adjacency(_:)`).
    private(set) var adjacent: [[Int]]

    public init(rooms: [Room], receivers: [Receiver], wallLoss: Double = ExposureSettings().wallLoss) {
        self.rooms = rooms
        self.receivers = receivers
        self.wallLoss = wallLoss
        index = Self.index(receivers)
        adjacent = Self.adjacency(rooms)
    }

    static func index(_ receivers: [Receiver]) -> [String: Int] {
        Dictionary(receivers.enumerated().map { ($1.key, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The map's rooms and anchors: each kiosk with its own ranging (offset and exponent); each
    /// fixed beacon with the site's, which phones range it with, and its own measured power.
    public init(site: Site) {
        let receivers = site.anchors.map { a in
            let ranging = a.kind == .kiosk ? site.ranging(at: a.key) : site.ranging
            var n = 2.0
            if case .logDistance(let e) = ranging.model { n = e }
            let power = a.kind == .kiosk ? Positioning.typicalPower : Double(a.measuredPower ?? -59)
            let own = a.kind == .kiosk ? a.receiverOffset ?? 0 : 0
            return Receiver(
                key: a.key,
                kind: a.kind,
                room: a.room,
                position: a.position,
                exponent: n,
                floor: power - ranging.receiverOffset - Positioning.adapterFloor + Positioning.hearingMargin,
                offset: own,
                mapOffset: own
            )
        }
        self.init(rooms: site.rooms, receivers: receivers, wallLoss: site.exposure.wallLoss)
    }

    /// The plan with kiosks ranging with offsets of their own (by kiosk key, dB on top of the
    /// site's `receiverOffset`, as the map's for an anchor: a kiosk's stored calibration, fitted
    /// from fixed beacons or followed from the site server's fit): where each stops hearing moves
    /// with its offset. Keys that are not kiosks, and offsets equal to the plan's, change nothing.
    public func calibrated(_ offsets: [String: Double]) -> Plan {
        var plan = self
        plan.receivers = receivers.map { r in
            guard r.kind == .kiosk, let o = offsets[r.key], o != r.offset else { return r }
            var r = r
            r.floor += r.offset - o
            r.offset = o
            return r
        }
        return plan
    }

    /// By room index, the rooms that share a stretch of wall with it (0.5 m or more, edges
    /// within 0.3 m of each other: maps draw walls as lines or as thin gaps) in the same building
    /// and on the same floor: where a badge can walk to next. A map draws no doors, so every
    /// shared wall counts as one.
    static func adjacency(_ rooms: [Room]) -> [[Int]] {
        func edges(_ r: Room) -> [(Point, Point)] {
            r.outline.indices.map { (r.outline[$0], r.outline[($0 + 1) % r.outline.count]) }
        }
        func touching(_ a: Room, _ b: Room) -> Bool {
            guard a.building == b.building, a.floor == b.floor else { return false }
            for (p, q) in edges(a) {
                let length = p.distance(to: q)
                guard length > 0 else { continue }
                let (ux, uy) = ((q.x - p.x) / length, (q.y - p.y) / length)
                for (c, d) in edges(b) {
                    let offC = abs(ux * (c.y - p.y) - uy * (c.x - p.x))
                    let offD = abs(ux * (d.y - p.y) - uy * (d.x - p.x))
                    guard offC <= 0.3, offD <= 0.3 else { continue }
                    let tc = ux * (c.x - p.x) + uy * (c.y - p.y)
                    let td = ux * (d.x - p.x) + uy * (d.y - p.y)
                    if min(length, max(tc, td)) - max(0, min(tc, td)) >= 0.5 { return true }
                }
            }
            return false
        }
        return rooms.indices.map { i in rooms.indices.filter { $0 != i && touching(rooms[i], rooms[$0]) } }
    }

    func room(_ key: String) -> Room? { rooms.first { $0.key == key } }
    func roomIndex(_ key: String) -> Int? { rooms.firstIndex { $0.key == key } }
    public func receiver(_ key: String) -> Receiver? { index[key].map { receivers[$0] } }
    /// Whether a room has no room next to it on the map (or is not on it).
    func isolated(_ room: String) -> Bool { roomIndex(room).map { adjacent[$0].isEmpty } ?? true }
}

/// Positions from several receivers: a grid likelihood over a room from every kiosk's distance
/// model, with motion between windows.
///
/// Each window's distance d̂ from kiosk i is turned back into y = 10·n·log10(d̂) (dB of path
/// loss, the receiver's offset already in it). At a point x of the room the model predicts
/// μᵢ(x) = 10·n·log10(range) + 10 dB per wall between x and the kiosk. What is left,
/// rᵢ = yᵢ − μᵢ(x), is the badge's own error c (its transmit power, how its wearer's body sits:
/// the same for every kiosk in that window, σ_b = 3 dB) plus each kiosk's own (σ_e = 2.5 dB: the
/// body turned towards one kiosk and away from another, and the window's noise). Integrating c
/// out in closed form, the covariance σ_e²·I + σ_b²·11ᵀ has the log-likelihood
///   −½/σ_e² · (Σrᵢ² − σ_b²·(Σrᵢ)² / (σ_e² + m·σ_b²)),
/// which for several kiosks weighs the differences between them (the badge's offset cancels)
/// and for one is an arc of width √(σ_e² + σ_b²). A kiosk that heard the badge around then but
/// not in this slot adds log Φ((μⱼ(x) − floorⱼ)/σ): not being heard puts the badge far from it.
/// Between slots a badge mostly sits still (a small blur) and sometimes moves anywhere in the
/// room (`jump`); a forward–backward pass over each run of slots smooths the track.
public struct Positioning: Sendable {
    public let plan: Plan
    /// Seconds per slot: the kiosks' window, to which interaction windows are aligned.
    public let slot: Double
    let grids = GridCache()

    static let receiverSigma = 2.5
    static let badgeSigma = 3.0
    /// A badge at chest height, a kiosk at desk or wall height.
    static let height = 0.5
    /// iBeacon badges' usual measured power at 1 m (dBm), for the hearing floor.
    static let typicalPower = -59.0
    /// The weakest advert a BlueZ adapter reports, dBm.
    static let adapterFloor = -95.0
    /// A 30 s window holds tens of adverts at σ 4 dB: its loudest is about 6 dB above its mean.
    /// Checked when the floor's sign was put right (2026-12-06; before, the site's +3 dB had
    /// made every floor 6 dB further): on random sites 1001–1008 as drawn, a margin of 6, 9 and
    /// 12 dB (12: the floors as they were) gave recall 0.956, 0.957, 0.958, precision 0.840,
    /// 0.845, 0.840 (least 0.710, 0.706, 0.691) and rooms right 94.2%, 93.7%, 92.6% (least
    /// 82.5%, 78.7%, 74.4%): 6 stays.
    static let hearingMargin = 6.0
    static let notHeardSigma = 4.0
    /// The chance per slot that a badge moves somewhere else in the room.
    static let jump = 0.02
    /// Slots further apart than this start a new track.
    static let longestGap = 10
    /// A fix keeps the likeliest cells up to this share of the chance, at most `fixCells` of them.
    static let fixMass = 0.97
    static let fixCells = 64
    /// The chance per slot that a badge goes into another room.
    static let roomChange = 0.01
    /// The chance per slot that a badge in a corridor (a room whose use is `circulation`) leaves
    /// it: people walk through corridors in under a minute.
    static let passing = 0.5
    /// Of a move between rooms, the share that goes to a room not next door (`RoomMoves`).
    static let farMove = 0.1
    /// What one step's evidence weighs in a room chain, as a power of its likelihood. The
    /// likelihood takes each window's readings as independent of the last, but a stay's readings
    /// share errors the model does not know: each kiosk's own receive offset, the wearer's body
    /// turned away from one kiosk for the whole stay, walls that lose more or less than
    /// `wallLoss`. Counted at full weight, thirty steps of the same few decibels of error
    /// outweigh any sense of how people move; at a tenth, about ten steps (five minutes) count
    /// as one look. Chosen on random sites 1001–1004, every badge's minutes in a kiosk's room:
    /// with walls taken at 6 dB, rooms right 83.9% at full weight, 88.7% at 0.3, 93.9% at 0.1;
    /// at 4 dB, 93.5% at 0.3, 94.4% at 0.2, 95.2% at 0.1; at 3 dB, 94.2% at 0.1, 93.9% at 0.05.
    /// Flagging there: precision 0.83 at 0.1 against 0.80 at 0.2 and 0.3, recall 0.97 at each;
    /// equal on sites 1005–1008. The example campus, whose simulated radio has none of those
    /// errors, loses recall at 0.1 (0.90 against 0.93 at 0.3; EFFICACY.md). Checked again once
    /// far kiosks stopped ruling rooms out (2026-12-06), on sites 1001–1014 under their kiosks'
    /// fit: at 0.07, 0.1 and 0.15 rooms right 97.78%, 97.55%, 96.90% pooled, precision 0.828,
    /// 0.827, 0.826, recall 0.966, 0.968, 0.968 (least 0.847, 0.882, 0.887: 0.07 loses site
    /// 1004's): 0.1 stays.
    static let evidenceWeight = 0.1
    /// A room's evidence is its likelihood averaged over a coarser grid than positions use, of
    /// about this many cells, at least `evidenceStep` metres apart: on random sites 1001–1004,
    /// rooms right 95.2% against 95.4% with the positions' grid (400 cells, 0.5 m), flagging
    /// one report in 2.3 s against 3.4 s on site 1004.
    static let evidenceCells = 100.0
    static let evidenceStep = 1.0

    public init(plan: Plan, slot: Double = 30) {
        self.plan = plan
        self.slot = slot
    }

    /// The window slot a time falls in.
    public func slot(of t: Double) -> Int { Int((t / slot).rounded(.down)) }

    /// One device's fixes in one room, by slot: for each slot in which `least` or more kiosks of
    /// that room heard it, where in the room it was, from every window of the device in
    /// `windows` (other devices' are ignored). The track is smoothed over every slot a kiosk of
    /// the room heard it, whatever `least`.
    public func track(_ windows: [Window], device: String, room: String, least: Int = 1) -> [Int: Fix] {
        guard let t = smoothed(windows, device: device, room: room) else { return [:] }
        var out: [Int: Fix] = [:]
        for s in t.slots.keys {
            if let fix = t.fix(at: s, least: least) { out[s] = fix }
        }
        return out
    }

    /// A device's track in one room, smoothed, its fixes worked out when asked for (each sorts
    /// the room's cells, and flagging needs those of a few slots: `Colocation.judged`).
    func smoothed(_ windows: [Window], device: String, room: String) -> Track? {
        guard let grid = grids.grid(room, plan: plan) else { return nil }
        // The kiosks the grid has a model for that heard the device, numbered in key order, and
        // each slot's readings by their number: (sum, count) of y.
        var heardBy: [(window: Window, receiver: Plan.Receiver)] = []
        var alive = Set<String>()
        for w in windows where w.device == device {
            guard let r = plan.receiver(w.anchor), grid.predicted[r.key] != nil else { continue }
            heardBy.append((w, r))
            alive.insert(r.key)
        }
        let kiosks = alive.sorted()
        let number = Dictionary(uniqueKeysWithValues: kiosks.enumerated().map { ($1, $0) })
        let inRoom = kiosks.map { k in plan.receiver(k)?.room == room }
        var heard: [Int: [(sum: Double, count: Int)]] = [:]
        for (w, r) in heardBy {
            let i = number[r.key]!
            let s = slot(of: w.start)
            if heard[s] == nil { heard[s] = Array(repeating: (0, 0), count: kiosks.count) }
            heard[s]![i].sum += r.loss(at: w.distance)
            heard[s]![i].count += 1
        }
        let slots = heard.keys.filter { s in kiosks.indices.contains { inRoom[$0] && heard[s]![$0].count > 0 } }
            .sorted()
        guard !slots.isEmpty else { return nil }
        let rows = grid.rows(kiosks)
        var ll = [Double](repeating: 0, count: grid.cells.count)
        var sum = ll
        let likelihoods = slots.map { s in
            let readings = heard[s]!
            _ = grid.logLikelihood(
                y: readings.map { $0.count > 0 ? $0.sum / Double($0.count) : 0 },
                heard: readings.map { $0.count > 0 },
                rows: rows,
                strict: false,
                into: &ll,
                sum: &sum
            )
            let top = ll.max() ?? 0
            return ll.map { exp($0 - top) }
        }
        let posteriors = grid.smooth(slots: slots, likelihoods: likelihoods)
        var bySlot: [Int: (posterior: [Double], receivers: Int)] = [:]
        for (k, s) in slots.enumerated() {
            bySlot[s] = (posteriors[k], kiosks.indices.filter { inRoom[$0] && heard[s]![$0].count > 0 }.count)
        }
        return Track(grid: grid, slots: bySlot)
    }

    /// `smoothed`'s answer: each slot's posterior over the room's cells, and how many of the
    /// room's kiosks heard the device then.
    struct Track {
        let grid: RoomGrid
        let slots: [Int: (posterior: [Double], receivers: Int)]

        /// How many of the room's kiosks heard the device in a slot (0: none, or not smoothed).
        func receivers(at slot: Int) -> Int { slots[slot]?.receivers ?? 0 }

        /// The fix of a slot in which `least` or more of the room's kiosks heard the device.
        func fix(at slot: Int, least: Int) -> Fix? {
            guard let s = slots[slot], s.receivers >= least else { return nil }
            return grid.fix(s.posterior, receivers: s.receivers)
        }
    }
}

import TracerSite

/// Who counts as exposed: docs/design.md's defaults, each configurable.
public struct ExposurePolicy: Sendable, Equatable {
    /// How two devices' separation is judged from their distances d1, d2 to one anchor, which
    /// put it somewhere in [|d1 − d2|, d1 + d2].
    public enum Separation: String, Sendable, CaseIterable {
        /// d1 + d2 ≤ radius: certainly within the radius (both within 3 m at 6 m: the original
        /// app's near/immediate rule). Never flags a stranger; misses opposite sides of a kiosk.
        case sum
        /// |d1 − d2| ≤ radius: possibly within it. Flags more, including the far side of a room.
        case possible
        /// By the kiosk's room (the map's outline and the kiosk's position): flagged when the
        /// chance that two devices at d1 and d2 are within the radius reaches `likelihood`,
        /// taking each anywhere on its arc inside the room; a distance that fits nowhere in the
        /// room is a device behind a wall, and so is a window another kiosk heard closer
        /// (`attribution`). Falls back to `sum` at anchors the map does not place.
        case geometric
    }

    /// Metres.
    public var radius: Double = 6
    /// Seconds between two windows (gap ≤ this; overlap counts).
    public var window: Double = 300
    /// How far back from the test's collection date (seconds).
    public var lookback: Double = 14 * 86_400
    public var separation: Separation = .sum
    /// The longest an interaction document spans (the daemon's window), to bound range reads.
    public var longestInteraction: Double = 60
    /// Each kiosk's room, for the `geometric` rule (from the map).
    public var geometry: [String: RoomGeometry] = [:]
    /// The `geometric` rule flags from this chance of being within the radius (0.3: the best
    /// trade-off on simulated days, EFFICACY.md).
    public var likelihood = 0.3
    /// Under positions, the pair decision flags an episode from this chance (0.15: the highest
    /// that kept recall at 0.95 on the random sites settings are chosen on, EFFICACY.md).
    public var chance = 0.15
    /// Under the `geometric` rule, windows of a device at a kiosk while another kiosk heard it
    /// closer are taken as heard through a wall and left out.
    public var attribution = true
    /// Under the `geometric` rule, a pair of windows is judged by the two badges' positions
    /// where several kiosks heard both (`Positioning`), else by their distances to the anchor.
    public var positions = true
    /// The site's rooms and kiosks, for positions (from the map).
    public var plan: Plan?
    /// Seconds per interaction window, to which kiosks align their windows.
    public var slot: Double = 30

    public init() {}

    /// The room an anchor is in (the anchor itself when the map does not place it).
    public func room(of anchor: String) -> String { geometry[anchor]?.room ?? anchor }

    /// Whether windows heard through a wall are left out (the geometric rule's attribution).
    public var attributes: Bool { separation == .geometric && attribution }

    /// Whether separation bounds count as within the radius.
    func within(_ bounds: (low: Double, high: Double)) -> Bool {
        switch separation {
        case .sum, .geometric: bounds.high <= radius + 1e-9
        case .possible: bounds.low <= radius + 1e-9
        }
    }
}

extension ExposurePolicy {
    /// A site's policy from its BeaconMap (`settings:` exposureRadius, exposureWindow,
    /// lookbackDays, separation; the ranging window bounds how long an interaction lasts).
    public init(site: Site) {
        self.init()
        radius = site.exposure.radius
        window = site.exposure.windowMinutes * 60
        lookback = site.exposure.lookbackDays * 86_400
        separation = Separation(rawValue: site.exposure.separation) ?? .geometric
        likelihood = site.exposure.likelihood
        chance = site.exposure.chance
        positions = site.exposure.positions
        longestInteraction = max(60, site.ranging.window * 2)
        slot = site.ranging.window
        plan = Plan(site: site)
        // Kiosks, and fixed beacons for phones in scanner mode (their windows are at the beacon).
        for a in site.anchors {
            if let room = site.room(a.room) { geometry[a.key] = RoomGeometry(kiosk: a.position, room: room) }
        }
    }
}

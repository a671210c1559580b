import Foundation
import TracerSite

/// What a kiosk hears of a badge at a point: log-distance path loss with the site's exponent,
/// the badge's own offset, walls in the way and the wearer's body, before noise and loss.
struct Radio {
    let site: Site
    let parameters: SimulationParameters
    let exponent: Double
    /// The site's walls, each room's box worked out once: every advert heard through a wall counts them.
    let walls: Room.Walls
    /// Badge and kiosk heights differ by about half a metre.
    static let heightDifference = 0.5

    init(site: Site, parameters: SimulationParameters) {
        self.site = site
        self.parameters = parameters
        walls = Room.Walls(site.rooms)
        if let n = parameters.exponent {
            exponent = n
        } else if case .logDistance(let n) = site.ranging.model {
            exponent = n
        } else {
            exponent = 2
        }
    }

    /// Distance in three dimensions from a point on the floor plan to an anchor.
    static func range(_ p: Point, _ anchor: Point) -> Double {
        let d = Geometry.distance(p, anchor)
        return (d * d + heightDifference * heightDifference).squareRoot()
    }

    /// The mean RSSI (dBm) at a kiosk from a transmitter at a point in a room.
    func meanRSSI(power: Double, at p: Point, room: Int, facing: Double?, kiosk: Anchor, kioskRoom: Int) -> Double {
        var rssi = power - 10 * exponent * log10(max(0.1, Self.range(p, kiosk.position)))
        rssi += parameters.receiverErrors[kiosk.key] ?? 0
        if room != kioskRoom {
            rssi -=
                Double(walls.count(from: p, in: room, to: kiosk.position, in: kioskRoom))
                * parameters.wallLoss
        }
        if let facing {
            // 0 dB facing the kiosk, the whole shadow with the back to it.
            let toward = atan2(kiosk.position.y - p.y, kiosk.position.x - p.x)
            rssi -= parameters.shadow * (1 - cos(toward - facing)) / 2
        }
        return rssi
    }
}

/// A kiosk's noise on one emitter's adverts: a slow part that drifts (people and furniture moving
/// between the two, correlated over seconds: an Ornstein–Uhlenbeck process sampled at each
/// advert) and a fast part drawn afresh for each advert, their variances adding up to σ².
struct Noise {
    /// σ of the fast part, dB.
    let fast: Double
    /// σ of the slow part, dB.
    let drifting: Double
    let seconds: Double
    private var value = 0.0
    private var last = -Double.infinity

    init(sigma: Double, drift: Double, seconds: Double) {
        let share = min(1, max(0, drift))
        fast = sigma * (1 - share).squareRoot()
        drifting = sigma * share.squareRoot()
        self.seconds = max(0.001, seconds)
    }

    /// A new emitter: the slow part starts afresh.
    mutating func restart() {
        value = 0
        last = -.infinity
    }

    /// The slow part at `t` (times in order); draws nothing when there is none, so a simulation
    /// without drift draws what it always did.
    mutating func slow(at t: Double, _ rng: inout SeededGenerator) -> Double {
        guard drifting > 0 else { return 0 }
        let rho = last.isFinite ? exp(-max(0, t - last) / seconds) : 0
        value = rho * value + (1 - rho * rho).squareRoot() * rng.gaussian(drifting)
        last = t
        return value
    }
}

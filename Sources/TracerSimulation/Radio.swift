import Foundation
import TracerSite

/// What a kiosk hears of a badge at a point: log-distance path loss with the site's exponent,
/// the badge's own offset, walls in the way and the wearer's body, before noise and loss.
struct Radio {
    let site: Site
    let parameters: SimulationParameters
    let exponent: Double
    /// Badge and kiosk heights differ by about half a metre.
    static let heightDifference = 0.5

    init(site: Site, parameters: SimulationParameters) {
        self.site = site
        self.parameters = parameters
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
            rssi -= Double(walls(from: p, room: room, to: kiosk.position, room: kioskRoom)) * parameters.wallLoss
        }
        if let facing {
            // 0 dB facing the kiosk, the whole shadow with the back to it.
            let toward = atan2(kiosk.position.y - p.y, kiosk.position.x - p.x)
            rssi -= parameters.shadow * (1 - cos(toward - facing)) / 2
        }
        return rssi
    }

    /// Walls crossed on the straight line between two points: each change of room (or going
    /// outdoors) along it, sampled every 25 cm.
    func walls(from p: Point, room a: Int, to q: Point, room b: Int) -> Int {
        let d = Geometry.distance(p, q)
        let steps = max(1, Int(d / 0.25))
        var current: Int? = a
        var count = 0
        for i in 1...steps {
            let f = Double(i) / Double(steps)
            let s = Point(p.x + (q.x - p.x) * f, p.y + (q.y - p.y) * f)
            if let c = current, site.rooms[c].contains(s) { continue }
            let next = site.rooms.indices.first { site.rooms[$0].contains(s) }
            if next != current {
                count += 1
                current = next
            }
        }
        if current != b { count += 1 }
        return count
    }
}

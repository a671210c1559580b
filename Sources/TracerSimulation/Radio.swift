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
            rssi -=
                Double(Room.walls(from: p, in: room, to: kiosk.position, in: kioskRoom, rooms: site.rooms))
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

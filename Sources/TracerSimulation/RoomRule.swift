import Foundation
import TracerSite

extension Evaluation {
    /// Judges the nearest-kiosk room rule on the same windows, as the baseline tracer's rule
    /// must beat: in each slot a badge is in the room of the kiosk that put it closest (what room
    /// presence from fixed receivers does: ESPresense, Bermuda), and a reporter's neighbours are
    /// everyone in the same room in a slot within `window` of one of the reporter's.
    public mutating func nearestKioskRoom(_ observed: [ObservedWindow], site: Site, slot: Double, window: Double) {
        // Each device's nearest kiosk in each slot, by its room.
        struct Nearest {
            var room: String
            var distance: Double
        }
        var nearest: [String: [Int: Nearest]] = [:]
        for o in observed {
            guard let d = o.distance, let room = site.anchor(o.anchor)?.room else { continue }
            let s = Int((o.start / slot).rounded(.down))
            if let n = nearest[o.device]?[s], n.distance <= d { continue }
            nearest[o.device, default: [:]][s] = Nearest(room: room, distance: d)
        }
        struct Place: Hashable {
            var room: String
            var slot: Int
        }
        var present: [Place: [String]] = [:]
        for (device, slots) in nearest {
            for (s, n) in slots { present[Place(room: n.room, slot: s), default: []].append(device) }
        }
        let reach = Int((window / slot).rounded(.up))
        var counts = Counts()
        for r in reporters {
            var flagged = Set<String>()
            for (s, n) in nearest[r] ?? [:] {
                for t in (s - reach)...(s + reach) {
                    for d in present[Place(room: n.room, slot: t)] ?? [] where d != r { flagged.insert(d) }
                }
            }
            counts.add(truth: truth(of: r), flagged: flagged)
        }
        roomRule = counts
    }

    /// Sorts the devices flagged that were never within the radius (false flags) by where they
    /// were, half-way through their first flagged exposure: in the reporter's room but farther
    /// than the radius (`sameRoomFarther`), in another room with a kiosk (`otherRoom`), in a
    /// room no kiosk covers, such as a corridor without one (`unmonitored`), or not in any room:
    /// gone, or outdoors (`away`).
    public mutating func sortFalseFlags(_ exposures: [FlaggedExposure], truth: GroundTruth) {
        let kioskRooms = Set(truth.kiosks.map(\.room))
        var out: [String: Int] = [:]
        for r in reporters {
            let real = self.truth(of: r)
            var first: [String: FlaggedExposure] = [:]
            for e in exposures where e.reporter == r && !real.contains(e.device) {
                if let f = first[e.device], f.from <= e.from { continue }
                first[e.device] = e
            }
            for (device, e) in first {
                let t = (e.from + e.to) / 2
                let mine = truth.segment(of: r, at: t)
                let theirs = truth.segment(of: device, at: t)
                let kind: String
                if let room = theirs?.room, !kioskRooms.contains(room) {
                    kind = "unmonitored"
                } else if theirs?.room == nil {
                    kind = "away"
                } else if theirs?.room == mine?.room {
                    kind = "sameRoomFarther"
                } else {
                    kind = "otherRoom"
                }
                out[kind, default: 0] += 1
            }
        }
        falseFlags = out
    }

    /// The devices truly near a reporter.
    func truth(of reporter: String) -> Set<String> {
        truthPartners[reporter] ?? []
    }
}

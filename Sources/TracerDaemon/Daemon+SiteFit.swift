import Foundation
import TracerModel
import TracerSite
import TracerStore

extension SiteFit.Decision {
    /// What kind of decision, to say each kind once.
    var kind: String {
        switch self {
        case .follow: "follow"
        case .unchanged: "unchanged"
        case .loose: "loose"
        case .anotherMoved: "another moved"
        case .notFollowed(let why): "not: " + why
        }
    }
}

extension Daemon {
    /// Judges the site server's fit of this kiosk's receiver (`SiteFit.decision`). What it takes
    /// is stored at once in `beacons/{key}`'s calibration, with the move it follows (replicated
    /// with the interactions; a restart ranges with it and goes on following the move), and
    /// ranged with from the next batch of adverts.
    @discardableResult
    public func follow(_ fit: SiteFit) async -> SiteFit.Decision {
        guard case .gateway(let kiosk) = mode else { return .notFollowed("not a kiosk") }
        let site = currentSite.withLock { $0 }
        let stored: Beacon.Calibration?
        do {
            stored = try await store.reading { db in Beacon.Calibration(try db.get(Collections.beacon(kiosk))) }
        } catch {
            logger.error("reading the kiosk's stored calibration failed", metadata: ["error": "\(error)"])
            return .unchanged
        }
        let current = stored?.receiverOffset ?? site.anchor(kiosk)?.receiverOffset ?? 0
        let move = stored?.movedFrom.map {
            SiteFit.Move(base: $0, shift: stored?.shift ?? 0, since: stored?.movedAt ?? fit.at)
        }
        let (decision, after) = fit.decision(site: site, kiosk: kiosk, current: current, move: move)
        var offset = current
        if case .follow(let o) = decision { offset = o }
        if offset != current || after != move {
            let value = offset
            do {
                try await store.writing { db in
                    var c = Beacon.Calibration(receiverOffset: value, windows: 0, references: 0, source: "kiosks")
                    c.movedFrom = after?.base
                    c.shift = after?.shift
                    c.movedAt = after?.since
                    // The field whole (a merge would keep a move's fields once it is let go).
                    let path = try Collections.beacon(kiosk)
                    try db.set(path, [:], merge: true)
                    try db.update(path, ["calibration": .map(c.data)])
                }
            } catch {
                logger.error("storing the site server's fit of this kiosk failed", metadata: ["error": "\(error)"])
                return .unchanged
            }
        }
        let said = lastFit.withLock { last in
            defer { last = decision }
            return last?.kind == decision.kind
        }
        func dB(_ x: Double) -> String { (x >= 0 ? "+" : "") + String(format: "%.1f", x) }
        switch decision {
        case .follow(let o) where after != nil:
            followed.withLock { $0 = o }
            logger.warning(
                "the site server names this kiosk as moved (re-mounted, turned or covered?): it ranges with what it had before and the move",
                metadata: ["offset.dB": "\(dB(o))", "was.dB": "\(dB(current))", "move.dB": "\(dB(after?.shift ?? 0))"]
            )
        case .follow(let o):
            followed.withLock { $0 = o }
            logger.notice(
                "ranging with the site server's fit of this kiosk's receiver, from the kiosks hearing each other",
                metadata: [
                    "offset.dB": "\(dB(o))", "uncertainty.dB": "\(String(format: "%.1f", fit.uncertainty))",
                    "was.dB": "\(dB(current))",
                ]
            )
        case .loose where !said:
            logger.info(
                "the site server knows this kiosk's receiver to ±\(String(format: "%.1f", fit.uncertainty)) dB only: it ranges with \(dB(current)) dB"
            )
        case .notFollowed(let why) where !said:
            logger.info("this kiosk does not range with the site server's fit of it: \(why)")
        default:
            break
        }
        return decision
    }

    /// The site server's fit taken since the last batch, once (nil when there is none).
    func takeFollowed() -> Double? {
        followed.withLock { o in
            defer { o = nil }
            return o
        }
    }
}

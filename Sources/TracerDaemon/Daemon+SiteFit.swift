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
        let given = Self.mapOffset(of: kiosk, in: site)
        let stored: Beacon.Calibration?
        do {
            // One made under another map's offset is set aside (the next batch removes it).
            stored = try await store.reading { db in Beacon.Calibration(try db.get(Collections.beacon(kiosk))) }
                .flatMap { $0.isSetAside(byMapOffset: given) ? nil : $0 }
        } catch {
            logger.error("reading the kiosk's stored calibration failed", metadata: ["error": "\(error)"])
            return .unchanged
        }
        let current = stored?.receiverOffset ?? given
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
                    c.mapOffset = given
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
        switch decision {
        case .follow(let o) where after != nil:
            followed.withLock { $0 = (o, given) }
            logger.warning(
                "the site server names this kiosk as moved (re-mounted, turned or covered?): it ranges with what it had before and the move",
                metadata: [
                    "offset.dB": "\(Self.dB(o))", "was.dB": "\(Self.dB(current))",
                    "move.dB": "\(Self.dB(after?.shift ?? 0))",
                ]
            )
        case .follow(let o):
            followed.withLock { $0 = (o, given) }
            logger.notice(
                "ranging with the site server's fit of this kiosk's receiver, from the kiosks hearing each other",
                metadata: [
                    "offset.dB": "\(Self.dB(o))", "uncertainty.dB": "\(String(format: "%.1f", fit.uncertainty))",
                    "was.dB": "\(Self.dB(current))",
                ]
            )
        case .loose where !said:
            logger.info(
                "the site server knows this kiosk's receiver to ±\(String(format: "%.1f", fit.uncertainty)) dB only: it ranges with \(Self.dB(current)) dB"
            )
        case .notFollowed(let why) where !said:
            logger.info("this kiosk does not range with the site server's fit of it: \(why)")
        default:
            break
        }
        return decision
    }

    /// The site server's fit taken since the last batch, once: nil when there is none, or when
    /// it was taken under another offset of the map's for this kiosk than `site`'s.
    func takeFollowed(under site: Site) -> Double? {
        guard case .gateway(let kiosk) = mode else { return nil }
        let taken = followed.withLock { o in
            defer { o = nil }
            return o
        }
        guard let taken else { return nil }
        let given = Self.mapOffset(of: kiosk, in: site)
        return Beacon.Calibration.differ(taken.mapOffset, given) ? nil : taken.offset
    }
}

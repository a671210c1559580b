import Foundation
import TracerModel
import TracerSite
import TracerStore

/// The site server's fit of one kiosk's receiver from what the kiosks hear of each other (`GET
/// /v1/site/calibration?exponent=map`, the exponent held at the map's), and whether the kiosk
/// ranges with it. A kiosk with no fixed beacon in its room has no other way to know its
/// receiver as it runs; one with them fits itself from them (`RunningCalibration`).
public struct SiteFit: Sendable, Equatable {
    /// dB to add to the kiosk's readings: its receiver's whole error, at the map's exponent.
    public var offset: Double
    /// One standard error, dB.
    public var uncertainty: Double
    /// Whether the server names the kiosk as moved in the last half hour: its hour mixes two
    /// mountings, so its offset is neither's.
    public var moved: Bool

    public init(offset: Double, uncertainty: Double, moved: Bool) {
        self.offset = offset
        self.uncertainty = uncertainty
        self.moved = moved
    }

    public enum Decision: Sendable, Equatable {
        /// Range with this offset from now on.
        case follow(Double)
        /// What the kiosk ranges with already, within `leastChange` and one standard error.
        case unchanged
        /// Known to no better than `loosest`: the kiosk keeps what it has.
        case loose
        /// Named as moved: the kiosk keeps what it has until its hour is one mounting again.
        case moved
        /// Not for this kiosk, and why.
        case notFollowed(String)
    }

    /// dB: a fit looser than this is not ranged with (the issue's ±1.5 dB).
    public static let loosest = 1.5
    /// dB: a fit is taken when it moved this much, and one standard error, from what the kiosk
    /// ranges with; less is the hour's noise, and each change leaves windows on two offsets.
    public static let leastChange = 0.5

    /// Whether `kiosk` of `site`, ranging with `current` dB beyond the site's own offset (its
    /// stored fit, else its anchor's `receiverOffset`), takes this fit.
    public func decision(site: Site, kiosk: String, current: Double) -> Decision {
        guard site.exposure.runningCalibration else { return .notFollowed("the map says calibration: map") }
        guard let anchor = site.anchor(kiosk), anchor.kind == .kiosk else {
            return .notFollowed("'\(kiosk)' is not a kiosk of the map")
        }
        guard site.references(for: kiosk).isEmpty else {
            return .notFollowed("it fits itself from the fixed beacons in its room")
        }
        guard anchor.pathLossExponent == nil else {
            return .notFollowed("its anchor has a pathLossExponent of its own, and the fit is at the site's")
        }
        // Offsets fitted at a guessed exponent take up its error link by link: on random sites
        // (EFFICACY.md, "Kiosks that follow the site's fit") more of the near were told, but
        // rooms came right less often and the worst site's precision fell. At a fitted one
        // they are the fit that was measured to win.
        guard site.exposure.exponentGiven else {
            return .notFollowed(
                "the map gives no pathLossExponent: write the site's fit into it once (tracer site calibration --map FILE --write, then tracer map publish) and kiosks follow their offsets at it"
            )
        }
        guard offset.isFinite, uncertainty.isFinite else { return .loose }
        if moved { return .moved }
        guard uncertainty <= Self.loosest else { return .loose }
        guard abs(offset - current) >= max(Self.leastChange, uncertainty) else { return .unchanged }
        return .follow(offset)
    }
}

extension SiteFit.Decision {
    /// What kind of decision, to say each kind once.
    var kind: String {
        switch self {
        case .follow: "follow"
        case .unchanged: "unchanged"
        case .loose: "loose"
        case .moved: "moved"
        case .notFollowed(let why): "not: " + why
        }
    }
}

extension Daemon {
    /// Judges the site server's fit of this kiosk's receiver (`SiteFit.decision`). One it takes
    /// is stored at once in `beacons/{key}`'s calibration (replicated with the interactions; a
    /// restart ranges with it) and ranged with from the next batch of adverts.
    @discardableResult
    public func follow(_ fit: SiteFit) async -> SiteFit.Decision {
        guard case .gateway(let kiosk) = mode else { return .notFollowed("not a kiosk") }
        let site = currentSite.withLock { $0 }
        let current: Double
        do {
            current =
                try await store.reading { db in try self.storedCalibration(in: db) }
                ?? site.anchor(kiosk)?.receiverOffset ?? 0
        } catch {
            logger.error("reading the kiosk's stored calibration failed", metadata: ["error": "\(error)"])
            return .unchanged
        }
        let decision = fit.decision(site: site, kiosk: kiosk, current: current)
        let said = lastFit.withLock { last in
            defer { last = decision }
            return last?.kind == decision.kind
        }
        func dB(_ x: Double) -> String { (x >= 0 ? "+" : "") + String(format: "%.1f", x) }
        switch decision {
        case .follow(let offset):
            do {
                try await store.writing { db in
                    let data = Beacon.Calibration(receiverOffset: offset, windows: 0, references: 0, source: "kiosks")
                    try db.set(try Collections.beacon(kiosk), ["calibration": .map(data.data)], merge: true)
                }
            } catch {
                logger.error("storing the site server's fit of this kiosk failed", metadata: ["error": "\(error)"])
                lastFit.withLock { $0 = nil }
                return .unchanged
            }
            followed.withLock { $0 = offset }
            logger.notice(
                "ranging with the site server's fit of this kiosk's receiver, from the kiosks hearing each other",
                metadata: [
                    "offset.dB": "\(dB(offset))", "uncertainty.dB": "\(String(format: "%.1f", fit.uncertainty))",
                    "was.dB": "\(dB(current))",
                ]
            )
        case .moved where !said:
            logger.warning(
                "the site server names this kiosk as moved in the last half hour (re-mounted, turned or covered?): it ranges with \(dB(current)) dB until its fit is of one mounting again"
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

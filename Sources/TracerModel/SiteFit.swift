import TracerSite

/// The site server's fit of one kiosk's receiver from what the kiosks hear of each other (`GET
/// /v1/site/calibration?exponent=map`, the exponent held at the map's), and whether the kiosk
/// ranges with it. A kiosk with no fixed beacon in its room has no other way to know its
/// receiver as it runs; one with them fits itself from them (`RunningCalibration`).
///
/// Two things in the fit are worth following, and they are followed differently (chosen on
/// random sites 1001–1008 with `Tools/bench/remount`, EFFICACY.md "Kiosks that follow the
/// site's fit"):
/// - **A move** (re-mounted, turned, covered) is found link by link, each link against its own
///   past, to a few tenths of a decibel: the kiosk adds the shift to what it ranged with before.
///   The hour's fit of a moved kiosk mixes two mountings, and a kiosk at the end of a corridor
///   is known to ±3–8 dB at best: taking the fit instead put the re-mounted kiosk right on 3 of
///   8 sites within three hours, the shift on 6.
/// - **The fit itself**, when it knows the kiosk to ±1.5 dB and moved two standard errors from
///   what the kiosk ranges with (one: 81 changes in three hours on 8 sites whose radio did not
///   move, and the worst kiosk further from its truth; two: 9, none further), while no kiosk of
///   the site is named as moved (its hour is in every kiosk's fit), and only at an exponent the
///   map gives (offsets at a guessed one told more of the near but put fewer people in the right
///   room on random sites).
public struct SiteFit: Sendable {
    /// dB to add to the kiosk's readings: its receiver's whole error, at the map's exponent.
    public var offset: Double
    /// One standard error, dB.
    public var uncertainty: Double
    /// When the server names the kiosk as moved in the last half hour: dB its readings moved by
    /// (positive: it reads lower, so that much more is added), and its standard error.
    public var shift: (dB: Double, uncertainty: Double)?
    /// Whether the server names any kiosk of the site as moved.
    public var siteMoved: Bool
    /// The time the fit is up to (Unix seconds).
    public var at: Double

    public init(
        offset: Double,
        uncertainty: Double,
        shift: (dB: Double, uncertainty: Double)? = nil,
        siteMoved: Bool,
        at: Double
    ) {
        self.offset = offset
        self.uncertainty = uncertainty
        self.shift = shift
        self.siteMoved = siteMoved || shift != nil
        self.at = at
    }

    /// A move being followed: what the kiosk ranged with before it, the largest shift the
    /// server gave it since (the first naming sees part of the move; later ones, as the server's
    /// three hours before fill with the new mounting, less of it), and when it was first named.
    public struct Move: Sendable, Equatable {
        public var base: Double
        public var shift: Double
        public var since: Double

        public init(base: Double, shift: Double, since: Double) {
            self.base = base
            self.shift = shift
            self.since = since
        }
    }

    /// Seconds a move is the same move after it was first named: the server compares the last
    /// half hour with the three hours before, so it may stop naming a kiosk for a check and name
    /// it again until those hours are all of the new mounting. A naming in between is the same
    /// move, never a second one to add (on random sites 16 and 19 it was added twice, and the
    /// kiosk ended 3–5 dB off).
    public static let moveSpan = CalibrationReport.recent + CalibrationReport.baseline

    public enum Decision: Sendable, Equatable {
        /// Range with this offset from now on.
        case follow(Double)
        /// What the kiosk ranges with already, within `leastChange` and the fit's errors.
        case unchanged
        /// Known to no better than `loosest`: the kiosk keeps what it has.
        case loose
        /// Another kiosk of the site is named as moved: every kiosk's fit holds its hour.
        case anotherMoved
        /// Not for this kiosk, and why.
        case notFollowed(String)
    }

    /// dB: a fit looser than this is not ranged with (the issue's ±1.5 dB).
    public static let loosest = 1.5
    /// dB: nothing is taken that moves what the kiosk ranges with by less (each change leaves
    /// the day's windows on two offsets).
    public static let leastChange = 0.5
    /// Standard errors the fit must have moved by before it is taken.
    public static let errors = 2.0

    /// Whether `kiosk` of `site`, ranging with `current` dB beyond the site's own offset (its
    /// stored fit, else its anchor's `receiverOffset`) and following `move` (nil: none), takes
    /// this fit; and the move it follows afterwards (nil once `moveSpan` has passed since the
    /// server first named it, and it no longer does).
    public func decision(site: Site, kiosk: String, current: Double, move: Move?) -> (Decision, Move?) {
        guard site.exposure.runningCalibration else { return (.notFollowed("the map says calibration: map"), nil) }
        guard let anchor = site.anchor(kiosk), anchor.kind == .kiosk else {
            return (.notFollowed("'\(kiosk)' is not a kiosk of the map"), nil)
        }
        guard site.references(for: kiosk).isEmpty else {
            return (.notFollowed("it fits itself from the fixed beacons in its room"), nil)
        }
        guard anchor.pathLossExponent == nil else {
            return (.notFollowed("its anchor has a pathLossExponent of its own, and the fit is at the site's"), nil)
        }
        if let shift, shift.dB.isFinite, shift.uncertainty.isFinite {
            var m = move ?? Move(base: current, shift: shift.dB, since: at)
            if shift.dB * m.shift > 0, abs(shift.dB) > abs(m.shift) { m.shift = shift.dB }
            let target = m.base + m.shift
            let taken = abs(target - current) >= max(Self.leastChange, shift.uncertainty)
            return (taken ? .follow(target) : .unchanged, m)
        }
        // Not named now: the move is kept for its span, and its hour's fit is not taken.
        if let move, at - move.since < Self.moveSpan { return (.unchanged, move) }
        guard !siteMoved else { return (.anotherMoved, nil) }
        guard site.exposure.exponentGiven else {
            return (
                .notFollowed(
                    "the map gives no pathLossExponent, so only a move is followed: write the site's fit into it once (tracer site calibration --map FILE --write, then tracer map publish) and kiosks follow their offsets at it"
                ), nil
            )
        }
        guard offset.isFinite, uncertainty.isFinite, uncertainty <= Self.loosest else { return (.loose, nil) }
        guard abs(offset - current) >= max(Self.leastChange, Self.errors * uncertainty) else {
            return (.unchanged, nil)
        }
        return (.follow(offset), nil)
    }
}

import Foundation
import TracerRanging

/// The site's radio fitted from what its kiosks hear of each other and of the map's fixed
/// beacons, whose places the map gives: every kiosk's receive and transmit offsets, the
/// path-loss exponent and the loss of an interior wall.
///
/// Every link (a kiosk hearing another anchor) is averaged over the span first, and each link is
/// one equation of the log-distance model:
///
///     rssi − measuredPower = r(receiver) + t(emitter) − 10·n·log10(d) − W·walls
///
/// with `d` and `walls` from the map (`Room.walls`, as positions count them). Two links alone
/// cannot tell a receiver that reads 3 dB low from a transmitter 3 dB weak (add c to every r
/// and take it from every t: the same readings), so the fit leans on what a kiosk is: one radio
/// and one antenna, mounted once, whose mounting and enclosure cost the same both ways — its
/// transmit offset is its receive offset plus a small difference of its own (the chip's
/// transmit power, ±1.5 dB a priori). A kiosk's own two offsets then follow from the links'
/// sums and differences wherever the kiosks that hear each other are not split in two
/// (three kiosks hearing one another are enough). The map's fixed beacons transmit at what
/// they claim, ±3 dB. A weak prior holds each unknown where a kiosk would have it with no
/// evidence (0 dB, n = 2, W = 5 dB), so a kiosk nobody hears reports a large uncertainty
/// rather than a number.
///
/// Why a linear least squares of our own, not a library: the system is small (2 unknowns a
/// kiosk, plus beacons, n and W: 1,003 for a 500-kiosk campus, whose normal equations a
/// Cholesky factorisation solves in well under a second) and swift-numerics has no linear
/// algebra; nothing in the package graph does.
public enum SiteCalibration {
    /// One kiosk's fitted receiver.
    public struct Kiosk: Sendable, Equatable {
        public var key: String
        /// dB to add to its readings (the map's `receiverOffset` convention): the opposite of
        /// how far it reads from the model.
        public var receiverOffset: Double
        /// One standard error of it, dB.
        public var uncertainty: Double
        /// How much stronger its adverts arrive than the power they claim, dB.
        public var transmitOffset: Double
        /// Anchors it heard, and kiosks that heard it.
        public var heard: Int
        public var heardBy: Int
    }

    public struct Fit: Sendable, Equatable {
        public var kiosks: [Kiosk]
        public var exponent: Double
        public var exponentUncertainty: Double
        public var wallLoss: Double
        public var wallLossUncertainty: Double
        /// The links' spread around the fitted model (dB): fading no fit removes.
        public var residual: Double
        /// Links (ordered receiver–emitter pairs) and hearings it rests on.
        public var links: Int
        public var hearings: Int
        public var from: Double
        public var to: Double

        public func kiosk(_ key: String) -> Kiosk? { kiosks.first { $0.key == key } }
    }

    /// The prior standard deviations (dB, and for the exponent its own unit).
    static let receiverPrior = 8.0
    static let reciprocityPrior = 1.5
    static let beaconPrior = 3.0
    static let exponentPrior = (mean: 2.0, sd: 1.0)
    /// The prior's spread for an exponent held at a value: a thousandth, nothing any link moves.
    static let heldExponent = 0.001
    static let wallPrior = (mean: 5.0, sd: 5.0)
    /// Links with fewer adverts than this are left out: a kiosk at the edge of range hears only
    /// the loud ones, and their mean reads high.
    static let minimumAdverts = 20
    /// The least spread of links around the model the uncertainties assume, dB.
    static let leastLinkSpread = 2.0

    /// Fits the hearings that overlap `from`–`to`. Nil when no kiosk heard another anchor of the
    /// map often enough. With `exponent`, the path-loss exponent is held there (what the kiosks
    /// range with) rather than fitted: offsets a kiosk can range with at that exponent.
    public static func fit(
        _ hearings: [KioskHearing],
        site: Site,
        from: Double,
        to: Double,
        exponent: Double? = nil
    ) -> Fit? {
        var u = Unknowns(site)
        if let exponent { u.exponent = (exponent, heldExponent) }
        var links: [LinkKey: LinkSums] = [:]
        var used = 0
        // The weakest advert any kiosk reported: the adapters' floor, near enough.
        var floor = Double.infinity
        for h in hearings where h.end > from && h.start < to && h.count > 0 && h.receiver != h.emitter {
            guard u.kioskIndex[h.receiver] != nil, u.kioskIndex[h.emitter] != nil || u.beaconIndex[h.emitter] != nil
            else { continue }
            links[LinkKey(h), default: LinkSums()].add(h)
            floor = min(floor, h.weakest)
            used += 1
        }
        let rows = Self.rows(links, site: site, unknowns: u, floor: floor)
        guard !rows.isEmpty else { return nil }

        // Passes: the links' spread first assumed 3 dB, then what the first fit left. After the
        // first, only links the model expects well above the floor are kept: a far link is heard
        // at all when its own fading favours it, so the far links heard read high, and taking
        // them would flatten the exponent and lift every kiosk's level (by 3 dB on random sites).
        // Chosen by what the model predicts, not by what was heard, the links kept are unbiased.
        var sigma = 3.0
        var solution: Pass?
        var active = rows
        for _ in 0..<3 {
            if let theta = solution?.theta {
                let kept = rows.filter { row in
                    let spread = (row.spread * row.spread + sigma * sigma).squareRoot()
                    return row.power + row.fitted(theta) >= floor + 2 * spread
                }
                if kept.count >= u.n { active = kept }
            }
            guard let pass = Pass(active, unknowns: u, sigma: sigma) else { return nil }
            solution = pass
            sigma = pass.nextSigma
        }
        guard let s = solution else { return nil }
        func sd(_ k: Int) -> Double { s.factor.inverseDiagonal(k).squareRoot() }
        let n = u.n
        let fitted = u.kiosks.enumerated().map { i, k in
            Kiosk(
                key: k.key,
                receiverOffset: -s.theta[i],
                uncertainty: sd(i),
                transmitOffset: s.theta[i] + s.theta[n + i],
                heard: s.heard[i],
                heardBy: s.heardBy[i]
            )
        }
        return Fit(
            kiosks: fitted,
            exponent: s.theta[u.iN],
            exponentUncertainty: sd(u.iN),
            wallLoss: s.theta[u.iW],
            wallLossUncertainty: sd(u.iW),
            residual: s.sigma,
            links: active.count,
            hearings: used,
            from: from,
            to: to
        )
    }

    /// The fit's unknowns and where each is: r (kiosks' receive levels), δ = t − r (kiosks),
    /// t (beacons), the exponent n, the walls' loss W.
    struct Unknowns {
        let kiosks: [Anchor]
        var kioskIndex: [String: Int] = [:]
        var beaconIndex: [String: Int] = [:]
        var roomIndex: [String: Int] = [:]
        /// Kiosks, beacons, all the unknowns; the exponent's and the walls' places.
        let n: Int
        let b: Int
        /// The exponent's prior (mean, sd): `exponentPrior`, or a value held.
        var exponent = exponentPrior
        var p: Int { 2 * n + b + 2 }
        var iN: Int { 2 * n + b }
        var iW: Int { 2 * n + b + 1 }

        init(_ site: Site) {
            kiosks = site.anchors.filter { $0.kind == .kiosk }
            let beacons = site.anchors.filter { $0.kind == .beacon }
            (n, b) = (kiosks.count, beacons.count)
            for (i, k) in kiosks.enumerated() { kioskIndex[k.key] = i }
            for (i, beacon) in beacons.enumerated() { beaconIndex[beacon.key] = i }
            for (i, r) in site.rooms.enumerated() { roomIndex[r.key] = i }
        }

        /// The priors as (index, mean, sd).
        var priors: [(Int, Double, Double)] {
            var priors: [(Int, Double, Double)] = []
            for i in 0..<n {
                priors.append((i, 0, receiverPrior))
                priors.append((n + i, 0, reciprocityPrior))
            }
            for j in 0..<b { priors.append((2 * n + j, 0, beaconPrior)) }
            priors.append((iN, exponent.mean, exponent.sd))
            priors.append((iW, wallPrior.mean, wallPrior.sd))
            return priors
        }
    }

    /// One link's equation: its terms over the unknowns and what it heard beyond its claimed
    /// power; the claimed power and its adverts' spread, to predict its raw mean.
    struct Row {
        var terms: [(Int, Double)]
        var y: Double
        var power: Double
        var spread: Double
        var receiver: Int
        var emitter: Int?

        func fitted(_ theta: [Double]) -> Double { terms.reduce(0.0) { $0 + $1.1 * theta[$1.0] } }
    }

    /// Each link's equation. A link whose adverts reach down to the floor lost its weakest ones
    /// there, and its mean reads high: through walls, that is most of what tells a wall's loss.
    fileprivate static func rows(_ links: [LinkKey: LinkSums], site: Site, unknowns u: Unknowns, floor: Double) -> [Row]
    {
        var rows: [Row] = []
        for (link, l) in links {
            let emitter = link.emitter
            let i = u.kioskIndex[link.receiver]!
            let rx = u.kiosks[i]
            guard let rxRoom = u.roomIndex[rx.room], let mean = l.corrected(floor: floor) else { continue }
            let anchor = site.anchor(emitter)!
            guard let txRoom = u.roomIndex[anchor.room] else { continue }
            let d = max(0.5, anchor.position.distance(to: rx.position))
            let walls = Double(
                anchor.room == rx.room
                    ? 0
                    : Room.walls(from: anchor.position, in: txRoom, to: rx.position, in: rxRoom, rooms: site.rooms)
            )
            var terms: [(Int, Double)] = [(i, 1)]
            if let j = u.kioskIndex[emitter] {
                terms += [(j, 1), (u.n + j, 1)]
            } else {
                terms.append((2 * u.n + u.beaconIndex[emitter]!, 1))
            }
            terms += [(u.iN, -10 * log10(d)), (u.iW, -walls)]
            rows.append(
                Row(
                    terms: terms,
                    y: mean - l.power,
                    power: l.power,
                    spread: l.spread,
                    receiver: i,
                    emitter: u.kioskIndex[emitter]
                )
            )
        }
        return rows
    }

    /// One weighted least-squares solve with the priors, the links' spread taken as `sigma`.
    struct Pass {
        let theta: [Double]
        let factor: Cholesky
        /// The spread it weighed the links by: the one its uncertainties rest on.
        let sigma: Double
        /// The spread it left: the next pass's.
        let nextSigma: Double
        /// Links each kiosk heard, and links in which each was heard.
        let heard: [Int]
        let heardBy: [Int]

        init?(_ rows: [Row], unknowns u: Unknowns, sigma: Double) {
            let p = u.p
            var heard = [Int](repeating: 0, count: u.n)
            var heardBy = heard
            for row in rows {
                heard[row.receiver] += 1
                if let j = row.emitter { heardBy[j] += 1 }
            }
            var m = [Double](repeating: 0, count: p * p)
            var v = [Double](repeating: 0, count: p)
            let w = 1 / (sigma * sigma)
            for row in rows {
                for (a, x) in row.terms {
                    v[a] += w * x * row.y
                    for (c, z) in row.terms { m[a * p + c] += w * x * z }
                }
            }
            for (k, mean, sd) in u.priors {
                m[k * p + k] += 1 / (sd * sd)
                v[k] += mean / (sd * sd)
            }
            guard let factor = Cholesky(m, size: p) else { return nil }
            let theta = factor.solve(v)
            let squares = rows.reduce(0.0) { sum, row in
                let r = row.y - row.fitted(theta)
                return sum + r * r
            }
            // Each link's equation frees a little: count the links beyond one unknown a kiosk
            // heard (the rest is the priors'), never below one.
            let freedom = max(1, rows.count - heard.filter { $0 > 0 }.count - 2)
            // Never below 2 dB: two fixed radios keep the fading of their own reflections for
            // hours (the simulator's random sites draw σ 1–3 dB for it), and a few links leave
            // too few degrees of freedom to see it.
            (self.theta, self.factor, self.sigma, self.heard, self.heardBy) = (theta, factor, sigma, heard, heardBy)
            nextSigma = max(SiteCalibration.leastLinkSpread, (squares / Double(freedom)).squareRoot())
        }
    }

    /// A kiosk whose links changed between two spans (`changes`).
    public struct Change: Sendable, Equatable {
        public var key: String
        /// dB: the recent offset minus the earlier one.
        public var shift: Double
        /// One standard error of the shift.
        public var uncertainty: Double
    }

    /// How much higher the mean of a link's adverts reads than the mean of all it sent, when
    /// the weakest fell below the adapter's floor: the mean and spread of the normal distribution
    /// whose part above `floor` has the heard mean and spread (the truncated normal's moments,
    /// inverted by fixed-point iteration). Nil when over half of it would lie below the floor:
    /// too little is left to say where its middle is.
    static func truncationBias(mean m: Double, sd s: Double, floor f: Double) -> Double? {
        guard s > 0.1, m - f < 4 * s else { return 0 }
        var mu = m
        var sigma = s
        for _ in 0..<50 {
            let a = (f - mu) / sigma
            let tail = 0.5 * erfc(a / 2.0.squareRoot())  // P(X > f)
            guard tail > 1e-6 else { return nil }
            let lambda = exp(-a * a / 2) / (2 * Double.pi).squareRoot() / tail
            let shrink = 1 + a * lambda - lambda * lambda
            guard shrink > 0.05 else { return nil }
            sigma = s / shrink.squareRoot()
            mu = m - sigma * lambda
        }
        guard mu > f else { return nil }
        return m - mu
    }

    /// A change worth a person's attention: 3 dB or more (a re-mounted or turned kiosk, a new
    /// enclosure) and three times its uncertainty.
    public static let noticeable = 3.0

    /// Kiosks that changed between two spans, largest first: link by link, each link's mean in
    /// the recent span minus its mean before (a link's own fading is the same in both, so it
    /// cancels: two absolute fits would each carry it), and each kiosk's change the median of
    /// its links' (heard and hearing: a re-mounting changes both), where it has three or more.
    /// A link cut by the adapters' floor is corrected for it, or left out when mostly below it.
    public static func changes(
        _ hearings: [KioskHearing],
        site: Site,
        before: ClosedRange<Double>,
        recent: ClosedRange<Double>
    ) -> [Change] {
        var spans: [[LinkKey: LinkSums]] = [[:], [:]]
        var floor = Double.infinity
        let kiosks = Set(site.anchors.filter { $0.kind == .kiosk }.map(\.key))
        for h in hearings where h.count > 0 && kiosks.contains(h.receiver) && site.anchor(h.emitter) != nil {
            let mid = (h.start + h.end) / 2
            let k = before.contains(mid) ? 0 : recent.contains(mid) ? 1 : -1
            guard k >= 0 else { continue }
            spans[k][LinkKey(h), default: LinkSums()].add(h)
            floor = min(floor, h.weakest)
        }
        var shifts: [String: [Double]] = [:]
        for (link, old) in spans[0] {
            guard let a = old.corrected(floor: floor), let b = spans[1][link]?.corrected(floor: floor) else { continue }
            for end in Set([link.receiver, link.emitter]) where kiosks.contains(end) {
                shifts[end, default: []].append(b - a)
            }
        }
        return shifts.compactMap { key, d in
            guard d.count >= 3, let median = PathLossFit.median(d) else { return nil }
            // The median's standard error from the links' spread about it (1.4826 × MAD).
            let mad = PathLossFit.median(d.map { abs($0 - median) }) ?? 0
            let sd = max(0.3, 1.4826 * mad * 1.25 / Double(d.count).squareRoot())
            // Reading lower makes the offset (dB to add) larger.
            let shift = -median
            guard abs(shift) >= noticeable, abs(shift) >= 3 * sd else { return nil }
            return Change(key: key, shift: shift, uncertainty: sd)
        }
        .sorted { abs($0.shift) > abs($1.shift) }
    }
}

/// A receiver and the anchor it heard.
private struct LinkKey: Hashable {
    var receiver: String
    var emitter: String

    init(_ h: KioskHearing) {
        receiver = h.receiver
        emitter = h.emitter
    }
}

/// One link's hearings summed: the adverts' count, and their RSSI's and claimed power's sums
/// (each hearing weighed by its adverts, as a kiosk's windows are), in dB.
private struct LinkSums {
    var count = 0
    var rssi = 0.0
    var squares = 0.0
    var powers = 0.0

    mutating func add(_ h: KioskHearing) {
        let m = Double(h.count)
        count += h.count
        rssi += h.rssi * m
        squares += (h.spread * h.spread + h.rssi * h.rssi) * m
        powers += h.measuredPower * m
    }

    var mean: Double { rssi / Double(count) }
    var spread: Double { max(0, squares / Double(count) - mean * mean).squareRoot() }
    /// The power its adverts claim at 1 m, on average.
    var power: Double { powers / Double(count) }

    /// Its mean RSSI with what the adapters' floor cut off put back (`truncationBias`); nil with
    /// too few adverts, or when most of it lay below the floor.
    func corrected(floor: Double) -> Double? {
        guard count >= SiteCalibration.minimumAdverts,
            let bias = SiteCalibration.truncationBias(mean: mean, sd: spread, floor: floor - 0.5)
        else { return nil }
        return mean - bias
    }
}

/// A symmetric positive-definite matrix's Cholesky factor, L·Lᵀ = M (row-major, dense).
struct Cholesky {
    let size: Int
    private var l: [Double]

    init?(_ m: [Double], size p: Int) {
        size = p
        l = [Double](repeating: 0, count: p * p)
        for j in 0..<p {
            var d = m[j * p + j]
            for k in 0..<j { d -= l[j * p + k] * l[j * p + k] }
            guard d > 1e-12 else { return nil }
            let root = d.squareRoot()
            l[j * p + j] = root
            for i in (j + 1)..<max(j + 1, p) {
                var s = m[i * p + j]
                for k in 0..<j { s -= l[i * p + k] * l[j * p + k] }
                l[i * p + j] = s / root
            }
        }
    }

    /// x with M·x = v.
    func solve(_ v: [Double]) -> [Double] {
        let p = size
        var y = v
        for i in 0..<p {
            var s = y[i]
            for k in 0..<i { s -= l[i * p + k] * y[k] }
            y[i] = s / l[i * p + i]
        }
        for i in stride(from: p - 1, through: 0, by: -1) {
            var s = y[i]
            for k in (i + 1)..<max(i + 1, p) { s -= l[k * p + i] * y[k] }
            y[i] = s / l[i * p + i]
        }
        return y
    }

    /// (M⁻¹)ₖₖ: the k-th column of the inverse, solved for.
    func inverseDiagonal(_ k: Int) -> Double {
        var e = [Double](repeating: 0, count: size)
        e[k] = 1
        return solve(e)[k]
    }
}

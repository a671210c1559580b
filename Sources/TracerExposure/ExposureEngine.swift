import Foundation
import TracerReports
import TracerSite
import TracerStore

/// Who counts as exposed: DESIGN.md's defaults, each configurable.
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
    /// Under the `geometric` rule, windows of a device at a kiosk while another kiosk heard it
    /// closer are taken as heard through a wall and left out.
    public var attribution = true

    public init() {}

    /// Whether separation bounds count as within the radius.
    func within(_ bounds: (low: Double, high: Double)) -> Bool {
        switch separation {
        case .sum, .geometric: bounds.high <= radius + 1e-9
        case .possible: bounds.low <= radius + 1e-9
        }
    }

    /// Whether two devices at d1 and d2 from an anchor count as within the radius.
    func within(anchor: String, _ d1: Double, _ d2: Double, cache: GeometryCache) -> Bool {
        if separation == .geometric, let g = geometry[anchor] {
            return cache.probability(g, anchor: anchor, d1, d2, radius: radius) >= likelihood
        }
        return within((abs(d1 - d2), d1 + d2))
    }
}

/// What flagging one report did.
public struct FlagResult: Sendable, Equatable {
    /// Devices with at least one exposure from this report.
    public var exposedDevices: [String]
    /// Exposure documents this report has now.
    public var exposures: Int
    /// Exposure documents written or deleted by this run (0 when re-run on the same data).
    public var changed: Int
    /// The reporter's interaction windows looked at.
    public var reporterWindows: Int
    /// The reporter's interactions marked `testResult: true` by this run.
    public var marked: Int = 0
    /// Seconds from the start until the exposures were committed (the exposed could be told).
    public var secondsToFlagged: Double = 0
}

/// Flags the people who were near a reporter: for each of the reporter's interaction windows
/// at an anchor, every other device's windows at the same anchor within `window` seconds whose
/// separation is within `radius`; one exposure per (report, device, anchor, contiguous episode).
///
/// Idempotent: exposure ids are derived from (report, device, anchor, episode start), so a re-run
/// on the same data writes nothing; a re-run after new data replaces what changed.
public struct ExposureEngine: ExposureFlagging {
    public var policy: ExposurePolicy {
        didSet { cache = GeometryCache() }
    }
    /// The geometric rule's answers so far (they depend on the policy only).
    private var cache = GeometryCache()

    public init(policy: ExposurePolicy = ExposurePolicy()) {
        self.policy = policy
    }

    /// Who was at an anchor when, read from the index alone: flagging's neighbour reads never
    /// load an interaction document (the daemon declares it too, so it is built as they are written).
    public static let presenceIndex = IndexDefinition(
        collectionID: "interactions",
        "start",
        "deviceId",
        "end",
        "distance"
    )

    /// Where else a device was heard, read from the index alone: the geometric rule's room
    /// attribution reads the flagged devices' windows by it (the daemon declares it too).
    public static let whereaboutsIndex = IndexDefinition(
        collectionID: "interactions",
        scope: .collectionGroup,
        "deviceId",
        "start",
        "end",
        "distance"
    )

    /// The indexes flagging and the admin's queries use.
    public static let indexes = [
        presenceIndex,
        whereaboutsIndex,
        IndexDefinition(collectionID: "interactions", "start"),
        IndexDefinition(collectionID: "interactions", scope: .collectionGroup, "deviceId", "start"),
        IndexDefinition(collectionID: "exposures", scope: .collectionGroup, "reportId"),
        IndexDefinition(collectionID: "exposures", scope: .collectionGroup, "beaconKey", "from"),
        IndexDefinition(collectionID: "exposures", "from"),
    ]

    public static func declareIndexes(_ store: DocumentStore) throws {
        for index in indexes { try store.declareIndex(index) }
    }

    public func reportAccepted(_ report: RecordedReport, store: DocumentStore) throws -> String {
        let r = try flag(reportID: report.id, store: store)
        if r.exposedDevices.isEmpty {
            return
                "exposures: nobody was within \(Int(policy.radius)) m at the same beacon (\(r.reporterWindows) interaction windows looked at)"
        }
        return
            "exposures: \(Self.count(r.exposedDevices.count, "device")) flagged (\(Self.count(r.exposures, "exposure"))); they are told through their status"
    }

    /// One interaction window, as flagging needs it.
    struct Window {
        var device: String
        var anchor: String
        var start: Double
        var end: Double
        var distance: Double

        init(device: String, anchor: String, start: Timestamp, end: Timestamp, distance: Double) {
            self.device = device
            self.anchor = anchor
            self.start = start.seconds
            self.end = end.seconds
            self.distance = distance
        }

        /// The beacon an interaction document belongs to: its parent, `beacons/{key}/…`.
        static func anchor(of path: DocumentPath) -> String? {
            let segments = path.description.split(separator: "/")
            guard segments.count >= 4, segments[0] == "beacons" else { return nil }
            return String(segments[1])
        }

        /// From a presence-index entry: start, deviceId, end, distance.
        init?(_ entry: IndexEntry, anchor: String) {
            guard entry.values.count == 4, let start = entry.values[0].timestampValue,
                case .string(let device) = entry.values[1], let end = entry.values[2].timestampValue,
                let distance = entry.values[3].doubleValue
            else { return nil }
            self.init(device: device, anchor: anchor, start: start, end: end, distance: distance)
        }

        /// From a whereabouts-index entry: deviceId, start, end, distance, and the path.
        init?(whereabouts entry: IndexEntry) {
            guard entry.values.count == 4, case .string(let device) = entry.values[0],
                let start = entry.values[1].timestampValue, let end = entry.values[2].timestampValue,
                let distance = entry.values[3].doubleValue, let path = entry.path, let anchor = Self.anchor(of: path)
            else { return nil }
            self.init(device: device, anchor: anchor, start: start, end: end, distance: distance)
        }

        init?(_ doc: DocumentSnapshot) {
            guard case .string(let device)? = doc["deviceId"], let start = doc["start"]?.timestampValue,
                let end = doc["end"]?.timestampValue, let distance = doc["distance"]?.doubleValue,
                let anchor = Self.anchor(of: doc.path)
            else { return nil }
            self.init(device: device, anchor: anchor, start: start, end: end, distance: distance)
        }
    }

    /// Flags (or re-flags) an accepted report.
    @discardableResult
    public func flag(reportID: String, store: DocumentStore, now: Date = Date()) throws -> FlagResult {
        let started = DispatchTime.now().uptimeNanoseconds
        try Self.declareIndexes(store)
        let report = try store.get(DocumentPath("reports/\(reportID)"))
        guard report.exists else { throw ExposureError("no report \(reportID)") }
        guard report["status"] == .string("accepted") else {
            throw ExposureError(
                "report \(reportID) is \(report["status"]?.stringValue ?? "not accepted"): nothing to flag"
            )
        }
        guard case .string(let reporter)? = report["deviceId"] else {
            throw ExposureError("report \(reportID) has no deviceId")
        }
        let collected = report["collectedAt"]?.timestampValue?.seconds ?? now.timeIntervalSince1970
        let from = collected - policy.lookback

        // The reporter's windows, by anchor, in time order (the (deviceId, start) group index).
        let mine = try store.getDocuments(
            Query(collectionGroup: "interactions")
                .where("deviceId", .equal, .string(reporter))
                .where("start", .greaterThanOrEqual, .timestamp(Timestamp(seconds: from)))
                .order(by: "start")
        )
        let windows = mine.compactMap(Window.init)
        var byAnchor: [String: [Window]] = [:]
        // Under the geometric rule, a window at a kiosk while a closer one heard the reporter too
        // is the reporter heard through a wall: it is not where they were.
        for w in policy.separation == .geometric && policy.attribution ? Self.inRoom(windows) : windows {
            byAnchor[w.anchor, default: []].append(w)
        }

        // Hits: for each window of another device near one of the reporter's, what it shares
        // with the reporter's windows that qualify (gap within the window, separation within
        // the radius): the span they cover, the closest separation bounds, the seconds together.
        struct Hit {
            var start: Double
            /// The neighbour's window: its end and distance.
            var end: Double
            var distance: Double
            var from: Double
            var to: Double
            var low: Double
            var high: Double
            var together: [(Double, Double)]
        }
        var hits: [String: [String: [Hit]]] = [:]  // by anchor, then device
        for (anchor, list) in byAnchor {
            // One covering range read per run of the reporter's windows (near ones merged).
            for run in Self.runs(list, gap: policy.window) {
                let lower = run.first!.start - policy.window - policy.longestInteraction
                let upper = run.last!.end + policy.window
                let starts = run.map(\.start)
                let ends = run.map(\.end)
                let distances = run.map(\.distance)
                let entries = try store.indexEntries(
                    Self.presenceIndex,
                    in: CollectionPath("beacons/\(anchor)/interactions"),
                    from: .timestamp(Timestamp(seconds: lower)),
                    through: .timestamp(Timestamp(seconds: upper)),
                    paths: false
                )
                for entry in entries {
                    guard let theirs = Window(entry, anchor: anchor), theirs.device != reporter else { continue }
                    // The reporter's windows that can be within the window of this one: those
                    // starting from (its start − window − the longest interaction) on.
                    var i = Self.firstIndex(
                        in: starts,
                        atLeast: theirs.start - policy.window - policy.longestInteraction
                    )
                    var hit: Hit?
                    while i < starts.count, starts[i] <= theirs.end + policy.window {
                        defer { i += 1 }
                        let gap = max(theirs.start, starts[i]) - min(theirs.end, ends[i])
                        guard gap <= policy.window else { continue }
                        let low = abs(distances[i] - theirs.distance)
                        let high = distances[i] + theirs.distance
                        guard policy.within(anchor: anchor, distances[i], theirs.distance, cache: cache) else {
                            continue
                        }
                        let from = min(theirs.start, starts[i])
                        let to = max(theirs.end, ends[i])
                        let shared = (max(theirs.start, starts[i]), min(theirs.end, ends[i]))
                        if var h = hit {
                            h.from = min(h.from, from)
                            h.to = max(h.to, to)
                            h.low = min(h.low, low)
                            h.high = min(h.high, high)
                            if shared.1 > shared.0 { h.together.append(shared) }
                            hit = h
                        } else {
                            hit = Hit(
                                start: theirs.start,
                                end: theirs.end,
                                distance: theirs.distance,
                                from: from,
                                to: to,
                                low: low,
                                high: high,
                                together: shared.1 > shared.0 ? [shared] : []
                            )
                        }
                    }
                    if let hit { hits[anchor, default: [:]][theirs.device, default: []].append(hit) }
                }
            }
        }

        // The same for the neighbours: a hit whose window was heard closer by another kiosk
        // within hearing range at the time is someone behind a wall. Each flagged device's
        // windows near its hits, from the whereabouts index (no document loaded).
        if policy.separation == .geometric && policy.attribution {
            var spans: [String: [(Double, Double)]] = [:]
            for byDevice in hits.values {
                for (device, list) in byDevice {
                    for h in list { spans[device, default: []].append((h.start - policy.longestInteraction, h.end)) }
                }
            }
            var elsewhere: [String: [Window]] = [:]
            for (device, list) in spans {
                var merged: [(Double, Double)] = []
                for sp in list.sorted(by: { $0.0 < $1.0 }) {
                    if let last = merged.last, sp.0 <= last.1 + policy.window {
                        merged[merged.count - 1].1 = max(last.1, sp.1)
                    } else {
                        merged.append(sp)
                    }
                }
                for sp in merged {
                    let entries = try store.groupIndexEntries(
                        Self.whereaboutsIndex,
                        equal: .string(device),
                        from: .timestamp(Timestamp(seconds: sp.0)),
                        through: .timestamp(Timestamp(seconds: sp.1))
                    )
                    for entry in entries {
                        guard let w = Window(whereabouts: entry) else { continue }
                        elsewhere[device, default: []].append(w)
                    }
                }
            }
            for (anchor, byDevice) in hits {
                guard let here = policy.geometry[anchor] else { continue }
                for (device, list) in byDevice {
                    let others = (elsewhere[device] ?? []).filter { w in
                        guard w.anchor != anchor, let there = policy.geometry[w.anchor] else { return false }
                        return there.kioskDistance(to: here) <= RoomGeometry.hearingRange
                    }
                    guard !others.isEmpty else { continue }
                    let kept = list.filter { h in
                        !others.contains { $0.start < h.end && $0.end > h.start && $0.distance < h.distance }
                    }
                    hits[anchor]![device] = kept.isEmpty ? nil : kept
                }
            }
        }

        // Episodes: a device's hits at one anchor, merged where they are within the window of
        // each other.
        var wanted: [String: (device: String, data: DocumentData)] = [:]
        for (anchor, byDevice) in hits {
            for (device, list) in byDevice {
                var episodes: [Hit] = []
                for h in list.sorted(by: { ($0.from, $0.start) < ($1.from, $1.start) }) {
                    if var last = episodes.last, h.from - last.to <= policy.window {
                        last.to = max(last.to, h.to)
                        last.low = min(last.low, h.low)
                        last.high = min(last.high, h.high)
                        last.together += h.together
                        episodes[episodes.count - 1] = last
                    } else {
                        episodes.append(h)
                    }
                }
                for episode in episodes {
                    let overlap = Self.overlapSeconds(episode.together.map { ($0.0, $0.1, $0.0, $0.1) })
                    let id = String(
                        SHA256.hex(Array("\(reportID)\n\(device)\n\(anchor)\n\(Int(episode.from * 1000))".utf8)).prefix(
                            20
                        )
                    )
                    let data: DocumentData = [
                        "reportId": .string(reportID),
                        "deviceId": .string(device),
                        "beaconKey": .string(anchor),
                        "from": .timestamp(Timestamp(seconds: episode.from)),
                        "to": .timestamp(Timestamp(seconds: episode.to)),
                        "separation": [
                            "min": .double(Self.round(episode.low)), "max": .double(Self.round(episode.high)),
                        ],
                        "overlapSeconds": .integer(Int64(overlap.rounded())),
                        "rule": .string(policy.separation.rawValue),
                    ]
                    wanted["devices/\(device)/exposures/\(id)"] = (device, data)
                }
            }
        }

        // Write what changed, in one transaction: exposures, the devices' summaries, the
        // reporter marked positive and its interactions marked as a test result.
        let changed = try store.runTransaction { t -> Int in
            // Reads first (the store's transactions, like Firestore's, read before they write).
            let existing = try t.getDocuments(
                Query(collectionGroup: "exposures").where("reportId", .equal, .string(reportID))
            )
            let have = Dictionary(existing.map { ($0.path.description, $0) }, uniquingKeysWith: { a, _ in a })
            let stale = existing.filter { wanted[$0.path.description] == nil }
            let fresh = wanted.filter { path, w in !(have[path].map { Self.same($0.data, w.data) } ?? false) }
            var touched = Set(fresh.values.map(\.device))
            for doc in stale { if case .string(let d)? = doc["deviceId"] { touched.insert(d) } }
            touched.remove(reporter)
            var summaries: [String: DocumentData] = [:]
            for device in touched {
                summaries[device] = try Self.summary(
                    device: device,
                    in: t,
                    setting: fresh.filter { $0.value.device == device }.mapValues(\.data),
                    deleting: Set(stale.map(\.path.description))
                )
            }
            let reporterIsPositive = try t.get(DocumentPath("devices/\(reporter)"))["status"] == .string("positive")

            for doc in stale { t.delete(doc.path) }
            for (path, w) in fresh {
                var data = w.data
                data["flaggedAt"] = .serverTimestamp
                t.set(try DocumentPath(path), data)
            }
            for (device, data) in summaries { t.set(try DocumentPath("devices/\(device)"), data, merge: true) }
            if !reporterIsPositive {
                t.set(
                    try DocumentPath("devices/\(reporter)"),
                    ["status": "positive", "updatedAt": .serverTimestamp],
                    merge: true
                )
            }
            return stale.count + fresh.count
        }
        let flagged = DispatchTime.now().uptimeNanoseconds
        // Then, in a transaction of its own (the exposed are told first): the reporter's
        // interactions marked as a positive test's, as the seed app did.
        let marked = try store.runTransaction { t -> Int in
            let unmarked = mine.filter { $0["testResult"] != .bool(true) }
            for doc in unmarked { t.update(doc.path, ["testResult": .bool(true)]) }
            return unmarked.count
        }
        return FlagResult(
            exposedDevices: Array(Set(wanted.values.map(\.device))).sorted(),
            exposures: wanted.count,
            changed: changed,
            reporterWindows: windows.count,
            marked: marked,
            secondsToFlagged: Double(flagged - started) / 1e9
        )
    }

    /// `devices/{id}`'s summary as it will be once the transaction's writes land: status, risk,
    /// exposureCount, colocatedMinutes, updatedAt. Reads only.
    static func summary(
        device: String,
        in t: Transaction,
        setting: [String: DocumentData],
        deleting: Set<String>
    ) throws -> DocumentData {
        var byPath: [String: DocumentData] = [:]
        for doc in try t.getDocuments(Query(collection: CollectionPath("devices/\(device)/exposures"))) {
            if let data = doc.data { byPath[doc.path.description] = data }
        }
        for path in deleting { byPath[path] = nil }
        for (path, data) in setting { byPath[path] = data }
        let exposures = Array(byPath.values)
        let reports = Set(exposures.compactMap { $0["reportId"]?.stringValue })
        let seconds = exposures.compactMap { $0["overlapSeconds"]?.doubleValue }.reduce(0, +)
        var data: DocumentData = [
            "risk": .string(reports.count >= 3 ? "high" : reports.isEmpty ? "low" : "medium"),
            "exposureCount": .integer(Int64(exposures.count)),
            "colocatedMinutes": .double((seconds / 6).rounded() / 10),
            "updatedAt": .serverTimestamp,
        ]
        // A positive device stays positive; the others are exposed or clear.
        if try t.get(DocumentPath("devices/\(device)"))["status"] != .string("positive") {
            data["status"] = .string(reports.isEmpty ? "clear" : "exposed")
        }
        return data
    }

    /// Withdraws a report: its exposures go, the devices' status and risk are recomputed, and
    /// the reporter is positive only while another accepted report of theirs stands.
    @discardableResult
    public func revoke(reportID: String, store: DocumentStore) throws -> Int {
        try Self.declareIndexes(store)
        return try store.runTransaction { t -> Int in
            let path = try DocumentPath("reports/\(reportID)")
            let report = try t.get(path)
            guard report.exists, case .string(let reporter)? = report["deviceId"] else {
                throw ExposureError("no report \(reportID)")
            }
            guard report["status"] != .string("revoked") else { return 0 }
            let exposures = try t.getDocuments(
                Query(collectionGroup: "exposures").where("reportId", .equal, .string(reportID))
            )
            let deleting = Set(exposures.map(\.path.description))
            var summaries: [String: DocumentData] = [:]
            for doc in exposures {
                guard case .string(let d)? = doc["deviceId"], summaries[d] == nil, d != reporter else { continue }
                summaries[d] = try Self.summary(device: d, in: t, setting: [:], deleting: deleting)
            }
            let others = try t.getDocuments(
                Query(collection: CollectionPath("reports")).where("deviceId", .equal, .string(reporter))
            )
            let stillPositive = others.contains { $0.id != reportID && $0["status"] == .string("accepted") }
            var reporterSummary: DocumentData?
            var marked: [DocumentSnapshot] = []
            if !stillPositive {
                // Clear first, so that the summary says exposed or clear rather than positive.
                var s = try Self.summary(device: reporter, in: t, setting: [:], deleting: deleting)
                if s["status"] == nil {
                    let own = try t.getDocuments(Query(collection: CollectionPath("devices/\(reporter)/exposures")))
                    let reports = Set(own.compactMap { $0["reportId"]?.stringValue })
                    s["status"] = .string(reports.isEmpty ? "clear" : "exposed")
                }
                reporterSummary = s
                marked = try t.getDocuments(
                    Query(collectionGroup: "interactions").where("deviceId", .equal, .string(reporter))
                        .where("start", .greaterThanOrEqual, .timestamp(Timestamp(seconds: 0)))
                ).filter { $0["testResult"] == .bool(true) }
            }

            for doc in exposures { t.delete(doc.path) }
            t.update(path, ["status": .string("revoked"), "revokedAt": .serverTimestamp])
            for (device, data) in summaries { t.set(try DocumentPath("devices/\(device)"), data, merge: true) }
            if let reporterSummary {
                t.set(try DocumentPath("devices/\(reporter)"), reporterSummary, merge: true)
            }
            for doc in marked { t.update(doc.path, ["testResult": .bool(false)]) }
            return exposures.count
        }
    }

    /// The first index of sorted `values` at or above `bound` (binary search).
    static func firstIndex(in values: [Double], atLeast bound: Double) -> Int {
        var low = 0
        var high = values.count
        while low < high {
            let mid = (low + high) / 2
            if values[mid] < bound { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Consecutive windows whose gaps are at most `gap`.
    static func runs(_ windows: [Window], gap: Double) -> [[Window]] {
        var out: [[Window]] = []
        for w in windows.sorted(by: { $0.start < $1.start }) {
            if let last = out.last?.last, w.start - last.end <= 2 * gap {
                out[out.count - 1].append(w)
            } else {
                out.append([w])
            }
        }
        return out
    }

    /// Seconds during which both devices were seen, over an episode's pairs (the union of the
    /// pairs' intersections).
    static func overlapSeconds(_ pairs: [(Double, Double, Double, Double)]) -> Double {
        let intervals = pairs.compactMap { a0, a1, b0, b1 -> (Double, Double)? in
            let s = max(a0, b0)
            let e = min(a1, b1)
            return e > s ? (s, e) : nil
        }.sorted { $0.0 < $1.0 }
        var total = 0.0
        var current: (Double, Double)?
        for i in intervals {
            if let c = current, i.0 <= c.1 {
                current = (c.0, max(c.1, i.1))
            } else {
                if let c = current { total += c.1 - c.0 }
                current = i
            }
        }
        if let c = current { total += c.1 - c.0 }
        return total
    }

    /// The windows of one device at the kiosk that heard it closest at the time: a window is
    /// dropped when a window at another anchor overlaps it with a shorter distance.
    static func inRoom(_ windows: [Window]) -> [Window] {
        let sorted = windows.sorted { $0.start < $1.start }
        let longest = sorted.map { $0.end - $0.start }.max() ?? 0
        return sorted.enumerated().filter { i, w in
            // Overlapping windows start before this one ends and after (its start − the longest).
            var j = i
            while j > 0, sorted[j - 1].start > w.start - longest - 1e-9 { j -= 1 }
            while j < sorted.count, sorted[j].start < w.end {
                let o = sorted[j]
                if o.anchor != w.anchor, o.end > w.start, o.distance < w.distance { return false }
                j += 1
            }
            return true
        }.map(\.1)
    }

    /// `1 device`, `2 devices`.
    public static func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }

    static func round(_ v: Double) -> Double { (v * 100).rounded() / 100 }

    /// Whether a stored exposure holds the same data (flaggedAt aside).
    static func same(_ stored: DocumentData?, _ wanted: DocumentData) -> Bool {
        guard var stored else { return false }
        stored["flaggedAt"] = nil
        return stored == wanted
    }
}

public struct ExposureError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
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
        longestInteraction = max(60, site.ranging.window * 2)
        for a in site.anchors where a.kind == .kiosk {
            if let room = site.room(a.room) { geometry[a.key] = RoomGeometry(kiosk: a.position, room: room) }
        }
    }
}

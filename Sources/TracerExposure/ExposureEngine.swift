import Foundation
import TracerColocation
import TracerModel
import TracerReports
import TracerStore

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
    /// Interaction windows (the reporter's or a neighbour's) that could not be used: unreadable,
    /// or with times or a distance out of range (`Presence.isUsable`). Skipped, never fatal.
    public var skipped: Int = 0
    /// What the pair decision weighed, when the engine keeps it (`keepsEvidence`: `tracer
    /// evaluate --evidence`, to fit and check the decision), and the chance it gave each.
    public var evidence: [Evidence] = []
    public var chances: [Double] = []
    /// Decided by another flag of the same report, at the same time or within the engine's
    /// `claimLife` before (`flag(reportID:on:sharing:)`): its outcome as the store has it, and
    /// nothing decided or written by this one.
    public var shared = false
}

/// Flags the people who were near a reporter, on the store: the co-location rule
/// (`Colocation`, no I/O) decides; this adapter reads what it asks for from the covering
/// indexes and writes the outcome in one transaction.
///
/// Idempotent: exposure ids are derived from (report, device, anchor, episode start), so a re-run
/// on the same data writes nothing; a re-run after new data replaces what changed.
public struct ExposureEngine: ExposureFlagging {
    /// The rule, with the geometric rule's answers cached across the reports it flags.
    public var colocation: Colocation
    /// Whether each flagging's result keeps what the pair decision weighed (`FlagResult.evidence`).
    public var keepsEvidence = false
    /// The rule on the plan the kiosks' own calibrations give, while they stand.
    let calibrated = CalibratedColocation()
    /// Seconds a sharing flag's claim on a report holds without being renewed, and a report
    /// decided is taken as decided by the flags that share it (`flag(reportID:on:sharing:)`).
    public var claimLife: Double = 30
    /// The time a claim is written and aged by (a test's own clock; else the machine's).
    public var claimClock: @Sendable () -> Date = { Date() }
    /// Reports this engine (and its copies: the site server's desk, API and flagger) decides on
    /// the store at once, each on one of the store's reader threads; the rest wait their turn
    /// without one (`DecisionSlots`). Two of the store's four leave the others to every other read.
    let decisions = DecisionSlots(2)

    /// The policy the rule applies.
    public var policy: ExposurePolicy {
        get { colocation.policy }
        set { colocation = Colocation(policy: newValue) }
    }

    public init(policy: ExposurePolicy = ExposurePolicy(), keepsEvidence: Bool = false) {
        colocation = Colocation(policy: policy)
        self.keepsEvidence = keepsEvidence
    }

    public func reportAccepted(_ report: RecordedReport, in db: StoreWriter) throws -> String {
        acceptedLine(try flag(reportID: report.id, in: db))
    }

    /// Flags a report just accepted on the site server: decided on a reader thread, written on
    /// the writer, and once between the desk and the flagger, which sees it arrive
    /// (`flag(reportID:on:sharing:)`).
    public func reportAccepted(_ report: RecordedReport, on store: DocumentStore) async throws -> String {
        acceptedLine(try await flag(reportID: report.id, on: store, sharing: true))
    }

    /// The line for the person reporting.
    func acceptedLine(_ r: FlagResult) -> String {
        if r.exposedDevices.isEmpty {
            return
                "exposures: nobody was within \(Int(policy.radius)) m at the same beacon (\(r.reporterWindows) interaction windows looked at)"
        }
        return
            "exposures: \(Self.count(r.exposedDevices.count, "device")) flagged (\(Self.count(r.exposures, "exposure"))); they are told through their status"
    }

    /// Flags (or re-flags) an accepted report.
    @discardableResult
    public func flag(reportID: String, in db: StoreWriter, now: Date = Date()) throws -> FlagResult {
        try Indexes.declare(in: db)
        return try commit(decide(reportID: reportID, in: db, now: now), in: db)
    }

    /// Flags (or re-flags) an accepted report on a store others write to as well (the site
    /// server's): who was near is worked out on a reader thread, and only the writes wait for the
    /// store's writer. Deciding is nearly all of flagging (1–1.5 s a report on random sites,
    /// BENCHMARKS.md), and every kiosk's sync and every other write waited behind it while all of
    /// flagging ran on the writer.
    ///
    /// `sharing`: one decision with any other sharing flag of the report (the desk that recorded
    /// it, the flagger that saw it arrive), whoever claims it first deciding for both
    /// (ExposureEngine+Sharing.swift). Without it (the health team's "flag again"), it is decided
    /// whatever else is under way.
    @discardableResult
    public func flag(
        reportID: String,
        on store: DocumentStore,
        sharing: Bool = false,
        now: Date = Date()
    ) async throws -> FlagResult {
        let engine = self
        if try await !store.reading({ db in try Indexes.declared(in: db) }) {
            try await store.writing { db in try Indexes.declare(in: db) }
        }
        if sharing { return try await flagSharing(reportID: reportID, on: store, now: now) }
        let decision = try await decisions.run {
            try await store.reading { db in try engine.decide(reportID: reportID, in: db, now: now) }
        }
        return try await store.writing { db in try engine.commit(decision, in: db) }
    }

    /// Who flagging a report flags, from reads alone (`decide`), for `commit` to write.
    public struct Decision: Sendable {
        let report: Report
        let wanted: [DocumentPath: Exposure]
        /// The reporter's interactions not yet marked as a positive test's.
        let unmarked: [DocumentPath]
        var result: FlagResult
        let started: UInt64
        /// What the pair decision weighed, when the engine keeps it (worked out after the commit).
        let judged: [Colocation.Hit]
        let colocation: Colocation
    }

    /// Works out who a report flags, reading only: the report, the reporter's windows, their
    /// neighbours' and the neighbours' whereabouts.
    public func decide(reportID: String, in db: some StoreReads, now: Date = Date()) throws -> Decision {
        let started = DispatchTime.now().uptimeNanoseconds
        let report = try acceptedReport(reportID, in: db)
        let collected = report.collectedAt?.seconds ?? now.timeIntervalSince1970
        let colocation = try self.colocation(in: db)

        // The reporter's windows in time order (the (deviceId, start) group index).
        let mine = try db.getDocuments(
            Query.interactions
                .where(Interaction.Field.deviceID, .equal, .string(report.deviceID))
                .where(
                    Interaction.Field.start,
                    .greaterThanOrEqual,
                    .timestamp(Timestamp(seconds: collected - policy.lookback))
                )
                .order(by: Interaction.Field.start)
        )
        var skipped = 0
        var windows: [Window] = []
        for doc in mine {
            guard let interaction = try? Interaction(doc) else {
                skipped += 1
                continue
            }
            if let p = Presence(interaction) {
                windows.append(Self.window(p))
            } else if interaction.distance != nil {
                skipped += 1
            }
        }

        // Neighbours from the presence index, one covering range read per run of the reporter's
        // windows; under attribution or positions, the hit devices' whereabouts from theirs.
        var hits: [Colocation.Hit] = []
        for read in colocation.reads(reporter: windows) {
            let entries = try db.indexEntries(
                PresenceIndex.definition,
                in: Collections.interactions(at: read.anchor),
                from: .timestamp(Timestamp(seconds: read.from)),
                through: .timestamp(Timestamp(seconds: read.through)),
                paths: false
            )
            let neighbours = entries.compactMap { PresenceIndex.decode($0, anchor: read.anchor).map(Self.window) }
            skipped += entries.count - neighbours.count
            hits += colocation.hits(read, neighbours: neighbours)
        }
        var elsewhere: [String: [Window]] = [:]
        for (device, from, through) in colocation.whereaboutsReads(hits) {
            let entries = try db.groupIndexEntries(
                WhereaboutsIndex.definition,
                equal: .string(device),
                from: .timestamp(Timestamp(seconds: from)),
                through: .timestamp(Timestamp(seconds: through))
            )
            let windows = entries.compactMap { WhereaboutsIndex.decode($0).map(Self.window) }
            skipped += entries.count - windows.count
            elsewhere[device, default: []] += windows
        }
        var wanted: [DocumentPath: Exposure] = [:]
        let judged = colocation.judged(hits, reporter: windows, elsewhere: elsewhere)
        for e in colocation.episodes(colocation.attributed(judged, elsewhere: elsewhere)) {
            let exposure = Exposure(
                deviceID: e.device,
                reportID: reportID,
                beaconKey: e.anchor,
                from: Timestamp(seconds: e.from),
                to: Timestamp(seconds: e.to),
                separationMin: e.low,
                separationMax: e.high,
                overlapSeconds: Int(saturating: e.overlapSeconds.rounded()),
                rule: policy.separation.rawValue,
                chance: e.chance
            )
            wanted[try exposure.path()] = exposure
        }

        return Decision(
            report: report,
            wanted: wanted,
            unmarked: mine.filter { $0[Interaction.Field.testResult] != .bool(true) }.map(\.path),
            result: FlagResult(
                exposedDevices: Set(wanted.values.map(\.deviceID)).sorted(),
                exposures: wanted.count,
                changed: 0,
                reporterWindows: windows.count,
                skipped: skipped
            ),
            started: started,
            judged: keepsEvidence ? judged : [],
            colocation: colocation
        )
    }

    /// Writes what `decide` decided: the exposures that changed, then the reporter's interactions
    /// marked. The report is read again first: one withdrawn or set aside since is not flagged.
    /// `markingDone`: a sharing flag's, whose report is marked done then in the transaction that
    /// writes its exposures (`flaggings/{reportId}`).
    public func commit(_ decision: Decision, in db: StoreWriter, markingDone: Date? = nil) throws -> FlagResult {
        var result = decision.result
        result.changed = try db.runTransaction { t in
            let report = try Self.accepted(t.get(Collections.report(decision.report.id)), id: decision.report.id)
            // Flagged at last after a failure: the page and the health team's view stop saying so
            // (read first: a transaction reads before it writes).
            let devicePath = try Collections.device(report.deviceID)
            let failed = report.flaggingFailed != nil
            let deviceSaysFailed = try failed && t.get(devicePath)["report"]?["flagging"] != nil
            let changed = try Self.write(decision.wanted, for: report, in: t)
            if failed { t.update(try Collections.report(report.id), Report.flaggingDone.report) }
            if deviceSaysFailed { t.update(devicePath, Report.flaggingDone.device) }
            if let markingDone {
                try Self.markDone(report, windows: decision.result.reporterWindows, at: markingDone, in: t)
            }
            return changed
        }
        result.secondsToFlagged = Double(DispatchTime.now().uptimeNanoseconds - decision.started) / 1e9
        let colocation = decision.colocation
        let weighed = keepsEvidence && colocation.positioning != nil ? colocation.evidence(decision.judged) : []
        result.evidence = weighed
        result.chances = weighed.map(PairModel.fitted.chance)
        // Then, in a transaction of its own (the exposed are told first): the reporter's
        // interactions marked as a positive test's, as the seed app did.
        result.marked = try db.runTransaction { t -> Int in
            for path in decision.unmarked { t.update(path, [Interaction.Field.testResult: .bool(true)]) }
            return decision.unmarked.count
        }
        return result
    }

    /// Writes what changed: exposures gone or new, the devices' summaries, the reporter marked
    /// positive. Reads first (the store's transactions, like Firestore's, read before they write).
    static func write(_ wanted: [DocumentPath: Exposure], for report: Report, in t: Transaction) throws -> Int {
        let existing = try t.getDocuments(Exposure.of(report: report.id))
        let have = Dictionary(existing.map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
        let stale = existing.filter { wanted[$0.path] == nil }
        let fresh = wanted.filter { path, e in !(have[path].map { Exposure.same($0.data, e.data) } ?? false) }
        var touched = Set(fresh.values.map(\.deviceID))
        for doc in stale { if let d = Collections.device(ofExposure: doc.path) { touched.insert(d) } }
        touched.remove(report.deviceID)
        var summaries: [String: DocumentData] = [:]
        for device in touched {
            summaries[device] = try summary(
                device: device,
                in: t,
                setting: fresh.filter { $0.value.deviceID == device },
                deleting: Set(stale.map(\.path))
            )
        }
        let reporterIsPositive = DeviceStatus.isPositive(try t.get(Collections.device(report.deviceID)))

        for doc in stale { t.delete(doc.path) }
        for (path, e) in fresh {
            var data = e.data
            data[Exposure.Field.flaggedAt] = .serverTimestamp
            t.set(path, data)
        }
        for (device, data) in summaries { t.set(try Collections.device(device), data, merge: true) }
        if !reporterIsPositive { t.set(try Collections.device(report.deviceID), DeviceStatus.positive, merge: true) }
        return stale.count + fresh.count
    }

    /// The report, if it is there and accepted.
    func acceptedReport(_ id: String, in db: some StoreReads) throws -> Report {
        try Self.accepted(db.get(Collections.report(id)), id: id)
    }

    /// The report `doc` holds, if it is there and accepted.
    static func accepted(_ doc: DocumentSnapshot, id: String) throws -> Report {
        guard doc.exists else { throw ExposureError(.noReport, "no report \(id)", reportID: id) }
        let report: Report
        do { report = try Report(doc) } catch {
            throw ExposureError(.notAccepted, "report \(id) cannot be read (\(error)): nothing to flag", reportID: id)
        }
        guard report.status == .accepted else {
            throw ExposureError(
                .notAccepted,
                "report \(id) is \(report.status.rawValue): nothing to flag",
                reportID: id
            )
        }
        return report
    }

    /// `devices/{id}`'s summary as it will be once the transaction's writes land: status, risk,
    /// exposureCount, colocatedMinutes, updatedAt. Reads only.
    static func summary(
        device: String,
        in t: Transaction,
        setting: [DocumentPath: Exposure],
        deleting: Set<DocumentPath>,
        clearing: Bool = false
    ) throws -> DocumentData {
        var byPath: [DocumentPath: Exposure] = [:]
        for doc in try t.getDocuments(Query(collection: Collections.exposures(of: device))) {
            if let e = try? Exposure(doc) { byPath[doc.path] = e }
        }
        for path in deleting { byPath[path] = nil }
        for (path, e) in setting { byPath[path] = e }
        // A positive device stays positive (unless `clearing` it); the others are exposed or clear.
        let positive = try !clearing && DeviceStatus.isPositive(t.get(Collections.device(device)))
        return DeviceStatus.summary(exposures: Array(byPath.values), keepsStatus: positive)
    }

    /// Withdraws a report: its exposures go, the devices' status and risk are recomputed, and
    /// the reporter is positive only while another accepted report of theirs stands.
    @discardableResult
    public func revoke(reportID: String, in db: StoreWriter) throws -> Int {
        try Indexes.declare(in: db)
        return try db.runTransaction { t -> Int in
            let path = try Collections.report(reportID)
            let doc = try t.get(path)
            guard doc.exists, let report = try? Report(doc) else {
                throw ExposureError(.noReport, "no report \(reportID)", reportID: reportID)
            }
            guard report.status != .revoked else { return 0 }
            let reporter = report.deviceID
            let exposures = try t.getDocuments(Exposure.of(report: reportID))
            let deleting = Set(exposures.map(\.path))
            var summaries: [String: DocumentData] = [:]
            for doc in exposures {
                guard let d = Collections.device(ofExposure: doc.path), summaries[d] == nil, d != reporter else {
                    continue
                }
                summaries[d] = try Self.summary(device: d, in: t, setting: [:], deleting: deleting)
            }
            let others = try t.getDocuments(Report.of(device: reporter))
            let stillPositive = others.contains { $0.id != reportID && Report.is($0, .accepted) }
            var reporterSummary: DocumentData?
            var marked: [DocumentSnapshot] = []
            if !stillPositive {
                // Summarised as not positive, so that it says exposed or clear.
                reporterSummary = try Self.summary(
                    device: reporter,
                    in: t,
                    setting: [:],
                    deleting: deleting,
                    clearing: true
                )
                marked = try t.getDocuments(
                    Query.interactions.where(Interaction.Field.deviceID, .equal, .string(reporter))
                        .where(Interaction.Field.start, .greaterThanOrEqual, .timestamp(Timestamp(seconds: 0)))
                ).filter { $0[Interaction.Field.testResult] == .bool(true) }
            }

            // The reporter's own view of the report (`devices/{id}.report`) says it was withdrawn,
            // unless the device has a newer report by now: the status, the webhook and the
            // person's page read it there.
            let reporterPath = try Collections.device(reporter)
            var reporterData = reporterSummary ?? [:]
            if try t.get(reporterPath)["report"]?["id"] == .string(reportID) {
                reporterData["report"] = .map([
                    "id": .string(reportID), "status": .string(Report.Status.revoked.rawValue),
                ])
            }

            for doc in exposures { t.delete(doc.path) }
            // Its flagging's marker says nothing once it is withdrawn.
            t.delete(try Collections.flagging(reportID))
            t.update(path, Report.revocation)
            for (device, data) in summaries { t.set(try Collections.device(device), data, merge: true) }
            if !reporterData.isEmpty { t.set(reporterPath, reporterData, merge: true) }
            for doc in marked { t.update(doc.path, [Interaction.Field.testResult: .bool(false)]) }
            return exposures.count
        }
    }

    /// Deletes the exposures that began before `cutoff` (the site's retention) and recomputes
    /// their devices' status, in transactions of at most `batchSize`: a person exposed 15 days
    /// ago is clear again, and the site no longer knows they were exposed.
    @discardableResult
    public func expire(olderThan cutoff: Timestamp, in db: StoreWriter, batchSize: Int = 500) throws -> Int {
        try Indexes.declare(in: db)
        var total = 0
        while true {
            let n = try db.runTransaction { t -> Int in
                let old = try t.getDocuments(
                    Query.exposures.where(Exposure.Field.from, .lessThan, .timestamp(cutoff))
                        .order(by: Exposure.Field.from).limit(max(1, batchSize))
                )
                let deleting = Set(old.map(\.path))
                var summaries: [String: DocumentData] = [:]
                for doc in old {
                    guard let device = Collections.device(ofExposure: doc.path), summaries[device] == nil else {
                        continue
                    }
                    summaries[device] = try Self.summary(device: device, in: t, setting: [:], deleting: deleting)
                }
                for doc in old { t.delete(doc.path) }
                for (device, data) in summaries { t.set(try Collections.device(device), data, merge: true) }
                return old.count
            }
            total += n
            if n < batchSize { return total }
        }
    }

    /// The line the command prints for a flagging (and the API answers).
    public static func line(_ id: String, _ r: FlagResult) -> String {
        "report \(id): \(count(r.exposedDevices.count, "device")) exposed, \(count(r.exposures, "exposure")) "
            + "(\(r.changed) written or removed) from \(r.reporterWindows) interaction windows"
            + (r.skipped > 0 ? "; \(r.skipped) windows skipped (unreadable, or out of range)" : "")
    }

    static func window(_ p: Presence) -> Window {
        Window(device: p.deviceID, anchor: p.anchor, start: p.start.seconds, end: p.end.seconds, distance: p.distance)
    }

    /// `1 device`, `2 devices`.
    public static func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
}

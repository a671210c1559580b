import Foundation
import TracerModel
import TracerReports
import TracerStore

/// One decision for a report that two flag at once. A self-report on the site server is flagged by
/// the desk that recorded it (the person is answered with who was told) and by the flagger
/// (`tracer report follow`), which sees the report arrive a few milliseconds later: before this,
/// both decided it, each a second or more of both cores, each slowing the other. Now the first to
/// claim it in `flaggings/{reportId}` decides and the other waits for its outcome and shares it;
/// a flag that finds it done within `claimLife` shares that too. The claim is in the store, so it
/// holds across processes and servers; it is renewed while the decision runs and lapses
/// `claimLife` after its holder stops renewing it (a process killed mid-decision), when the
/// waiting flag decides after all.
extension ExposureEngine {
    /// How a shared flag found its report (`claim`).
    enum Claim: Equatable {
        /// Claimed by this flag: it decides.
        case claimed
        /// Another flag decided this report, as it is now, less than `claimLife` ago.
        case done(windows: Int)
        /// Another flag is deciding it now.
        case held
    }

    /// What a claim is for: the report's device and time of collection, what its decision reads of
    /// it (a report collected again, or of another device, is decided again).
    static func input(_ report: Report) -> String {
        input(device: report.deviceID, collectedAt: report.collectedAt)
    }

    static func input(device: String, collectedAt: Timestamp?) -> String {
        "\(device)|\(collectedAt.map { String($0.microseconds) } ?? "-")"
    }

    /// Flags a report as `flag(reportID:on:)` does, unless another flag is deciding it or has
    /// decided it within `claimLife`: then that decision's outcome, read from the store
    /// (`FlagResult.shared`).
    func flagSharing(reportID: String, on store: DocumentStore, now: Date) async throws -> FlagResult {
        let me = UUID().uuidString
        let (life, clock) = (claimLife, claimClock)
        while true {
            let claim = try await store.writing { db in
                try db.runTransaction { t in try Self.claim(reportID, by: me, life: life, now: clock(), in: t) }
            }
            switch claim {
            case .claimed:
                return try await decideClaimed(reportID: reportID, by: me, on: store, now: now)
            case .done(let windows):
                return try await store.reading { db in try Self.shared(reportID, windows: windows, in: db) }
            case .held:
                // Until the holder is done or its claim lapses: read, not claimed again, so that
                // waiting takes no turn on the writer.
                while try await store.reading({ db in try Self.isHeld(reportID, life: life, now: clock(), in: db) }) {
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
        }
    }

    /// Decides a claimed report, renewing the claim every third of its life until the outcome is
    /// committed; a decision that fails lets the claim go, so nobody waits for it.
    func decideClaimed(reportID: String, by me: String, on store: DocumentStore, now: Date) async throws -> FlagResult {
        let engine = self
        let (life, clock) = (claimLife, claimClock)
        do {
            return try await withThrowingTaskGroup(of: FlagResult?.self) { group in
                group.addTask {
                    let decision = try await engine.decisions.run {
                        try await store.reading { db in try engine.decide(reportID: reportID, in: db, now: now) }
                    }
                    return try await store.writing { db in
                        try engine.commit(decision, in: db, markingDone: clock())
                    }
                }
                group.addTask {
                    // Until cancelled (the sleep throws then); a renewal that fails is tried again at
                    // the next, and meanwhile the claim may lapse: a second decision, not a lost one.
                    while true {
                        try await Task.sleep(for: .seconds(life / 3))
                        try? await store.writing { db in
                            try db.runTransaction { t in try Self.renew(reportID, by: me, now: clock(), in: t) }
                        }
                    }
                }
                defer { group.cancelAll() }
                while let next = try await group.next() {
                    if let result = next { return result }
                }
                throw CancellationError()
            }
        } catch {
            try? await store.writing { db in try db.runTransaction { t in try Self.release(reportID, by: me, in: t) } }
            throw error
        }
    }

    /// Claims the report for `me`, unless it is held or was done, as it is now, within `life`.
    static func claim(_ reportID: String, by me: String, life: Double, now: Date, in t: Transaction) throws -> Claim {
        let report = try accepted(t.get(Collections.report(reportID)), id: reportID)
        let path = try Collections.flagging(reportID)
        let marker = try t.get(path).data ?? [:]
        let input = input(report)
        if marker[Flagging.Field.input] == .string(input) {
            if marker[Flagging.Field.claimedBy] != nil, let held = age(marker[Flagging.Field.claimedAt], now),
                held < life
            {
                return .held
            }
            if marker[Flagging.Field.claimedBy] == nil, let done = age(marker[Flagging.Field.doneAt], now), done < life
            {
                return .done(windows: Int(marker[Flagging.Field.windows]?.doubleValue ?? 0))
            }
        }
        t.set(
            path,
            [
                Flagging.Field.input: .string(input), Flagging.Field.claimedBy: .string(me),
                Flagging.Field.claimedAt: .timestamp(Timestamp(now)),
            ]
        )
        return .claimed
    }

    /// Seconds from a marker's time to `now` (nil when it has none).
    static func age(_ value: Value?, _ now: Date) -> Double? {
        value?.timestampValue.map { now.timeIntervalSince1970 - $0.seconds }
    }

    /// Whether someone still holds the report's claim (not yet done, not lapsed).
    static func isHeld(_ reportID: String, life: Double, now: Date, in db: some StoreReads) throws -> Bool {
        let marker = try db.get(Collections.flagging(reportID)).data ?? [:]
        guard marker[Flagging.Field.claimedBy] != nil, let held = age(marker[Flagging.Field.claimedAt], now) else {
            return false
        }
        return held < life
    }

    /// The claim's time moved on, while `me` still holds it.
    static func renew(_ reportID: String, by me: String, now: Date, in t: Transaction) throws {
        let path = try Collections.flagging(reportID)
        if try t.get(path).data?[Flagging.Field.claimedBy] == .string(me) {
            t.set(path, [Flagging.Field.claimedAt: .timestamp(Timestamp(now))], merge: true)
        }
    }

    /// The claim given up, while `me` still holds it.
    static func release(_ reportID: String, by me: String, in t: Transaction) throws {
        let path = try Collections.flagging(reportID)
        if try t.get(path).data?[Flagging.Field.claimedBy] == .string(me) { t.delete(path) }
    }

    /// Marks the report done, in the transaction that writes its exposures.
    static func markDone(_ report: Report, windows: Int, at now: Date, in t: Transaction) throws {
        // Written over the claim, whoever holds it now: this outcome is as good as theirs.
        t.set(
            try Collections.flagging(report.id),
            [
                Flagging.Field.input: .string(input(report)), Flagging.Field.doneAt: .timestamp(Timestamp(now)),
                Flagging.Field.windows: .integer(Int64(windows)),
            ]
        )
    }

    /// Another flag's outcome for the report, as the store has it.
    static func shared(_ reportID: String, windows: Int, in db: some StoreReads) throws -> FlagResult {
        let exposures = try db.getDocuments(Exposure.of(report: reportID))
        return FlagResult(
            exposedDevices: Set(exposures.compactMap { Collections.device(ofExposure: $0.path) }).sorted(),
            exposures: exposures.count,
            changed: 0,
            reporterWindows: windows,
            shared: true
        )
    }
}

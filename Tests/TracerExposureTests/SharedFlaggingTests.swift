import Foundation
import Logging
import Synchronization
import Testing
import TracerModel
@_spi(Blocking) import TracerStore
import TracerTesting

@testable import TracerExposure

/// A report flagged by two at once (the desk that recorded it and the flagger that saw it arrive)
/// is decided once between them (`flag(reportID:on:sharing:)`).
@Suite struct SharedFlaggingTests {
    /// R's report, X near R and Y near R, the indexes declared.
    static func site() async throws -> ExposureEngineTests.Site {
        let s = try ExposureEngineTests.Site()
        try s.seen("R", at: "A", 0, 30, 1)
        try s.seen("X", at: "A", 0, 30, 1.5)
        try s.report("r1", by: "R")
        try await s.store.writing { db in try Indexes.declare(in: db) }
        return s
    }

    /// R's report as the marker names it (collected at t0 + 3600, `Site.report`'s default).
    static let input = ExposureEngine.input(
        device: "R",
        collectedAt: Timestamp(seconds: ExposureEngineTests.t0 + 3600)
    )

    static func marker(_ store: DocumentStore, _ report: String = "r1") throws -> DocumentSnapshot {
        try store.get(Collections.flagging(report))
    }

    static func mark(_ store: DocumentStore, _ data: DocumentData, merge: Bool = false) throws {
        try store.set(Collections.flagging("r1"), data, merge: merge)
    }

    /// Two sharing flags at once: one decides, the other takes its outcome.
    @Test func twoSharingFlagsOfOneReportDecideItOnce() async throws {
        let s = try await Self.site()
        let (engine, store) = (ExposureEngine(), s.store)
        async let a = engine.flag(reportID: "r1", on: store, sharing: true)
        async let b = engine.flag(reportID: "r1", on: store, sharing: true)
        let results = try await [a, b]
        #expect(results.filter { !$0.shared }.count == 1, "\(results.map(\.shared))")
        for r in results {
            #expect(r.exposedDevices == ["X"] && r.exposures == 1 && r.reporterWindows == 1, "\(r)")
        }
        #expect(results.map(\.changed).sorted() == [0, 1])
        let marker = try Self.marker(store)
        #expect(
            marker.data?[Flagging.Field.doneAt]?.timestampValue != nil && marker.data?[Flagging.Field.claimedBy] == nil,
            "\(marker.data ?? [:])"
        )
        // A report withdrawn takes its marker with it.
        _ = try await store.writing { db in try engine.revoke(reportID: "r1", in: db) }
        #expect(try !Self.marker(store).exists)
    }

    /// Done within the claim's life, a report is not decided again by a sharing flag (a window
    /// written since is not seen); a forced flag, or the report collected again, decides it.
    @Test func aReportDoneIsSharedUntilForcedOrChanged() async throws {
        let s = try await Self.site()
        let (engine, store) = (ExposureEngine(), s.store)
        #expect(try await engine.flag(reportID: "r1", on: store, sharing: true).shared == false)
        try s.seen("Y", at: "A", 0, 30, 1.2)
        let again = try await engine.flag(reportID: "r1", on: store, sharing: true)
        #expect(again.shared && again.changed == 0 && again.exposedDevices == ["X"], "\(again)")
        #expect(try s.exposures("Y").isEmpty)

        let forced = try await engine.flag(reportID: "r1", on: store)
        #expect(!forced.shared && forced.exposedDevices == ["X", "Y"], "\(forced)")

        try s.seen("Z", at: "A", 0, 30, 1.3)
        try s.report("r1", by: "R", collected: 3601)
        let changed = try await engine.flag(reportID: "r1", on: store, sharing: true)
        #expect(!changed.shared && changed.exposedDevices == ["X", "Y", "Z"], "\(changed)")
    }

    /// A claim whose holder stopped renewing it (killed mid-decision) lapses after the claim's
    /// life, and the waiting flag decides after all.
    @Test func aClaimNobodyRenewsLapsesAndTheWaitingFlagDecides() async throws {
        let s = try await Self.site()
        let store = s.store
        try Self.mark(
            store,
            [
                Flagging.Field.input: .string(Self.input), Flagging.Field.claimedBy: "gone",
                Flagging.Field.claimedAt: .serverTimestamp,
            ]
        )
        var engine = ExposureEngine()
        engine.claimLife = 1.5
        let started = Date()
        let r = try await engine.flag(reportID: "r1", on: store, sharing: true)
        #expect(!r.shared && r.exposedDevices == ["X"], "\(r)")
        // Not before the claim lapsed: it was waited for.
        #expect(Date().timeIntervalSince(started) >= 1.4)
    }

    /// A claim its holder renews as it decides is waited for past its life, on the engine's own
    /// clock (moved here by the test, so that no load on the machine can make it lapse).
    @Test func aRenewedClaimIsWaitedForPastItsLife() async throws {
        let s = try await Self.site()
        let store = s.store
        let clock = Mutex(Date())
        let now = { @Sendable in clock.withLock { $0 } }
        var engine = ExposureEngine()
        engine.claimLife = 10
        engine.claimClock = now
        // Another flag's claim; it is renewed five times, 4 s apart on the clock (twice the
        // claim's life in all), and then done, with no exposures of its own: a decision here
        // would show.
        let claimed = Timestamp(now())
        try Self.mark(
            store,
            [
                Flagging.Field.input: .string(Self.input), Flagging.Field.claimedBy: "other",
                Flagging.Field.claimedAt: .timestamp(claimed),
            ]
        )
        let flagging = Task { try await engine.flag(reportID: "r1", on: store, sharing: true) }
        for _ in 0..<5 {
            // Time for the waiting flag to look between renewals (it looks every 50 ms).
            try await Task.sleep(for: .milliseconds(80))
            clock.withLock { $0 += 4 }
            try Self.mark(store, [Flagging.Field.claimedAt: .timestamp(Timestamp(now()))], merge: true)
        }
        try Self.mark(
            store,
            [
                Flagging.Field.input: .string(Self.input), Flagging.Field.doneAt: .timestamp(Timestamp(now())),
                Flagging.Field.windows: 7,
            ]
        )
        let r = try await flagging.value
        #expect(r.shared && r.reporterWindows == 7 && r.exposedDevices.isEmpty, "\(r)")
        #expect(try s.exposures("X").isEmpty)
    }

    /// The flagger shares: a report the desk decided is not decided again when it arrives, and
    /// the next report, flagged after it, shows that it was handled.
    @Test func theFlaggerSharesAReportTheDeskDecided() async throws {
        let s = try ExposureEngineTests.Site()
        try s.seen("R", at: "A", 0, 30, 1)
        try s.seen("X", at: "A", 0, 30, 1.5)
        try s.seen("P", at: "C", 0, 30, 1)
        try s.seen("V", at: "C", 0, 30, 1.5)
        try s.seen("Q", at: "B", 0, 30, 1)
        try s.seen("W", at: "B", 0, 30, 1.5)
        let store = s.store
        try await store.writing { db in try Indexes.declare(in: db) }
        let flagger = Flagger(store: store, engine: ExposureEngine(), logger: Logger(label: "test"))
        let running = Task { try await flagger.flagArriving() }
        defer { running.cancel() }
        // The flagger listens from when it starts: a first report, until it is flagged.
        #expect(
            await until(60) {
                try? s.report("r0", by: "P")
                return (try? s.exposures("V").count) == 1
            },
            "the flagger flagged nothing"
        )
        // r1 as the desk leaves it, marked done, and here with no exposures written: a decision
        // by the flagger would write X's. Then r2, flagged after r1 was handled.
        try Self.mark(
            store,
            [
                Flagging.Field.input: .string(Self.input), Flagging.Field.doneAt: .serverTimestamp,
                Flagging.Field.windows: 1,
            ]
        )
        try s.report("r1", by: "R")
        try s.report("r2", by: "Q")
        #expect(await until(60) { (try? s.exposures("W").count) == 1 }, "r2 was not flagged")
        #expect(try s.exposures("X").isEmpty, "r1 was decided again")
    }
}

import Foundation
import Testing
import TracerColocation
import TracerModel
@_spi(Blocking) import TracerStore
import TracerTesting

@testable import TracerExposure
@testable import TracerReports
@testable import TracerVerification

/// Flagging on a store others write to (the site server's): who was near is decided on a
/// reader thread, and only the writes wait for the store's writer.
@Suite struct FlaggingBesideWritesTests {
    /// While another write holds the store's writer, the report is decided on what was
    /// committed, and its exposures are written once the writer is free. Before, all of flagging
    /// waited for the writer (and every kiosk's sync waited for all of flagging): it then saw the
    /// window written meanwhile and flagged its device too.
    @Test func aReportIsDecidedWhileAnotherWriteHoldsTheWriter() async throws {
        let s = try ExposureEngineTests.Site()
        try s.seen("R", at: "A", 0, 30, 1)
        try s.seen("X", at: "A", 0, 30, 1.5)
        try s.report("r1", by: "R")
        try await s.store.writing { db in try Indexes.declare(in: db) }
        let store = s.store
        let t0 = ExposureEngineTests.t0

        // A kiosk's write under way on the store's writer: Y's window, written and not yet
        // committed.
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = Task {
            try await store.writing { db in
                try db.runTransaction { t in
                    try t.set(
                        DocumentPath("beacons/A/interactions/late"),
                        [
                            "deviceId": "Y", "anchor": "A", "start": .timestamp(Timestamp(seconds: t0 + 10)),
                            "end": .timestamp(Timestamp(seconds: t0 + 40)), "distance": 1.0, "testResult": false,
                        ]
                    )
                    holding.signal()
                    // Ends at 60 s whatever happens, so a failing test ends too.
                    _ = release.wait(timeout: .now() + 60)
                }
            }
        }
        #expect(await until(30) { holding.wait(timeout: .now()) == .success }, "the write did not begin")

        let engine = ExposureEngine()
        let flagging = Task { try await engine.flag(reportID: "r1", on: store) }
        // The decision made, its writes wait for the writer, behind the kiosk's.
        #expect(await until(30) { store.unfinished.writes == 2 }, "\(store.unfinished)")
        release.signal()
        try await holder.value
        let r = try await flagging.value
        #expect(r.exposedDevices == ["X"], "\(r.exposedDevices)")
        #expect(try s.exposures("X").count == 1 && s.exposures("Y").isEmpty)
        #expect(r.marked == 1 && r.changed == 1)

        // Flagged again, the window written meanwhile counts.
        #expect(try await engine.flag(reportID: "r1", on: store).exposedDevices == ["X", "Y"])
    }

    /// A report withdrawn after it was decided is not flagged: the writes read it again.
    @Test func aReportWithdrawnAfterItsDecisionIsNotFlagged() throws {
        let s = try ExposureEngineTests.Site()
        try s.seen("R", at: "A", 0, 30, 1)
        try s.seen("X", at: "A", 0, 30, 1.5)
        try s.report("r1", by: "R")
        try s.store.write { db in try Indexes.declare(in: db) }
        let engine = ExposureEngine()
        let decision = try s.store.read { db in try engine.decide(reportID: "r1", in: db) }
        try s.store.set(DocumentPath("reports/r1"), ["status": "revoked"], merge: true)
        #expect(throws: ExposureError.self) { try s.store.write { db in try engine.commit(decision, in: db) } }
        #expect(try s.exposures("X").isEmpty)
        #expect(try s.device("X")["status"] != "exposed")
    }

    /// A flagger that says whether it was asked on the store's writer: the store's count of
    /// writes under way when the site server's kind of call reaches it.
    final class Watching: ExposureFlagging, @unchecked Sendable {
        let lock = NSLock()
        var writesUnderWay: [Int] = []
        var onTheWriter = 0

        func reportAccepted(_ report: RecordedReport, in db: StoreWriter) throws -> String {
            lock.withLock { onTheWriter += 1 }
            return "flagged"
        }

        func reportAccepted(_ report: RecordedReport, on store: DocumentStore) async throws -> String {
            let writes = store.unfinished.writes
            lock.withLock { writesUnderWay.append(writes) }
            return "flagged"
        }
    }

    /// A self-report on the site server is recorded on the store's writer and flagged after, not
    /// inside that write: deciding who was near takes a second or more a report.
    @Test func aSelfReportOnTheServerIsFlaggedOutsideTheWriteThatRecordsIt() async throws {
        let site = try ReviewTests.Site()
        let watching = Watching()
        let desk = SelfReportDesk(flagging: watching, policy: VerificationPolicy())
        let outcome = try await desk.submit(
            ReviewTests.verification(confidence: 95),
            imageSHA256: "cc",
            device: "reporter",
            on: site.store
        )
        guard case .recorded(let report, _, let line, let flagged) = outcome else {
            Issue.record("not recorded: \(outcome)")
            return
        }
        #expect(flagged && line == "flagged")
        #expect(try site.report(report.id)["status"] == "accepted")
        #expect(watching.writesUnderWay == [0] && watching.onTheWriter == 0, "\(watching.writesUnderWay)")

        // With the exposure engine: the near one is told; a failing flagging says so, as on the
        // command line.
        var exposure = ExposurePolicy()
        exposure.separation = .sum
        let engine = SelfReportDesk(flagging: ExposureEngine(policy: exposure), policy: VerificationPolicy())
        let told = try await engine.submit(
            ReviewTests.verification(confidence: 95),
            imageSHA256: "dd",
            device: "reporter",
            on: site.store
        )
        guard case .recorded(_, _, let toldLine, true) = told else {
            Issue.record("not flagged: \(told)")
            return
        }
        #expect(toldLine.contains("1 device flagged"), "\(toldLine)")
        #expect(try site.status("near")["status"] == "exposed")
        let failing = SelfReportDesk(flagging: ReviewTests.FailingFlagger(), policy: VerificationPolicy())
        let failed = try await failing.submit(
            ReviewTests.verification(confidence: 95),
            imageSHA256: "ee",
            device: "reporter",
            on: site.store
        )
        guard case .recorded(let unflagged, _, let failedLine, false) = failed else {
            Issue.record("not recorded unflagged: \(failed)")
            return
        }
        #expect(failedLine.contains("flagging failed"), "\(failedLine)")
        #expect(try site.report(unflagged.id)["flaggingFailed"]?.stringValue?.contains("database is locked") == true)
    }

    /// A report approved at review on the site server: the decision is recorded (and audited) on
    /// the store's writer, and the report flagged after, not inside that write.
    @Test func anApprovalOnTheServerIsFlaggedOutsideTheWriteThatRecordsIt() async throws {
        let site = try ReviewTests.Site()
        let reviewer = SelfReportDesk.Reviewer(name: "Dr. Review", tokenID: "tok1")
        let held = try site.hold(site.desk(.doubtful))
        let watching = Watching()
        let desk = SelfReportDesk(flagging: watching, policy: VerificationPolicy(), images: site.images)
        let decided = try await desk.decide(held.id, approve: true, by: reviewer, note: "read it", on: site.store)
        #expect(decided.flagged && decided.line == "flagged")
        #expect(try site.report(held.id)["status"] == "accepted")
        #expect(try site.report(held.id)["note"] == "read it")
        #expect(try site.images.image(held.id) == nil)
        #expect(watching.writesUnderWay == [0] && watching.onTheWriter == 0, "\(watching.writesUnderWay)")

        // A second decision is refused.
        await #expect(throws: ReviewError.self) {
            _ = try await desk.decide(held.id, approve: false, by: reviewer, on: site.store)
        }

        // With the exposure engine the near one is told; a failing flagging is recorded and said.
        let fresh = try ReviewTests.Site()
        var exposure = ExposurePolicy()
        exposure.separation = .sum
        let engine = SelfReportDesk(flagging: ExposureEngine(policy: exposure), policy: VerificationPolicy())
        let toApprove = try fresh.hold(fresh.desk(.doubtful))
        let told = try await engine.decide(toApprove.id, approve: true, by: reviewer, on: fresh.store)
        #expect(told.flagged && told.line.contains("1 device flagged"), "\(told.line)")
        #expect(try fresh.status("near")["status"] == "exposed")
        #expect(try fresh.status("far").exists == false)

        let failingSite = try ReviewTests.Site()
        let failing = SelfReportDesk(flagging: ReviewTests.FailingFlagger(), policy: VerificationPolicy())
        let toFail = try failingSite.hold(failingSite.desk(.doubtful))
        let failed = try await failing.decide(toFail.id, approve: true, by: reviewer, on: failingSite.store)
        #expect(!failed.flagged && failed.line.contains("flagging failed"), "\(failed.line)")
        #expect(try failingSite.report(toFail.id)["status"] == "accepted")
        #expect(
            try failingSite.report(toFail.id)["flaggingFailed"]?.stringValue?.contains("database is locked") == true
        )

        // A denial on the server: nobody flagged, the reporter told.
        let denySite = try ReviewTests.Site()
        let toDeny = try denySite.hold(denySite.desk(.doubtful))
        let denied = try await engine.decide(toDeny.id, approve: false, by: reviewer, note: "no", on: denySite.store)
        #expect(denied.report.status == .denied && denied.flagged)
        #expect(try denySite.status("near").exists == false)
    }
}

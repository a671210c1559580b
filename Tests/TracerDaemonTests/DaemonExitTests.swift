import Foundation
import Logging
import Synchronization
import Testing
import TracerModel
import TracerTesting

@testable import TracerDaemon
@testable import TracerSite
@_spi(Blocking) @testable import TracerStore

/// `Daemon.run`'s ways out other than the source's end: every one stops the source, writes what
/// can be written, closes the CSV log, and says what went wrong.
@Suite struct DaemonExitTests {
    /// The adverts of `DaemonReplayTests.fixture()` (three badges and a fixed beacon heard by the
    /// lab kiosk for two minutes; its lines that are not adverts left out, as a replay skips
    /// them), in batches of five seconds.
    static func batches() throws -> [[Advert]] {
        let dir = TemporaryDirectory()
        let file = dir.file("lab.jsonl")
        try DaemonReplayTests.fixture().write(to: file)
        let adverts = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
            .compactMap { try? ReplaySource.advert(String($0)) }.sorted { $0.time < $1.time }
        return Dictionary(grouping: adverts) { Int(($0.time - DaemonReplayTests.t0) / 5) }
            .sorted { $0.key < $1.key }.map(\.value)
    }

    static let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    func daemon(_ store: DocumentStore, _ source: ScriptedSource, logs: String, batchSize: Int = 500) throws -> Daemon {
        Daemon(
            site: try Site.load(file: DaemonReplayTests.mapPath),
            mode: .gateway(anchor: "kiosk-lab"),
            store: store,
            source: source,
            batchSize: batchSize,
            csvLog: try CSVLog(directory: logs),
            logger: Self.quiet
        )
    }

    /// The source fails a minute in: the run throws its error, the source is stopped once, and
    /// the windows ranged before it are written, as many as a run of the same adverts that ended
    /// well writes, with every reading in the CSV log.
    @Test func aFailingSourceIsStoppedAndWhatItRangedIsWritten() async throws {
        let minute = Array(try Self.batches().prefix(12))
        let (good, goodDir) = try DocumentStore.temporary()
        let ended = try await daemon(good, ScriptedSource(minute), logs: goodDir.file("logs")).run()
        #expect(ended.written >= 6 && !ended.interrupted)

        let (store, dir) = try DocumentStore.temporary()
        let source = ScriptedSource(minute, failure: SourceFailed())
        await #expect(throws: SourceFailed.self) {
            try await daemon(store, source, logs: dir.file("logs")).run()
        }
        #expect(source.stops.load(ordering: .relaxed) == 1)
        let written = try await store.reading { db in try db.getDocuments(Query(collectionGroup: "interactions")) }
        #expect(written.count == ended.written)
        let rows = try String(contentsOfFile: dir.file("logs/contacts.csv"), encoding: .utf8).split(separator: "\n")
        #expect(rows.count - 1 == ended.counts.attributed)
    }

    /// The store is closed under a running daemon (as a store whose disk has gone fails): the
    /// next write fails, the run throws the store's error, the source is stopped once, and what
    /// was written before is there once, in a store whose check passes.
    @Test func aStoreThatFailsStopsTheSourceAndSaysSo() async throws {
        let all = try Self.batches()
        let (store, dir) = try DocumentStore.temporary()
        // Paused after 45 s of adverts: the first 30-second windows have closed and been written
        // (one window a write), the rest wait.
        let source = ScriptedSource(all, pauseAfter: 9)
        let daemon = try daemon(store, source, logs: dir.file("logs"), batchSize: 1)
        let run = Task { try await daemon.run() }
        let deadline = ContinuousClock.now + .seconds(60)
        while daemon.progress.snapshot.written == 0 || !source.paused.load(ordering: .acquiring),
            ContinuousClock.now < deadline
        {
            try await Task.sleep(for: .milliseconds(10))
        }
        let before = daemon.progress.snapshot.written
        #expect(before > 0)
        await store.close()
        source.resume.store(true, ordering: .releasing)
        await #expect(performing: { try await run.value }, throws: { ($0 as? StoreError)?.code == .storeGone })
        #expect(source.stops.load(ordering: .relaxed) == 1)

        let again = try DocumentStore(path: store.path)
        let written = try await again.reading { db in try db.getDocuments(Query(collectionGroup: "interactions")) }
        #expect(written.count == before)
        #expect(Set(written.map(\.path)).count == written.count)
        #expect(try await again.reading { db in try db.integrityCheck() } == "ok")
        await again.close()
    }
}

struct SourceFailed: Error {}

/// Adverts handed over batch by batch (their own times: a replay's clock), optionally pausing
/// before one until told to go on, then ending or failing; counts the daemon's `stop` calls.
final class ScriptedSource: AdvertSource, Sendable {
    let script: [[Advert]]
    let pauseAfter: Int?
    let failure: (any Error & Sendable)?
    let resume = Atomic<Bool>(false)
    let paused = Atomic<Bool>(false)
    let stops = Atomic<Int>(0)
    var name: String { "scripted" }
    var isReplay: Bool { true }

    init(_ script: [[Advert]], pauseAfter: Int? = nil, failure: (any Error & Sendable)? = nil) {
        self.script = script
        self.pauseAfter = pauseAfter
        self.failure = failure
    }

    func batches() -> AsyncThrowingStream<[Advert], any Error> {
        AsyncThrowingStream { continuation in
            let task = Task { [self] in
                for (i, batch) in script.enumerated() {
                    if i == pauseAfter {
                        paused.store(true, ordering: .releasing)
                        while !resume.load(ordering: .acquiring), !Task.isCancelled {
                            try? await Task.sleep(for: .milliseconds(5))
                        }
                    }
                    continuation.yield(batch)
                }
                continuation.finish(throwing: failure)
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    func stop(timeout: Duration) {
        stops.add(1, ordering: .relaxed)
    }
}

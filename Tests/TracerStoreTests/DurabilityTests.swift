import Foundation
import Testing
import TracerTesting

@_spi(Blocking) @testable import TracerStore

/// A writer killed with SIGKILL in the middle of its transactions, again and again: every
/// transaction it reported as committed is there, no transaction is there in part, and the store's
/// integrity check passes each time. (On PostgreSQL too, in Tools/test's second pass.)
@Suite struct DurabilityTests {
    @Test func everyAcknowledgedWriteSurvivesSIGKILL() async throws {
        let dir = TemporaryDirectory("tracer-durability")
        let storePath = try TestBackend.location(in: dir)
        let batchSize = 500
        var g = SplitMix64(seed: 11)
        var acknowledged: [Int: Int] = [:]
        // The writer keeps this index up to date too, so the counts below are index reads.
        try await DocumentStore(path: storePath).writing { db in
            try db.declareIndex(IndexDefinition(collectionID: "interactions", scope: .collectionGroup, "run"))
        }

        for run in 0..<10 {
            // Interaction-shaped documents for 40 beacons, interleaved as live sightings are.
            var lines = ""
            for i in 0..<8_000 {
                let data: DocumentData = [
                    "deviceId": .string("f7826da6-4fa2-4e98-8024-bc5b71e0893e:1:\(i % 97)"),
                    "proximity": "near", "distance": .double(Double(i % 30) / 10), "rssi": -63, "samples": 12,
                    "start": .timestamp(Timestamp(seconds: 1_763_776_800 + Double(i))), "run": .integer(Int64(run)),
                ]
                lines +=
                    DocumentStore.exportLine(
                        DocumentSnapshot(
                            path: try DocumentPath("beacons/b\(i % 40)/interactions/r\(run)-\(i)"),
                            data: data
                        )
                    ) + "\n"
            }
            let file = dir.file("run\(run).jsonl")
            try lines.write(toFile: file, atomically: true, encoding: .utf8)

            let writer = try TracerProcess.start([
                "db", "import", file, "--batch-size", String(batchSize), "--report-commits", "--store", storePath,
            ])
            // Let it commit a few transactions, then kill it at a random moment inside the next ones.
            var last = 0
            let commitsBeforeKill = Int.random(in: 1...6, using: &g)
            while let line = await writer.line(timeout: 30), line.hasPrefix("committed ") {
                last = Int(line.dropFirst("committed ".count)) ?? last
                if last >= commitsBeforeKill * batchSize { break }
            }
            try await Task.sleep(for: .microseconds(Int.random(in: 0...40_000, using: &g)))
            writer.kill()
            while let line = await writer.line(timeout: 0.2) {
                if line.hasPrefix("committed ") { last = Int(line.dropFirst("committed ".count)) ?? last }
            }
            acknowledged[run] = last
            #expect(last > 0, "run \(run): the writer never reported a commit")

            let store = try DocumentStore(path: storePath)
            #expect(try await store.reading { db in try db.integrityCheck() } == "ok", "run \(run)")
            for (r, count) in acknowledged {
                let present = try await store.reading { db in
                    try db.count(
                        Query(collectionGroup: "interactions").where("run", .equal, .integer(Int64(r)))
                    )
                }
                #expect(present >= count, "run \(r): \(present) documents, \(count) acknowledged")
                #expect(present % batchSize == 0, "run \(r): a transaction landed in part (\(present) documents)")
            }
        }
    }
}

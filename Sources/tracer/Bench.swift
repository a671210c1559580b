import ArgumentParser
import Foundation
import TracerBenchmarks
import TracerOCR
import TracerVerification

/// `tracer bench …`: benchmarks for Tools/bench-*, hidden from help.
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Benchmarks (run them through Tools/bench-*).",
        shouldDisplay: false,
        subcommands: [Store.self, Ranging.self, Writer.self, OCR.self, Exposure.self]
    )

    struct Store: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The document store against raw SQLite.")
        @Option(help: "A scratch directory (large: about 2 GB at 1M documents).") var directory: String
        @Option(help: "Documents per write round.") var writeDocuments = 200_000
        @Option(help: "Write rounds.") var rounds = 3
        @Option(help: "Store sizes for the query figures.") var sizes: [Int] = [10_000, 1_000_000]
        @Flag(help: "Write with synchronous=NORMAL on both sides (no fsync per commit).") var normal = false

        func run() throws {
            let binary =
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                ?? CommandLine.arguments[0]
            var bench = StoreBenchmark(directory: directory, binary: binary) { Output.line($0) }
            bench.writeDocuments = writeDocuments
            bench.rounds = rounds
            bench.querySizes = sizes
            bench.synchronous = !normal
            try bench.run()
        }
    }

    struct Ranging: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Adverts through ranging, and the replay daemon.")
        @Option(help: "A scratch directory (about 150 MB).") var directory: String
        @Option(help: "The BeaconMap to range against.") var map: String

        func run() async throws {
            try await RangingBenchmark(directory: directory, map: map) { Output.line($0) }.run()
        }
    }

    struct Writer: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The cross-process writer of the listener benchmark.")
        @Option var store: String
        @Option var document: String
        @Option var count = 300

        func run() throws {
            try StoreBenchmark.writer(store: store, document: document, count: count)
        }
    }

    struct Exposure: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Flagging and exposure queries on a site-sized store."
        )
        @Option(help: "A scratch directory (about 5 GB at 10M documents; the store is kept and reused).")
        var directory: String
        @Option(help: "Interaction documents.") var documents = 10_000_000
        @Option(help: "Reports flagged.") var reports = 10

        func run() throws {
            let binary =
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                ?? CommandLine.arguments[0]
            var bench = ExposureBenchmark(directory: directory, binary: binary) { Output.line($0) }
            bench.documents = documents
            bench.reports = reports
            try bench.run()
        }
    }

    /// One engine reused over a batch of pages: pages per second and peak memory.
    struct OCR: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "OCR and verification of a batch with one engine.")
        @Argument var images: [String]

        func run() throws {
            let started = ContinuousClock.now
            let engine = try OCREngine()
            let ready = ContinuousClock.now
            var accepted = 0
            for (i, image) in images.enumerated() {
                let page = try engine.read(data: try engine.load(file: image), name: image)
                if Verifier.verify(page, now: Date()).accepted { accepted += 1 }
                Output.progress("pages", i + 1, images.count)
            }
            Output.endProgress()
            let done = ContinuousClock.now
            let pages = Double(images.count)
            let reading = (done - ready) / .seconds(1)
            var usage = rusage()
            getrusage(RUSAGE_SELF.rawValue, &usage)
            Output.line(
                String(
                    format:
                        "engine start %.2f s; %d pages in %.2f s: %.2f pages/s, %.3f s a page; %d accepted; peak RSS %d MiB",
                    (ready - started) / .seconds(1),
                    images.count,
                    reading,
                    pages / reading,
                    reading / pages,
                    accepted,
                    usage.ru_maxrss / 1024
                )
            )
        }
    }
}

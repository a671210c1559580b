import ArgumentParser
import Foundation
import Logging
import TracerOCR
import TracerStorePostgres
import TracerVerification

/// `tracer-bench …`: the benchmarks Tools/bench/* build in release mode and run. A program of its
/// own, so that the product binary `tracer` carries no benchmark code and the store no hooks for it.
@main
struct TracerBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tracer-bench",
        abstract: "tracer's benchmarks (run them through Tools/bench/*; BENCHMARKS.md has the figures).",
        subcommands: [
            Store.self, Ranging.self, Writer.self, OCR.self, Exposure.self, SyncFanIn.self, Badges.self, Campus.self,
        ]
    )

    /// Log lines go to stderr at notice and above (TRACER_LOG_LEVEL to change), as with `tracer`,
    /// so that stdout carries only the benchmark's report.
    static func main() async {
        PostgresBackend.enable()
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            let level = ProcessInfo.processInfo.environment["TRACER_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:))
            handler.logLevel = level ?? .notice
            return handler
        }
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }

    /// This program's own binary, for the cross-process writer.
    static var binary: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    struct Store: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The document store against raw SQLite, or on PostgreSQL against raw libpq."
        )
        @Option(help: "A scratch directory (large: about 2 GB at 1M documents).") var directory: String
        @Option(help: "Documents per write round.") var writeDocuments = 200_000
        @Option(help: "Write rounds.") var rounds = 3
        @Option(help: "Store sizes for the query figures.") var sizes: [Int] = [10_000, 1_000_000]
        @Flag(help: "Write with synchronous=NORMAL on both sides (no fsync per commit).") var normal = false
        @Option(help: "A PostgreSQL database (libpq URI) to measure the store on, instead of SQLite.")
        var postgres: String?

        func run() throws {
            var bench = StoreBenchmark(directory: directory, binary: TracerBench.binary) { Output.line($0) }
            bench.writeDocuments = writeDocuments
            bench.rounds = rounds
            bench.querySizes = sizes
            bench.synchronous = !normal
            bench.postgres = postgres
            try bench.run()
        }
    }

    struct Badges: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Rotating badge ids: the kiosk's table built, its memory, and one advert resolved."
        )
        @Option(help: "Badge counts.") var sizes: [Int] = [10_000, 100_000]
        @Option(help: "Adverts resolved per size.") var lookups = 5_000_000
        @Option(help: "The BeaconMap of the listener's simulated day.") var map = "BeaconMap/example-campus.yaml"
        @Option(help: "People in the listener's simulated day.") var people = 60
        @Option(help: "Hours of the listener's simulated day.") var hours = 10.0

        func run() throws {
            let bench = BadgeBenchmark(sizes: sizes, lookups: lookups) { Output.line($0) }
            bench.run()
            try bench.linkability(map: map, people: people, hours: hours)
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
        @Option(help: "A PostgreSQL database (libpq URI) to keep the store in, instead of a SQLite file.")
        var postgres: String?
        @Option(help: "The `tracer` binary whose `status --watch` is timed (default: the one beside this program).")
        var tracer: String?

        mutating func validate() throws {
            let path =
                tracer
                ?? URL(fileURLWithPath: TracerBench.binary).deletingLastPathComponent().appendingPathComponent("tracer")
                .path
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw ValidationError(
                    "no tracer binary at \(path): build it (swift build -c release --product tracer) or pass --tracer"
                )
            }
            tracer = path
        }

        func run() throws {
            var bench = ExposureBenchmark(directory: directory, tracer: tracer!) { Output.line($0) }
            bench.documents = documents
            bench.reports = reports
            bench.postgres = postgres
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

/// Writing to the terminal: whole lines, unbuffered, so that a pipe sees each line as it happens.
enum Output {
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    /// A progress line redrawn in place on a terminal: `label [#####.....] 40%  n/total`.
    static func progress(_ label: String, _ done: Int, _ total: Int) {
        guard isatty(2) == 1 else { return }
        let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 1
        let filled = Int(fraction * 30)
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: 30 - filled)
        FileHandle.standardError.write(Data("\r\(label) [\(bar)] \(Int(fraction * 100))%  \(done)/\(total)".utf8))
    }

    static func endProgress() {
        if isatty(2) == 1 { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}

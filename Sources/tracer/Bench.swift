import ArgumentParser
import Foundation
import TracerBenchmarks

/// `tracer bench …`: benchmarks for Tools/bench-*, hidden from help.
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Benchmarks (run them through Tools/bench-*).",
        shouldDisplay: false,
        subcommands: [Store.self, Ranging.self, Writer.self]
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
}

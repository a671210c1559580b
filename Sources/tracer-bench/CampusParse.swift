import ArgumentParser
import Foundation
import TracerAPI
@_spi(Blocking) import TracerStore

extension Campus {
    /// A campus's kiosk batches parsed as `tracer serve` parses a `/v1/sync` body
    /// (`SyncBatch(json:)`: the JSON, then each document's path and ids checked), against
    /// parsing the same bytes' JSON alone, in the same run: what the server does with a batch
    /// before its store sees it.
    struct Parse: ParsableCommand, Measuring {
        static let configuration = CommandConfiguration(
            abstract: "Kiosk batches parsed as the server parses them, against their JSON alone."
        )
        @OptionGroup var options: Options
        @Option(help: "Five-minute slices of the day (from 08:00) whose batches are parsed.") var slices = 2
        @Option(help: "Rounds, each parsing every batch both ways.") var rounds = 5

        func run() throws {
            let t = options.timetable
            let day = 1_767_225_600.0  // 2026-01-01: the batches' timestamps only
            var bodies: [[UInt8]] = []
            var windows = 0
            for slice in 0..<slices {
                for (k, ws) in t.windows(day: 0, slice: slice).enumerated() where !ws.isEmpty {
                    bodies.append(try Campus.batch(ws, kiosk: k, slice: slice, day: day, dayIndex: 0))
                    windows += ws.count
                }
            }
            guard windows > 0 else { throw ValidationError("the timetable has no windows in \(slices) slices") }
            let bytes = bodies.reduce(0) { $0 + $1.count }
            print(
                "\(bodies.count) batches, \(windows) windows (\(bytes / windows) bytes each), "
                    + "\(rounds) rounds, JSON alone and as the server parses, alternating"
            )
            var jsonTimes: [Double] = []
            var batchTimes: [Double] = []
            var parsed = 0
            for round in 1...rounds {
                // Which goes first alternates, so that drift in the machine's speed falls on both.
                func json() throws -> Double {
                    try time {
                        for b in bodies {
                            var copy = b
                            _ = try JSON.parse(bytes: &copy, allowSentinels: false)
                        }
                    }
                }
                func batches() throws -> Double {
                    try time { for b in bodies { parsed += try SyncBatch(json: b).documents.count } }
                }
                let j: Double
                let s: Double
                if round % 2 == 1 {
                    j = try json()
                    s = try batches()
                } else {
                    s = try batches()
                    j = try json()
                }
                jsonTimes.append(j)
                batchTimes.append(s)
                print(
                    "round \(round): JSON alone \(format(j / Double(windows) * 1e6)) µs a window, as the server parses "
                        + "\(format(s / Double(windows) * 1e6)) µs, ratio \(format(s / j))"
                )
            }
            precondition(parsed == windows * rounds, "a batch lost documents: \(parsed) of \(windows * rounds)")
            let ratios = zip(batchTimes, jsonTimes).map { $0 / $1 }
            print(
                "median: JSON alone \(format(median(jsonTimes) / Double(windows) * 1e6)) µs a window, as the server "
                    + "parses \(format(median(batchTimes) / Double(windows) * 1e6)) µs "
                    + "(\(Int(Double(windows) / median(batchTimes))) windows/s on one core); "
                    + "median of the rounds' ratios \(format(median(ratios)))"
            )
        }
    }
}

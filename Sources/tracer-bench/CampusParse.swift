import ArgumentParser
import Foundation
import TracerAPI
@_spi(Blocking) import TracerStore

extension Campus {
    /// A campus's kiosk batches parsed as `tracer serve` parses a `/v1/sync` body
    /// (`SyncBatch(json:)`: the JSON, then each document's path and ids checked), against
    /// parsing the same bytes' JSON alone and with Foundation's parser, in the same run: what the
    /// server does with a batch before its store sees it.
    struct Parse: ParsableCommand, Measuring {
        static let configuration = CommandConfiguration(
            abstract: "Kiosk batches parsed as the server parses them, against their JSON alone and Foundation's."
        )
        @OptionGroup var options: Options
        @Option(help: "Five-minute slices of the day (from 08:00) whose batches are parsed.") var slices = 2
        @Option(help: "Rounds, each parsing every batch each way.") var rounds = 5

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
                    + "\(rounds) rounds, each way in turn"
            )
            // Three ways, in an order that turns from round to round, so that drift in the
            // machine's speed falls on each: Foundation's JSONSerialization (a parser not
            // tracer's: the yardstick for tracer's own JSON), tracer's JSON alone, and the batch
            // as the server parses it.
            var times: [[Double]] = [[], [], []]
            var parsed = 0
            let ways: [() throws -> Void] = [
                { for b in bodies { _ = try JSONSerialization.jsonObject(with: Data(b)) } },
                {
                    for b in bodies {
                        var copy = b
                        _ = try JSON.parse(bytes: &copy, allowSentinels: false)
                    }
                },
                { for b in bodies { parsed += try SyncBatch(json: b).documents.count } },
            ]
            func perWindow(_ seconds: Double) -> String { format(seconds / Double(windows) * 1e6) }
            for round in 1...rounds {
                for k in 0..<3 {
                    let way = (round + k) % 3
                    times[way].append(try time { try ways[way]() })
                }
                let (f, j, s) = (times[0].last!, times[1].last!, times[2].last!)
                print(
                    "round \(round): µs a window: Foundation \(perWindow(f)), tracer's JSON alone \(perWindow(j)), "
                        + "as the server parses \(perWindow(s)); server / JSON alone \(format(s / j)), "
                        + "server / Foundation \(format(s / f))"
                )
            }
            precondition(parsed == windows * rounds, "a batch lost documents: \(parsed) of \(windows * rounds)")
            func ratio(_ a: Int, _ b: Int) -> String { format(median(zip(times[a], times[b]).map { $0 / $1 })) }
            print(
                "median: µs a window: Foundation \(perWindow(median(times[0]))), tracer's JSON alone "
                    + "\(perWindow(median(times[1]))), as the server parses \(perWindow(median(times[2]))) "
                    + "(\(Int(Double(windows) / median(times[2]))) windows/s on one core); medians of the rounds' "
                    + "ratios: server / JSON alone \(ratio(2, 1)), server / Foundation \(ratio(2, 0)), "
                    + "JSON alone / Foundation \(ratio(1, 0))"
            )
        }
    }
}

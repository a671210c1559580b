import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import Synchronization
import TracerAPI
import TracerColocation
import TracerExposure
import TracerModel
import TracerSite
@_spi(Blocking) import TracerStore

/// `tracer-bench campus …`: a university's day of interaction windows (issue 46), made from a
/// timetable so that co-location is what a campus has, and sent through the real path. Tools/bench/
/// campus runs the servers and the database and reads what these print.
struct Campus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A campus's days of windows through /v1/sync, flagging and purging on its store.",
        subcommands: [Plan.self, Map.self, Send.self, Parse.self, Fill.self, Flag.self, Purge.self]
    )

    /// Runs `body` on the store at `path`, closed on every way out.
    static func withStore(_ path: String, _ body: (DocumentStore) throws -> Void) async throws {
        let store = try DocumentStore(path: path)
        do {
            try body(store)
            await store.close()
        } catch {
            await store.close()
            throw error
        }
    }

    /// A window as its kiosk's daemon writes it: the interaction document and its path.
    static func document(_ w: Timetable.Window, at key: String, day: Double) throws -> (DocumentPath, DocumentData) {
        let end = day + w.end
        let interaction = Interaction(
            deviceID: Timetable.device(w.badge),
            anchor: key,
            beacon: .init(uuid: Timetable.uuid, major: 1 + w.badge / 65_536, minor: w.badge % 65_536),
            proximity: w.distance < 0.5 ? .immediate : w.distance < 3 ? .near : .far,
            distance: w.distance,
            minDistance: (w.distance * 80).rounded() / 100,
            rssi: (w.rssi * 10).rounded() / 10,
            measuredPower: -59,
            start: Timestamp(seconds: end - 30),
            end: Timestamp(seconds: end),
            samples: w.samples
        )
        var data = interaction.data
        data["ts"] = .timestamp(Timestamp(seconds: end + 1))
        return (try Collections.interactions(at: key).document(w.id), data)
    }

    /// Kiosk `k`'s `/v1/sync` body for its windows of five-minute `slice` of a day.
    static func batch(
        _ windows: [Timetable.Window],
        kiosk k: Int,
        slice: Int,
        day: Double,
        dayIndex: Int
    ) throws
        -> [UInt8]
    {
        let key = Timetable.kiosk(k)
        var docs: [UInt8] = [UInt8(ascii: "[")]
        docs.reserveCapacity(windows.count * 520)
        for (i, w) in windows.enumerated() {
            if i > 0 { docs += Array(", ".utf8) }
            let (path, data) = try document(w, at: key, day: day)
            docs += Array("{\"path\": \(JSON.string(.string(path.description))), \"data\": ".utf8)
            docs += Array(JSON.string(data).utf8)
            docs.append(UInt8(ascii: "}"))
        }
        docs.append(UInt8(ascii: "]"))
        // A kiosk's change tokens grow from day to day: a day's slices after the day before.
        return SyncBatch.body(
            kiosk: key,
            through: Int64(dayIndex * 1_000 + slice + 1),
            sentAt: day + Double(slice + 1) * Timetable.slice + 8 * 3600,
            clock: nil,
            backlog: 0,
            backlogOldest: nil,
            documents: docs
        )
    }

    /// The campus's size and timetable: shared by every subcommand, so that a day sent is the
    /// day its reports are flagged on.
    struct Options: ParsableArguments {
        @Option(help: "Badges (people).") var badges = 10_000
        @Option(help: "Kiosks, two to a room.") var kiosks = 500
        @Option(help: "Hours of each day sent, from 08:00 (8: the whole teaching day).") var hours = 8.0
        @Option(help: "The timetable's seed.") var seed: UInt64 = 1

        var timetable: Timetable { Timetable(badges: badges, rooms: max(2, kiosks / 2), seed: seed) }
    }

    /// The day's windows: how many, and the busiest five minutes' rate (JSON on stdout).
    struct Plan: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Windows in a day and its peak rate (JSON).")
        @OptionGroup var options: Options
        @Option(help: "The day's index (the timetable changes from day to day).") var dayIndex = 0

        func run() throws {
            let t = options.timetable
            var total = 0
            var peak = 0
            for slice in 0..<t.slices(hours: options.hours) {
                let n = t.windows(day: dayIndex, slice: slice).reduce(0) { $0 + $1.count }
                total += n
                peak = max(peak, n)
            }
            print(
                JSON.string([
                    "windows": .integer(Int64(total)), "peakPerSecond": .double(Double(peak) / Timetable.slice),
                    "kiosks": .integer(Int64(2 * t.rooms)), "badges": .integer(Int64(t.badges)),
                ])
            )
        }
    }

    /// The campus as a BeaconMap: buildings of ten rooms in a row, the first a dining hall,
    /// two kiosks in each room on opposite walls.
    struct Map: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The campus's BeaconMap (YAML).")
        @OptionGroup var options: Options
        @Option(help: "Where to write it.") var out: String

        func run() throws {
            let t = options.timetable
            var rooms: [String] = []
            var anchors: [String] = []
            for r in 0..<t.rooms {
                let building = r / 10
                let i = r % 10
                let y = Double(building) * 30
                // The dining hall is 24 × 16 m; each classroom 10 × 8 beside it.
                let (x0, x1, y1) =
                    i == 0 ? (0.0, 24.0, y + 16) : (24 + Double(i - 1) * 10, 34 + Double(i - 1) * 10, y + 8)
                let use = Timetable.isCommons(r) ? "dining" : "teaching"
                rooms.append(
                    "  - {key: r\(r), name: Room \(r), building: B\(building), floor: 0, "
                        + "outline: [[\(x0), \(y)], [\(x1), \(y)], [\(x1), \(y1)], [\(x0), \(y1)]], use: \(use)}"
                )
                let mid = (x0 + x1) / 2
                anchors.append(
                    "  - {key: \(Timetable.kiosk(2 * r)), kind: kiosk, room: r\(r), position: [\(mid), \(y + 0.5)]}"
                )
                anchors.append(
                    "  - {key: \(Timetable.kiosk(2 * r + 1)), kind: kiosk, room: r\(r), position: [\(mid), \(y1 - 0.5)]}"
                )
            }
            let yaml =
                "# A campus for Tools/bench/campus (tracer-bench campus map): \(t.rooms) rooms, \(2 * t.rooms) kiosks.\n"
                + "site: Bench University\ndeviceUUIDs:\n  - \(Timetable.uuid)\nrooms:\n"
                + rooms.joined(separator: "\n") + "\nanchors:\n" + anchors.joined(separator: "\n") + "\n"
            try Data(yaml.utf8).write(to: URL(fileURLWithPath: out))
        }
    }

    /// One day sent as 500 kiosks send it: each kiosk's windows of each five minutes in one
    /// `/v1/sync` batch with its own token, five minutes after five minutes, as fast as the
    /// servers take them (`concurrency` batches in flight, shared between the servers).
    struct Send: AsyncParsableCommand, Measuring {
        static let configuration = CommandConfiguration(abstract: "One day's windows through /v1/sync (JSON).")
        @OptionGroup var options: Options
        @Option(help: "The servers' URLs, separated by commas: batches go to each in turn.") var servers: String
        @Option(help: "A directory with one token file per kiosk, named by its anchor.") var tokens: String
        @Option(help: "The day's midnight (Unix seconds, UTC).") var day: Double
        @Option(help: "The day's index (the timetable changes from day to day).") var dayIndex = 0
        @Option(help: "Batches in flight.") var concurrency = 8

        func run() async throws {
            let t = options.timetable
            let bases = servers.split(separator: ",").map { String($0) }
            var tokenOf: [String: String] = [:]
            for k in 0..<2 * t.rooms {
                let key = Timetable.kiosk(k)
                let file = (tokens as NSString).appendingPathComponent(key)
                guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                    throw ValidationError("\(file): no token for kiosk \(key)")
                }
                tokenOf[key] = text.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            let client = HTTPClient(eventLoopGroupProvider: .singleton)
            do {
                let result = try await send(t, bases: bases, tokens: tokenOf, client: client)
                try await client.shutdown()
                print(result)
            } catch {
                try? await client.shutdown()
                throw error
            }
        }

        func send(_ t: Timetable, bases: [String], tokens: [String: String], client: HTTPClient) async throws -> String
        {
            let slices = t.slices(hours: options.hours)
            let tally = SendTally()
            var peak = 0
            let start = ContinuousClock.now
            var lastSaid = start
            for slice in 0..<slices {
                let batches = t.windows(day: dayIndex, slice: slice).enumerated().filter { !$0.element.isEmpty }
                peak = max(peak, batches.reduce(0) { $0 + $1.element.count })
                tally.next.store(0, ordering: .relaxed)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<max(1, concurrency) {
                        group.addTask {
                            while true {
                                let i = tally.next.add(1, ordering: .relaxed).oldValue
                                guard i < batches.count else { return }
                                let (k, windows) = batches[i]
                                let n = tally.requests.add(1, ordering: .relaxed).oldValue
                                let seconds = try await post(
                                    t,
                                    kiosk: k,
                                    windows: windows,
                                    slice: slice,
                                    base: bases[n % bases.count],
                                    token: tokens[Timetable.kiosk(k)]!,
                                    client: client
                                )
                                tally.latencies.withLock { $0.append(seconds) }
                                tally.sent.add(windows.count, ordering: .relaxed)
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                if ContinuousClock.now - lastSaid > .seconds(10) {
                    lastSaid = .now
                    let s = (ContinuousClock.now - start) / .seconds(1)
                    let n = tally.sent.load(ordering: .relaxed)
                    FileHandle.standardError.write(
                        Data(
                            "campus: day \(dayIndex + 1), \(Self.clock(slice + 1)) sent: \(n) windows in \(Int(s)) s, \(Int(Double(n) / s))/s\n"
                                .utf8
                        )
                    )
                }
            }
            let seconds = (ContinuousClock.now - start) / .seconds(1)
            let n = tally.sent.load(ordering: .relaxed)
            let l = tally.latencies.withLock { $0 }
            return JSON.string([
                "windows": .integer(Int64(n)), "seconds": .double(seconds), "perSecond": .double(Double(n) / seconds),
                "peakPerSecond": .double(Double(peak) / Timetable.slice),
                "requests": .integer(Int64(tally.requests.load(ordering: .relaxed))),
                "requestP50": .double(median(l)), "requestP99": .double(percentile(l, 0.99)),
            ])
        }

        /// "08:05": the end of slice `n` of the day.
        static func clock(_ n: Int) -> String {
            let m = 8 * 60 + n * Int(Timetable.slice) / 60
            return String(format: "%02d:%02d", m / 60, m % 60)
        }

        /// One kiosk's batch: its windows of the slice, committed by the server when answered.
        func post(
            _ t: Timetable,
            kiosk k: Int,
            windows: [Timetable.Window],
            slice: Int,
            base: String,
            token: String,
            client: HTTPClient
        ) async throws -> Double {
            let key = Timetable.kiosk(k)
            let body = try Campus.batch(windows, kiosk: k, slice: slice, day: day, dayIndex: dayIndex)
            var request = HTTPClientRequest(url: base + "/v1/sync")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
            let started = ContinuousClock.now
            let response = try await client.execute(request, timeout: .seconds(120))
            let answer = try await response.body.collect(upTo: 1 << 20)
            let seconds = (ContinuousClock.now - started) / .seconds(1)
            guard response.status == .ok else {
                throw ValidationError(
                    "\(base)/v1/sync answered \(response.status.code) for \(key)'s batch: \(String(buffer: answer).prefix(300))"
                )
            }
            let parsed = try SyncAnswer(json: Array(answer.readableBytesView))
            guard parsed.refused.isEmpty, parsed.applied + parsed.unchanged == windows.count else {
                throw ValidationError(
                    "\(base) took \(parsed.applied + parsed.unchanged) of \(key)'s \(windows.count) windows: "
                        + (parsed.refused.first.map { "\($0.path): \($0.reason)" } ?? "")
                )
            }
            return seconds
        }
    }

    /// One day's windows written straight into a store, as a kiosk's batches would leave them
    /// (the same documents, ids and indexes), without servers: to measure flagging on a campus's
    /// store, before and after a change, without sending the day again. Tools/bench/campus
    /// measures the real path; this is for working on what comes after it.
    struct Fill: AsyncParsableCommand, Measuring {
        static let configuration = CommandConfiguration(abstract: "One day's windows written into a store (JSON).")
        @OptionGroup var options: Options
        @Option(help: "The store (a libpq URI or a SQLite file).") var store: String
        @Option(help: "The day's midnight (Unix seconds, UTC).") var day: Double
        @Option(help: "The day's index (the timetable changes from day to day).") var dayIndex = 0

        func run() async throws { try await Campus.withStore(store, fill) }

        func fill(_ store: DocumentStore) throws {
            let t = options.timetable
            try store.write { db in try Indexes.declare(in: db) }
            var written = 0
            let seconds = try time {
                for slice in 0..<t.slices(hours: options.hours) {
                    var batch = WriteBatch()
                    for (k, windows) in t.windows(day: dayIndex, slice: slice).enumerated() {
                        for w in windows {
                            let (path, data) = try Campus.document(w, at: Timetable.kiosk(k), day: day)
                            batch.set(path, data)
                        }
                    }
                    written += batch.count
                    try store.commit(batch)
                    if (slice + 1) % 12 == 0 {
                        FileHandle.standardError.write(
                            Data("campus: \(Send.clock(slice + 1)) written: \(written) windows\n".utf8)
                        )
                    }
                }
            }
            print(JSON.string(["windows": .integer(Int64(written)), "seconds": .double(seconds)]))
        }
    }

    /// Reports of badges present on the day, each accepted and flagged as the site server's
    /// flagger does (the site's policy, from its published map), timed one by one.
    struct Flag: AsyncParsableCommand, Measuring {
        static let configuration = CommandConfiguration(abstract: "Flag reports on the campus's store (JSON).")
        @OptionGroup var options: Options
        @Option(help: "The store (a libpq URI or a SQLite file).") var store: String
        @Option(help: "The last day's midnight (Unix seconds, UTC): the reports are collected that evening.")
        var day: Double
        @Option(help: "The last day's index.") var dayIndex = 0
        @Option(help: "Reports flagged.") var reports = 20

        func run() async throws { try await Campus.withStore(store, flag) }

        func flag(_ store: DocumentStore) throws {
            let t = options.timetable
            guard let site = try store.read({ try PublishedSite.load(from: $0) })?.site else {
                throw ValidationError("\(self.store): no published site (tracer map publish)")
            }
            let engine = ExposureEngine(policy: ExposurePolicy(site: site))
            let present = (0..<t.badges).filter { !t.absent($0, day: dayIndex) }
            var seconds: [Double] = []
            var exposures = 0
            var windows = 0
            for r in 0..<reports {
                let badge = present[(r * present.count) / max(1, reports)]
                let id = "campus-r\(dayIndex)-\(r)"
                if try store.get(Collections.report(id)).exists {
                    try store.write { db in try engine.revoke(reportID: id, in: db) }
                }
                let report = Report(
                    id: id,
                    deviceID: Timetable.device(badge),
                    status: .accepted,
                    collectedAt: Timestamp(seconds: day + 18 * 3600),
                    imageSHA256: ""
                )
                try store.set(Collections.report(id), report.data)
                var result: FlagResult?
                seconds.append(try time { result = try store.write { db in try engine.flag(reportID: id, in: db) } })
                exposures += result?.exposures ?? 0
                windows += result?.reporterWindows ?? 0
                FileHandle.standardError.write(Data("campus: report \(r + 1) of \(reports) flagged\n".utf8))
            }
            print(
                JSON.string([
                    "reports": .integer(Int64(reports)), "p50": .double(median(seconds)),
                    "p99": .double(percentile(seconds, 0.99)), "max": .double(seconds.max() ?? .nan),
                    "exposures": .double(Double(exposures) / Double(max(1, reports))),
                    "reporterWindows": .double(Double(windows) / Double(max(1, reports))),
                    "separation": .string(engine.policy.separation.rawValue),
                ])
            )
        }
    }

    /// The site's purge of interactions that started before `before`, as the site server's
    /// does it (`DocumentStore.purge`), with a line every 10,000 deleted: Tools/bench/campus
    /// stops it after its time and reads the rate from the last line.
    struct Purge: AsyncParsableCommand, Measuring {
        static let configuration = CommandConfiguration(abstract: "Purge interactions, saying how far it got.")
        @Option(help: "The store (a libpq URI or a SQLite file).") var store: String
        @Option(help: "Interactions that started before this (Unix seconds) are deleted.") var before: Double

        func run() async throws { try await Campus.withStore(store, purge) }

        func purge(_ store: DocumentStore) throws {
            let start = ContinuousClock.now
            var said = 0
            let total = try store.purge(
                collectionGroup: Interaction.collectionID,
                field: Interaction.Field.start,
                olderThan: Timestamp(seconds: before)
            ) { n in
                guard n - said >= 10_000 else { return }
                said = n
                Output.line("purged \(n) \((ContinuousClock.now - start) / .seconds(1))")
            }
            Output.line("purged \(total) \((ContinuousClock.now - start) / .seconds(1)) done")
        }
    }
}

/// What a day's sending has done so far, shared by the batches in flight.
final class SendTally: Sendable {
    /// The next batch of the slice to send.
    let next = Atomic<Int>(0)
    let sent = Atomic<Int>(0)
    let requests = Atomic<Int>(0)
    let latencies = Mutex<[Double]>([])
}

/// The campus's timetable: a room for every badge at every moment of a teaching day, or none.
///
/// Rooms are two kiosks each; the first of every ten is a dining hall (the commons), the rest
/// classrooms. Badges are in cohorts, one a classroom: each hour from 08:00 every cohort has a
/// class in a classroom of its own (the cohorts rotate through the rooms from hour to hour and
/// day to day), but for one free hour a day, spent in a commons or away (half and half); classes
/// end at ten to the hour, and half the people spend the break in a commons, the rest in
/// corridors no kiosk hears; at 12:00 everyone lunches in a commons. A tenth of the badges are
/// away each day. Every badge is heard by both of its room's kiosks, one 30-second window each,
/// at a phase of its own: about 1,700 windows a badge a day, 15 million at 10,000 badges.
struct Timetable: Sendable {
    let badges: Int
    let rooms: Int
    let seed: UInt64

    /// Seconds of a batch (each kiosk sends its windows of five minutes at once).
    static let slice = 300.0
    static let uuid = "f7826da6-4fa2-4e98-8024-bc5b71e0893e"
    static let lunchHour = 4

    static func kiosk(_ k: Int) -> String { String(format: "kiosk-%03d", k) }
    static func device(_ b: Int) -> String { "\(uuid):\(1 + b / 65_536):\(b % 65_536)" }

    let classrooms: [Int]
    let commonsRooms: [Int]

    init(badges: Int, rooms: Int, seed: UInt64) {
        self.badges = badges
        self.rooms = rooms
        self.seed = seed
        classrooms = (0..<rooms).filter { !Self.isCommons($0) }
        commonsRooms = (0..<rooms).filter { Self.isCommons($0) }
    }

    /// The first room of every ten is a dining hall.
    static func isCommons(_ room: Int) -> Bool { room % 10 == 0 }

    struct Window: Sendable {
        var badge: Int
        /// Seconds after the day's midnight.
        var end: Double
        var distance: Double
        var rssi: Double
        var samples: Int
        var id: String
    }

    func slices(hours: Double) -> Int { Int((hours * 3600 / Self.slice).rounded(.up)) }

    func hash(_ values: Int...) -> UInt64 {
        var h = seed &+ 0x9E37_79B9_7F4A_7C15
        for v in values {
            h = (h ^ UInt64(bitPattern: Int64(v))) &* 0xBF58_476D_1CE4_E5B9
            h ^= h >> 31
            h = h &* 0x94D0_49BB_1331_11EB
            h ^= h >> 29
        }
        return h
    }

    func absent(_ badge: Int, day: Int) -> Bool { hash(1, badge, day) % 10 == 0 }

    /// The room badge `b` is in at `t` seconds after 08:00 on `day`, or nil (away, or in a
    /// corridor no kiosk hears).
    func room(_ b: Int, day: Int, at t: Double) -> Int? {
        guard t >= 0, !absent(b, day: day) else { return nil }
        let hour = Int(t / 3600)
        guard hour < 8 else { return nil }
        let minute = Int(t.truncatingRemainder(dividingBy: 3600) / 60)
        let inCommons = commonsRooms[Int(hash(2, b, day, hour) % UInt64(commonsRooms.count))]
        if hour == Self.lunchHour { return inCommons }
        let cohort = Int(hash(3, b) % UInt64(classrooms.count))
        // The free hour: one of the seven teaching hours.
        var free = Int(hash(4, cohort, day) % 7)
        if free >= Self.lunchHour { free += 1 }
        if hour == free || minute >= 50 { return hash(5, b, day, hour) % 2 == 0 ? inCommons : nil }
        let rotation = Int(hash(6, day, hour) % UInt64(classrooms.count))
        return classrooms[(cohort + rotation) % classrooms.count]
    }

    /// Every kiosk's windows that end in five-minute `slice` (from 08:00) of `day`, by kiosk.
    func windows(day: Int, slice: Int) -> [[Window]] {
        var out = [[Window]](repeating: [], count: 2 * rooms)
        let from = Double(slice) * Self.slice
        let to = from + Self.slice
        for b in 0..<badges where !absent(b, day: day) {
            let phase = Double(hash(7, b) % 30_000) / 1000
            var end = phase + 30 * ((from - phase) / 30).rounded(.up)
            if end < from { end += 30 }
            while end < to {
                if let r = room(b, day: day, at: end - 15) {
                    for k in [2 * r, 2 * r + 1] {
                        let h = hash(8, b, k, Int(end * 1000), day)
                        let distance = 0.5 + Double(h % 7000) / 1000
                        let rssi = -59 - 20 * log10(distance) + Double(Int((h >> 20) % 9) - 4)
                        out[k].append(
                            Window(
                                badge: b,
                                end: 8 * 3600 + end,
                                distance: (distance * 100).rounded() / 100,
                                rssi: rssi,
                                samples: 8 + Int((h >> 32) % 23),
                                id: Self.id(h)
                            )
                        )
                    }
                }
                end += 30
            }
        }
        return out
    }

    /// A 20-character id of letters and digits, as a kiosk's are (`DocumentID.random()`), but
    /// the same for the same window each run: a day sent again replaces itself.
    static func id(_ h: UInt64) -> String {
        var g = SplitMixID(seed: h)
        return g.id()
    }
}

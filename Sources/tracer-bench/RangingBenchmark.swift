import Foundation
import Logging
import TracerBadges
import TracerDaemon
import TracerRanging
import TracerSite
@_spi(Blocking) import TracerStore

/// `tracer-bench ranging`: adverts through the ranging pipeline, and the replay daemon into the store.
struct RangingBenchmark: Measuring {
    var directory: String
    var map: String
    var report: (String) -> Void

    init(directory: String, map: String, report: @escaping (String) -> Void) {
        self.directory = directory
        self.map = map
        self.report = report
    }

    static let badgeUUID = UUIDBytes("f7826da6-4fa2-4e98-8024-bc5b71e0893e")!
    static let t0 = 1_795_341_600.0

    /// `count` adverts from `devices` badges at 10 Hz each, with noisy RSSI.
    static func adverts(count: Int, devices: Int) -> [Advert] {
        var g = SplitMixID(seed: 3)
        return (0..<count).map { i in
            let device = i % devices
            var data: [UInt8] = [0x02, 0x15]
            withUnsafeBytes(of: badgeUUID.high.bigEndian) { data.append(contentsOf: $0) }
            withUnsafeBytes(of: badgeUUID.low.bigEndian) { data.append(contentsOf: $0) }
            data += [UInt8(device >> 8 & 0xFF) | 0x10, UInt8(device & 0xFF), 0, UInt8(device % 200), 0xC5]
            let rssi = -60 - device % 25 + Int(g.next() % 9) - 4
            return Advert(time: t0 + Double(i / devices) * 0.1, rssi: rssi, manufacturerData: [(76, data)])
        }
    }

    func run() async throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let site = try Site.load(file: map)
        try memory(site)  // first, while the process is small: the peak it reports is its own
        try pipeline(site)
        try await replay(site)
        filters()
    }

    func rate(_ n: Int, _ seconds: Double) -> String { "\(Int(Double(n) / seconds)) adverts/s" }

    // MARK: The pipeline on one core

    func pipeline(_ site: Site) throws {
        report("## Parse + attribute + filter + classify + window, one core, 2,000,000 adverts from 1,000 badges")
        let adverts = Self.adverts(count: 2_000_000, devices: 1000)
        var found = 0
        var parseOnly: [Double] = []
        var full: [Double] = []
        for _ in 0..<3 {
            parseOnly.append(
                time {
                    for a in adverts {
                        for (company, data) in a.manufacturerData {
                            if data.withUnsafeBytes({ IBeaconParser.parse(companyID: company, data: $0) }) != nil {
                                found += 1
                            }
                        }
                    }
                }
            )
            var ranger = try Ranger(site: site, mode: .gateway(anchor: "kiosk-lab"))
            var out: [InteractionSummary] = []
            out.reserveCapacity(100_000)
            full.append(
                time {
                    for a in adverts { ranger.add(a, into: &out) }
                    ranger.closeAll(into: &out)
                }
            )
            precondition(ranger.counts.attributed == adverts.count)
        }
        precondition(found == 3 * adverts.count)
        let best = full.min()!
        report("parse only: \(rate(adverts.count, parseOnly.min()!)) (best of 3)")
        report(
            "whole pipeline: \(rate(adverts.count, best)) (best of 3; parsing is \(Int(100 * parseOnly.min()! / best))% of it) "
                + verdict(Double(adverts.count) / best >= 2_000_000, "target ≥ 2M adverts/s")
        )
        try rotating(site, staticSeconds: best, count: adverts.count)
    }

    /// The same pipeline with rotating badges: 1,000 badges' ids across a change of epoch, each
    /// advert resolved through the kiosk's table, the table taken from the resolver at each batch
    /// of 256 as the daemon does (both epochs' tables built beforehand, as a live daemon builds the
    /// next a minute ahead).
    func rotating(_ site: Site, staticSeconds: Double, count: Int) throws {
        var site = site
        let uuid = UUIDBytes("5a1e0b5c-7e2d-4c1a-9b8e-3f6d2a9c4e71")!
        site.badgeUUID = uuid
        let badges = (0..<1000).map {
            BadgeKey(
                serial: "B\($0)",
                number: UInt32($0),
                key: RotatingID.badgeKey(siteKey: Array(repeating: 1, count: 32), serial: "B\($0)")
            )
        }
        let resolver = BadgeResolver(.keys(badges, version: 1))
        // 200 s of adverts with the change of epoch in the middle.
        let boundary = Double(RotatingID.epochStart(Self.t0)) + 1024
        var g = SplitMixID(seed: 3)
        var ids: [UInt32: [(UInt16, UInt16)]] = [:]
        for epoch in [UInt32(boundary) - 1024, UInt32(boundary)] {
            ids[epoch] = badges.map { RotatingID.id(key: $0.key, epochStart: epoch) }
            _ = resolver.table(at: Double(epoch))
        }
        let adverts: [Advert] = (0..<count).map { i in
            let device = i % badges.count
            let t = boundary - 100 + Double(i / badges.count) * 0.1
            let (major, minor) = ids[RotatingID.epochStart(t)]![device]
            var data: [UInt8] = [0x02, 0x15]
            withUnsafeBytes(of: uuid.high.bigEndian) { data.append(contentsOf: $0) }
            withUnsafeBytes(of: uuid.low.bigEndian) { data.append(contentsOf: $0) }
            data += [UInt8(major >> 8), UInt8(major & 0xFF), UInt8(minor >> 8), UInt8(minor & 0xFF), 0xC5]
            let rssi = -60 - device % 25 + Int(g.next() % 9) - 4
            return Advert(time: t, rssi: rssi, manufacturerData: [(76, data)])
        }
        var full: [Double] = []
        for _ in 0..<3 {
            var ranger = try Ranger(site: site, mode: .gateway(anchor: "kiosk-lab"))
            var out: [InteractionSummary] = []
            out.reserveCapacity(100_000)
            full.append(
                time {
                    var start = 0
                    while start < adverts.count {
                        let end = min(start + 256, adverts.count)
                        if RotatingID.epochStart(adverts[start].time) != ranger.badges?.epochStart {
                            ranger.badges = resolver.table(at: adverts[start].time)
                        }
                        for a in adverts[start..<end] { ranger.add(a, into: &out) }
                        start = end
                    }
                    ranger.closeAll(into: &out)
                }
            )
            precondition(ranger.counts.attributed == adverts.count, "\(ranger.counts)")
        }
        let best = full.min()!
        let ratio = staticSeconds / best
        report(
            "whole pipeline, rotating badges: \(rate(adverts.count, best)) (best of 3), "
                + String(format: "%.2f", ratio) + "× the static ids' " + verdict(ratio >= 0.9, "target ≥ 0.9×")
        )
    }

    // MARK: The replay daemon

    func replay(_ site: Site) async throws {
        report("## The replay daemon end to end into the store (gateway mode, 1,000,000 adverts, 500 badges)")
        let file = (directory as NSString).appendingPathComponent("replay.jsonl")
        var text = ""
        text.reserveCapacity(130_000_000)
        for a in Self.adverts(count: 1_000_000, devices: 500) {
            text +=
                #"{"t": \#(a.time), "address": "C3:11:9A:22:07:5E", "rssi": \#(a.rssi), "manufacturerData": {"76": "\#(Hex.encode(a.manufacturerData[0].data))"}}"#
                + "\n"
        }
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        text = ""

        // Reading and parsing the file alone: the floor under the daemon.
        let readOnly = try await timeAsync {
            var n = 0
            for try await batch in try ReplaySource(path: file).batches() { n += batch.count }
            precondition(n == 1_000_000)
        }
        report("read + parse the replay file only: \(rate(1_000_000, readOnly))")

        let storePath = (directory as NSString).appendingPathComponent("replay.sqlite")
        let store = try DocumentStore(path: storePath, logger: quiet)
        let daemon = Daemon(
            site: site,
            mode: .gateway(anchor: "kiosk-lab"),
            store: store,
            source: try ReplaySource(path: file),
            logger: quiet
        )
        let result = try await daemon.run()
        report(
            "daemon: \(rate(result.counts.adverts, result.seconds)), \(result.written) interaction documents written "
                + "(the daemon takes \(String(format: "%.2f", result.seconds / readOnly))× the read-only time) "
                + verdict(Double(result.counts.adverts) / result.seconds >= 50_000, "target ≥ 50k adverts/s")
        )
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: storePath + suffix) }
        try? FileManager.default.removeItem(atPath: file)
    }

    func timeAsync(_ body: () async throws -> Void) async rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try await body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    // MARK: Memory

    func memory(_ site: Site) throws {
        report("## Memory with 10,000 badges in range (peak RSS of this process)")
        let before = peakRSS()
        var ranger = try Ranger(site: site, mode: .gateway(anchor: "kiosk-lab"))
        var out: [InteractionSummary] = []
        var peakOpen = 0
        // Ten minutes of 10,000 badges at 1 Hz; the summaries are dropped as a daemon writes them.
        for second in 0..<600 {
            for device in 0..<10_000 {
                var data: [UInt8] = [0x02, 0x15]
                withUnsafeBytes(of: Self.badgeUUID.high.bigEndian) { data.append(contentsOf: $0) }
                withUnsafeBytes(of: Self.badgeUUID.low.bigEndian) { data.append(contentsOf: $0) }
                data += [UInt8(device >> 8), UInt8(device & 0xFF), 0, 1, 0xC5]
                ranger.add(
                    Advert(
                        time: Self.t0 + Double(second) + Double(device) / 10_000,
                        rssi: -70,
                        manufacturerData: [(76, data)]
                    ),
                    into: &out
                )
            }
            out.removeAll(keepingCapacity: true)
            peakOpen = max(peakOpen, ranger.windows.openCount)
            if second == 59 { report("after 1 minute: peak RSS \(peakRSS() / 1024) MiB") }
        }
        report(
            "after 10 minutes: peak RSS \(peakRSS() / 1024) MiB (\((peakRSS() - before) / 1024) MiB over the process before), "
                + "\(peakOpen) pairs tracked at most"
        )
    }

    func peakRSS() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_maxrss  // KiB on Linux
    }

    // MARK: Filters

    /// A badge steps from 2 m to 5 m away: how long each filter takes to follow, and how much it
    /// wobbles once settled, at 1 Hz and 10 Hz with 4 dB noise.
    func filters() {
        report("## RSSI filters: a step from -65 to -73 dBm (2 m to 5 m), 4 dB noise, 200 traces each")
        for hz in [1.0, 10.0] {
            for kind in RSSIFilterKind.allCases {
                var settings = RSSIFilterSettings()
                settings.kind = kind
                settings.coefficient = hz >= 10 ? 0.25 : 0.1
                var lags: [Double] = []
                var spreads: [Double] = []
                var g = SplitMixID(seed: 8)
                for _ in 0..<200 {
                    var f = RSSIFilter(settings)
                    var settled: [Double] = []
                    var lag = Double.nan
                    let n = Int(120 * hz)
                    for k in 0..<n {
                        let t = Double(k) / hz
                        let truth = t < 60 ? -65.0 : -73.0
                        let u1 = max(Double(g.next() % 1_000_000) / 1_000_000, 1e-9)
                        let u2 = Double(g.next() % 1_000_000) / 1_000_000
                        let v = f.add(truth + 4 * sqrt(-2 * log(u1)) * cos(2 * .pi * u2), at: t)
                        if t >= 60, lag.isNaN, v <= -72.2 { lag = t - 60 }  // 90% of the step
                        if t >= 30, t < 60 { settled.append(v) }
                    }
                    lags.append(lag.isNaN ? 60 : lag)
                    let mean = settled.reduce(0, +) / Double(settled.count)
                    spreads.append(sqrt(settled.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(settled.count)))
                }
                lags.sort()
                spreads.sort()
                report(
                    String(
                        format: "%4.0f Hz  %-13@ lag to 90%%: median %5.1f s   spread when settled: median %.2f dB",
                        hz,
                        kind.rawValue,
                        lags[lags.count / 2],
                        spreads[spreads.count / 2]
                    )
                )
            }
        }
    }

    let quiet = Logger(label: "tracer.bench", factory: { _ in SwiftLogNoOpLogHandler() })
}

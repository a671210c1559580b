import ArgumentParser
import Foundation
import TracerBadges
import TracerModel
import TracerSimulation
import TracerSite
@_spi(Blocking) import TracerStore

/// `tracer simulate`: people moving about a site, the replays its kiosks would record, and the truth.
struct SimulateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Simulate people with badges moving about a site: one replay per kiosk, and the ground truth.",
        discussion: """
            Writes OUT/replays/KIOSK.jsonl (docs/design.md's replay format, for `tracer daemon --source \
            replay:FILE`), OUT/truth/positions.jsonl (where everyone was, when), OUT/truth/pairs.jsonl \
            (who was within the exposure radius of whom, in which room, within the window), \
            OUT/truth/people.jsonl and OUT/manifest.json. The same seed and start give the same files.

            With --random-site SEED it draws a site nobody tuned for (rooms 4–30 m wide along a \
            corridor, 1–3 kiosks a room, 60–120 people for 2–3 hours) and its radio (each kiosk's \
            receiver off by up to ±5 dB and losing 10–40%, badges off by up to ±6 dB every 1–3 s, \
            noise σ 4–6 dB half drifting over 10 s, walls 3–8 dB, the body 3–10 dB), writes its map \
            to OUT/map.yaml and simulates it; the radio's truth is in OUT/manifest.json.
            """
    )

    @Option(help: "The site's BeaconMap file (or --random-site).") var map: String?
    @Option(
        help: ArgumentHelp(
            "Draw a site nobody tuned for (rooms along a corridor, 1–3 kiosks a room, the radio as published measurements find it): SEED picks it. Its map is written to OUT/map.yaml; the options below replace what it drew.",
            valueName: "SEED"
        )
    )
    var randomSite: UInt64?
    @Option(help: "People wearing badges (with --random-site, default: as drawn, 60–120).") var people: Int?
    @Option(help: "Hours to simulate (with --random-site, default: as drawn, 2–3).") var hours: Double?
    @Option(help: "The random seed (default: 1; with --random-site, the site's).") var seed: UInt64?
    @Option(help: "The directory to write into (created if missing).") var out: String
    @Option(
        help:
            "When the simulation starts: 2026-11-23 (08:00 UTC that day) or 2026-11-23T08:00:00Z (default: yesterday, 08:00 UTC: recent enough for the 14-day rules)."
    )
    var start: String?
    @Option(help: "RSSI noise σ in dB (default: 4).") var noise: Double?
    @Option(help: "Share of adverts lost, 0 to below 1 (default: 0.2).") var loss: Double?
    @Option(help: "Body shadowing, dB lost with the wearer's back to the kiosk (default: 6).") var shadow: Double?
    @Option(help: "dB lost through each wall (default: 10).") var wallLoss: Double?
    @Option(help: "The path-loss exponent of the simulated radio (default: the map's).") var exponent: Double?
    @Option(
        help: ArgumentHelp(
            "A kiosk whose receiver reads off: KIOSK=DB is added to all it hears (-6: 6 dB low). Repeatable.",
            valueName: "kiosk=dB"
        )
    )
    var receiverError: [String] = []
    @Option(
        help: ArgumentHelp(
            "A kiosk re-mounted during the run: KIOSK@MINUTES=DB adds DB, from MINUTES after the start, to all it hears and to its own adverts (-6: turned into its enclosure). Repeatable.",
            valueName: "kiosk@minutes=dB"
        )
    )
    var remount: [String] = []
    @Option(
        help: ArgumentHelp(
            "Each badge's transmitter off by up to ±DB, drawn evenly (with --random-site, default: 6; 0: every badge sends what it claims).",
            valueName: "dB"
        )
    )
    var badgeOffset: Double?
    @Option(
        help: ArgumentHelp(
            "With --random-site, where each room's kiosks are mounted: drawn (on walls drawn at random, the default), outside (all on the room's outside wall, spread along it), centre (on its ceiling, spread along its middle) or off-shared-walls (as drawn, but those on a wall shared with the next room moved to its middle); everything else as drawn.",
            valueName: "drawn|outside|centre|off-shared-walls"
        )
    )
    var kiosksOn: String?
    @Flag(
        help: """
            Also write what each person's phone hears of the map's fixed beacons (scanner mode), \
            one replay per person in phones/, for tracer daemon --device.
            """
    )
    var phones = false
    @Option(
        help: ArgumentHelp(
            "People wear the rotating badges issued in this store (tracer badge issue), person i badge i; the map needs settings: badgeUUID.",
            valueName: "STORE"
        )
    )
    var badgesFrom: String?
    @Option(help: "The radius of the true pairs, metres (default: the map's exposureRadius).") var radius: Double?
    @Option(help: "The window of the true pairs, minutes (default: the map's exposureWindow).") var window: Double?

    func run() throws {
        let start = self.start ?? Self.yesterday()
        guard let t0 = Self.parseStart(start) else {
            throw ValidationError("--start takes a date (2026-11-23) or a time (2026-11-23T08:00:00Z), not '\(start)'")
        }
        let site: Site
        let mapPath: String
        var p: SimulationParameters
        // A random site's map, written once the request is known to be good.
        var drawnMap: String?
        if let randomSite {
            guard map == nil else {
                throw ValidationError("--map and --random-site: give one (a random site writes its own map)")
            }
            let file = (out as NSString).appendingPathComponent("map.yaml")
            let placement = try kiosksOn.map { text in
                guard let p = RandomSite.Placement(rawValue: text) else {
                    let names = RandomSite.Placement.allCases.map(\.rawValue)
                    let listed = names.dropLast().joined(separator: ", ") + " or " + names.last!
                    throw ValidationError("--kiosks-on takes \(listed), not '\(text)'")
                }
                return p
            }
            let drawn = try RandomSite(seed: randomSite, start: t0, file: file, placement: placement ?? .drawn)
            drawnMap = drawn.yaml
            site = drawn.site
            mapPath = file
            p = drawn.parameters
            if let people { p.people = people }
            if let hours { p.hours = hours }
            if let seed { p.seed = seed }
        } else {
            guard let map else { throw ValidationError("give --map FILE, or --random-site SEED") }
            guard kiosksOn == nil else {
                throw ValidationError("--kiosks-on is for --random-site (a map places its own kiosks)")
            }
            guard let people else { throw ValidationError("--people is needed with --map") }
            guard let hours else { throw ValidationError("--hours is needed with --map") }
            site = try Site.load(file: map)
            mapPath = map
            p = SimulationParameters(people: people, hours: hours, seed: seed ?? 1, start: t0)
            // Kiosks the map gives an identity advertise (`tracer advertise` beside the daemon).
            if site.anchors.contains(where: { $0.kind == .kiosk && $0.identity != nil }) { p.kioskInterval = 2 }
        }
        if let noise { p.noise = noise }
        if let loss {
            // Every kiosk the same, then: a random site's own shares go.
            p.loss = loss
            p.kioskLoss = [:]
        }
        if let shadow { p.shadow = shadow }
        if let wallLoss { p.wallLoss = wallLoss }
        if let exponent { p.exponent = exponent }
        if let badgeOffset {
            guard (0...20).contains(badgeOffset) else {
                throw ValidationError("--badge-offset takes dB from 0 to 20, not \(badgeOffset)")
            }
            p.badgeOffsetBound = badgeOffset
        }
        p.phones = phones
        for text in receiverError {
            let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let db = Double(parts[1]), abs(db) <= 40 else {
                throw ValidationError(
                    "--receiver-error takes KIOSK=DB with DB from -40 to 40, like kiosk-lecture=-6; not '\(text)'"
                )
            }
            guard site.anchor(parts[0])?.kind == .kiosk else {
                throw ValidationError("--receiver-error: \(site.file) has no kiosk '\(parts[0])'")
            }
            // One antenna and one mounting: what it sends moves with what it hears (a random
            // site's kiosk keeps its chip's own difference).
            let chip = (p.transmitErrors[parts[0]] ?? 0) - (p.receiverErrors[parts[0]] ?? 0)
            p.receiverErrors[parts[0]] = db
            p.transmitErrors[parts[0]] = db + chip
        }
        for text in remount {
            let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
            let head = parts.first?.split(separator: "@", maxSplits: 1).map(String.init) ?? []
            guard parts.count == 2, head.count == 2, let minutes = Double(head[1]), minutes >= 0,
                let db = Double(parts[1]), abs(db) <= 40
            else {
                throw ValidationError(
                    "--remount takes KIOSK@MINUTES=DB with DB from -40 to 40, like kiosk-2@60=-6; not '\(text)'"
                )
            }
            guard site.anchor(head[0])?.kind == .kiosk else {
                throw ValidationError("--remount: \(site.file) has no kiosk '\(head[0])'")
            }
            p.remounts[head[0]] = .init(at: p.start + minutes * 60, dB: db)
        }
        var badges: [BadgeKey]?
        if let badgesFrom {
            guard site.badgeUUID != nil else {
                throw ValidationError("--badges-from: \(mapPath) has no rotating badges (settings: badgeUUID)")
            }
            guard DocumentStore.isPostgres(badgesFrom) || FileManager.default.fileExists(atPath: badgesFrom) else {
                throw ValidationError("--badges-from \(badgesFrom): no store there")
            }
            guard let material = try DocumentStore(path: badgesFrom).read({ try BadgeRegistry.material(in: $0) }) else {
                throw ValidationError(
                    "--badges-from \(badgesFrom): no badges issued there (tracer badge issue --count \(p.people))"
                )
            }
            badges = material.badges
        }
        let began = Date()
        let simulation = try Simulation(site: site, parameters: p, badges: badges)
        if let drawnMap {
            do {
                try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
                try drawnMap.write(toFile: mapPath, atomically: true, encoding: .utf8)
            } catch {
                throw ValidationError("--out \(out): cannot write map.yaml there (\(error.localizedDescription))")
            }
        }
        let radius = radius ?? site.exposure.radius
        let window = (window ?? site.exposure.windowMinutes) * 60
        let written = try simulation.write(
            to: out,
            mapPath: URL(fileURLWithPath: mapPath).standardizedFileURL.path,
            radius: radius,
            window: window
        ) { done, total, adverts in
            Output.progress("simulate: replays", done, total)
            if !Output.stderrIsTerminal {
                Output.error("simulate: \(done)/\(total) replays, \(adverts) adverts")
            }
        }
        Output.endProgress()
        let seconds = Date().timeIntervalSince(began)
        Output.line(
            "simulated \(p.people) people for \(Self.number(p.hours)) h at \(site.name) (seed \(p.seed), σ \(Self.number(p.noise)) dB, "
                + Self.lossText(p) + ") in \(String(format: "%.1f", seconds)) s"
        )
        Output.line(
            written.phones > 0
                ? "  \(written.replays) kiosks' replays and \(written.phones) phones', \(written.adverts) adverts: "
                    + "\(out)/replays/, \(out)/phones/"
                : "  \(written.replays) replays, \(written.adverts) adverts: \(out)/replays/"
        )
        Output.line(
            "  truth: \(written.segments) position segments, "
                + "\(written.pairs) co-location episodes (≤ \(Self.number(radius)) m within \(Self.number(window / 60)) min): \(out)/truth/"
        )
    }

    /// "20% lost", or the range of the kiosks' own shares.
    static func lossText(_ p: SimulationParameters) -> String {
        let shares = p.kioskLoss.values
        guard let lo = shares.min(), let hi = shares.max() else { return "\(Int((p.loss * 100).rounded()))% lost" }
        return "\(Int((lo * 100).rounded()))–\(Int((hi * 100).rounded()))% lost by kiosk"
    }

    static func number(_ x: Double) -> String {
        x == x.rounded() ? String(Int(x)) : String(x)
    }

    /// Yesterday's date in UTC (2026-11-25).
    static func yesterday(now: Date = Date()) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withFullDate]
        return f.string(from: now.addingTimeInterval(-86_400))
    }

    static func parseStart(_ text: String) -> Double? {
        guard let t = Timestamp(parsing: text) else { return nil }
        // A bare date starts at 08:00 UTC, a working day's morning.
        let bareDate = text.utf8.count == 10 && text.contains("-")
        return t.seconds + (bareDate ? 8 * 3600 : 0)
    }
}

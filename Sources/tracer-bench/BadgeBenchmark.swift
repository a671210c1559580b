import Crypto
import Foundation
import TracerBadges
import TracerRanging
import TracerSimulation
import TracerSite

/// Rotating badge ids at the kiosk: building the table of every badge's ids for five epochs (off
/// the advert path), its memory, and one advert's resolution, at 10,000 and 100,000 badges.
struct BadgeBenchmark: Measuring {
    var sizes = [10_000, 100_000]
    var lookups = 5_000_000
    var report: (String) -> Void

    /// The process's resident memory, bytes (/proc/self/statm).
    static func resident() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
            let pages = text.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    func run() {
        let siteKey = (0..<32).map { UInt8($0) }
        let now = 1_795_700_000.0
        for n in sizes {
            var badges: [BadgeKey] = []
            let derive = time {
                badges = (0..<n).map {
                    BadgeKey(
                        serial: "B\($0)",
                        number: UInt32($0),
                        key: RotatingID.badgeKey(siteKey: siteKey, serial: "B\($0)")
                    )
                }
            }
            let before = Self.resident()
            var table: ResolutionTable?
            let build = time { table = ResolutionTable(badges: badges, now: now) }
            guard let table else { return }
            let memory = Self.resident() - before
            // Adverts as a kiosk hears them: nine in ten from badges of the site (their current
            // epoch), one in ten from anything else.
            let start = RotatingID.epochStart(now)
            var heard: [(UInt16, UInt16)] = (0..<min(n, 20_000)).map { i in
                RotatingID.id(key: badges[i].key, epochStart: start)
            }
            for i in 0..<heard.count / 9 { heard.append((UInt16(truncatingIfNeeded: i * 7919), 65_535)) }
            var resolved = 0
            let seconds = time {
                for i in 0..<lookups {
                    let (major, minor) = heard[i % heard.count]
                    // The advert path's lookup (`Ranger` takes the badge's index, its id made once).
                    if let i = table.index(major: major, minor: minor), i >= 0 { resolved += 1 }
                }
            }
            let ns = seconds / Double(lookups) * 1e9
            report(
                "\(n) badges: keys derived in \(format(derive)) s; table of \(table.count) ids built in \(format(build)) s, "
                    + "\(memory / 1024) KiB (\(table.count > 0 ? memory / table.count : 0) bytes an id); "
                    + "one advert resolved in \(format(ns)) ns (\(resolved) of \(lookups) to a badge) "
                    + verdict(ns <= 1000, "≤ 1 µs")
            )
        }
    }

    /// A listener without keys at every kiosk's place for a simulated day (seed 11): how often it
    /// links a badge's id to its next (same place, next epoch, nearest strength), against chance
    /// and against static ids.
    func linkability(map: String, people: Int, hours: Double) throws {
        var site = try Site.load(file: map)
        site.badgeUUID = UUIDBytes("5a1e0b5c-7e2d-4c1a-9b8e-3f6d2a9c4e71")!
        let badges = (0..<people).map {
            BadgeKey(
                serial: "B\($0)",
                number: UInt32($0),
                key: RotatingID.badgeKey(siteKey: Array(repeating: 2, count: 32), serial: "B\($0)")
            )
        }
        let simulation = try Simulation(
            site: site,
            parameters: SimulationParameters(people: people, hours: hours, seed: 11, start: 1_795_420_800),
            badges: badges
        )
        var rotating = Linkability()
        var fixed = Linkability()
        let seconds = time {
            for kiosk in simulation.kiosks {
                rotating.add(
                    Linkability.attack(simulation, at: kiosk, bits: site.badgeEpochBits) { person, epoch in
                        let id = RotatingID.id(key: badges[person].key, epochStart: epoch)
                        return UInt32(id.major) << 16 | UInt32(id.minor)
                    }
                )
                fixed.add(
                    Linkability.attack(simulation, at: kiosk, bits: site.badgeEpochBits) { person, _ in UInt32(person) }
                )
            }
        }
        func percent(_ x: Double) -> String { String(format: "%.1f%%", 100 * x) }
        report(
            "a listener at each of \(simulation.kiosks.count) kiosks' places, \(people) people, \(format(hours)) h (seed 11): "
                + "\(rotating.linkable) changes of id with the badge heard on both sides; linked right "
                + "\(percent(rotating.rate)) with rotating ids, \(percent(rotating.chanceRate)) by chance, "
                + "\(percent(fixed.rate)) with static ids (\(format(seconds)) s)"
        )
    }
}

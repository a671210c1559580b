import Foundation
import Testing
import TracerBadges
import TracerRanging
import TracerSite

@testable import TracerSimulation

/// What a listener without keys links of rotating ids, on a simulated morning: static ids are
/// linked every time; rotating ids far less often, and the test says how often against chance.
@Suite struct LinkabilityTests {
    static func badges(_ n: Int) -> [BadgeKey] {
        (0..<n).map { i in
            BadgeKey(
                serial: "b\(i)",
                number: UInt32(i + 1),
                key: RotatingID.badgeKey(siteKey: Array(repeating: 7, count: 32), serial: "b\(i)")
            )
        }
    }

    /// Every kiosk's place as a listener's: (rotating, static).
    static func attack(people: Int, hours: Double, seed: UInt64) throws -> (Linkability, Linkability) {
        var site = SimulationTests.site
        site.badgeUUID = UUIDBytes("5a1e0b5c-7e2d-4c1a-9b8e-3f6d2a9c4e71")!
        let badges = badges(people)
        let simulation = try Simulation(
            site: site,
            parameters: SimulationParameters(people: people, hours: hours, seed: seed, start: SimulationTests.start),
            badges: badges
        )
        var rotating = Linkability()
        var fixed = Linkability()
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
        return (rotating, fixed)
    }

    @Test func aListenerLinksStaticIDsAlwaysAndRotatingOnesFarLessOften() throws {
        let (rotating, fixed) = try Self.attack(people: 40, hours: 3, seed: 5)
        #expect(fixed.linkable > 50 && fixed.rate == 1, "\(fixed)")
        #expect(rotating.linkable == fixed.linkable)
        #expect(rotating.rate < 0.9, "\(rotating.rate) against chance \(rotating.chanceRate)")
        #expect(rotating.chanceRate < rotating.rate, "\(rotating.rate) against chance \(rotating.chanceRate)")
        print(
            "linkability: \(rotating.linkable) ids: rotating \(rotating.rate), chance \(rotating.chanceRate), static \(fixed.rate)"
        )
    }
}

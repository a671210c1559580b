import Foundation
import Testing

@testable import TracerRanging
@testable import TracerSite

@Suite struct SiteTests {
    static var examplePath: String {
        // Tests/TracerRangingTests/SiteTests.swift → the repository root.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return root.appendingPathComponent("BeaconMap/example-campus.yaml").path
    }

    /// docs/person-page.md's guidance, pasted under the example campus's settings as the page
    /// tells a site to, is taken (`map publish` failed on it: an unquoted colon in its text).
    @Test func theDocumentedGuidanceIsAMapsSetting() throws {
        let root = URL(fileURLWithPath: Self.examplePath).deletingLastPathComponent().deletingLastPathComponent()
        let doc = try String(contentsOf: root.appendingPathComponent("docs/person-page.md"), encoding: .utf8)
        let blocks = doc.components(separatedBy: "```yaml\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
        let example = try #require(blocks.first { $0.contains("guidance:") }, "no guidance example")
        let pasted = example.split(separator: "\n").drop { $0 != "settings:" }.dropFirst().joined(separator: "\n")
        let map = try String(contentsOfFile: Self.examplePath, encoding: .utf8)
        let site = try Site.parse(
            map.replacingOccurrences(of: "\nsettings:\n", with: "\nsettings:\n\(pasted)\n"),
            file: "t.yaml"
        )
        #expect(site.guidance?.text.contains("514 555 0100") == true, "\(String(describing: site.guidance))")
        #expect(site.guidance?.link == "https://example.org/advice")
    }

    @Test func theExampleSiteLoads() throws {
        let site = try Site.load(file: Self.examplePath)
        #expect(site.name == "Example Campus")
        #expect(site.rooms.count >= 12 && Set(site.rooms.compactMap(\.building)).count == 2)
        #expect(site.anchor("kiosk-lab")?.kind == .kiosk)
        let door = try #require(site.anchor("b-lab-door"))
        #expect(door.measuredPower == -59 && door.identity?.minor == 7)
        let advert = IBeacon(
            uuid: UUIDBytes("e2c56db5-dffb-48d2-b060-d0f5a71096e0")!,
            major: 2,
            minor: 7,
            measuredPower: -60
        )
        #expect(site.fixedBeacon(for: advert)?.key == "b-lab-door")
        #expect(
            site.isPersonalDevice(
                IBeacon(
                    uuid: UUIDBytes("f7826da6-4fa2-4e98-8024-bc5b71e0893e")!,
                    major: 1,
                    minor: 1,
                    measuredPower: -59
                )
            )
        )
        #expect(!site.isPersonalDevice(advert))
    }

    static let good = """
        site: Test
        deviceUUIDs: [f7826da6-4fa2-4e98-8024-bc5b71e0893e]
        rooms:
          - {key: lab, name: Lab, outline: [[0, 0], [10, 0], [10, 10], [0, 10]]}
        anchors:
          - {key: kiosk-lab, kind: kiosk, room: lab, position: [5, 5]}
          - {key: b1, kind: beacon, room: lab, position: [0, 5], uuid: e2c56db5-dffb-48d2-b060-d0f5a71096e0, major: 2, minor: 7}
        settings: {filter: arma, armaCoefficient: 0.25, pathLossExponent: 2.5, near: 2.5, exposureRadius: 4, separation: possible}
        """

    @Test func settingsApply() throws {
        let site = try Site.parse(Self.good, file: "t.yaml")
        #expect(site.ranging.filter.kind == .arma && site.ranging.filter.coefficient == 0.25)
        #expect(site.ranging.model == .logDistance(exponent: 2.5))
        #expect(site.ranging.thresholds.near == 2.5)
        #expect(site.exposure.radius == 4 && site.exposure.separation == "possible")
        #expect(site.exposure.windowMinutes == 5 && site.exposure.lookbackDays == 14)
        // Without settings: the geometric rule from a 0.3 chance; rooms are for work unless told.
        let plain = try Site.parse(
            Self.good.replacingOccurrences(of: "name: Lab,", with: "name: Lab, use: teaching,")
                .split(separator: "\n").filter { !$0.hasPrefix("settings:") }.joined(separator: "\n"),
            file: "t.yaml"
        )
        #expect(
            plain.exposure.separation == "geometric" && plain.exposure.likelihood == 0.3 && plain.exposure.positions
        )
        #expect(plain.rooms[0].use == .teaching && site.rooms[0].use == .work)
        // Walls: what positions and rooms assume each costs, plasterboard's unless told.
        #expect(plain.exposure.wallLoss == 5)
        let concrete = try Site.parse(
            Self.good.replacingOccurrences(of: "separation: possible}", with: "separation: possible, wallLoss: 12}"),
            file: "t.yaml"
        )
        #expect(concrete.exposure.wallLoss == 12)
        // The pair decision's threshold: 0.15 unless the map says.
        #expect(plain.exposure.chance == 0.15)
        let strict = try Site.parse(
            Self.good.replacingOccurrences(
                of: "separation: possible}",
                with: "separation: possible, exposureChance: 0.5}"
            ),
            file: "t.yaml"
        )
        #expect(strict.exposure.chance == 0.5)
        // The person's page's guidance: the site's words and link, when it gives them.
        #expect(site.guidance == nil)
        let guided = try Site.parse(
            Self.good.replacingOccurrences(
                of: "separation: possible}",
                with: "separation: possible, guidance: {text: 'Stay home <b>now</b>', link: 'https://x.org/a'}}"
            ),
            file: "t.yaml"
        )
        #expect(guided.guidance == Guidance(text: "Stay home <b>now</b>", link: "https://x.org/a"))
    }

    static let broken: [(String, String, String)] = [
        (
            "room: lab, position: [5, 5]}", "room: attic, position: [5, 5]}",
            "t.yaml:6: anchor 'kiosk-lab': unknown room 'attic'"
        ),
        ("key: b1,", "key: kiosk-lab,", "t.yaml:7: duplicate anchor key 'kiosk-lab' (first on line 6)"),
        (
            "uuid: e2c56db5-dffb", "uuid: e2c56db5-xxxx",
            "t.yaml:7: beacon 'b1': uuid 'e2c56db5-xxxx-48d2-b060-d0f5a71096e0' is not a UUID"
        ),
        (
            "position: [5, 5]", "position: [15, 5]",
            "t.yaml:6: anchor 'kiosk-lab': position [15.0, 5.0] is outside room 'lab'"
        ),
        ("major: 2,", "major: 70000,", "t.yaml:7: beacon 'b1': major must be from 0 to 65535, not 70000"),
        ("kind: kiosk", "kind: kiosque", "t.yaml:6: anchor 'kiosk-lab': kind must be kiosk or beacon, not 'kiosque'"),
        ("filter: arma", "filter: median", "t.yaml:8: settings: filter must be one of trimmed-mean, arma, kalman"),
        ("name: Lab,", "name: Lab, colour: red,", "t.yaml:4: a room: unknown field 'colour'"),
        (
            "name: Lab,", "name: Lab, use: attic,",
            "t.yaml:4: room 'lab': use must be one of teaching, meeting, work, dining, circulation, entrance, care, not 'attic'"
        ),
        (
            "exposureRadius: 4", "exposureRadius: 4, separationLikelihood: 2",
            "t.yaml:8: settings: separationLikelihood must be from 0.01 to 1.0, not 2.0"
        ),
        (
            "separation: possible", "separation: possible, exposureChance: 0",
            "t.yaml:8: settings: exposureChance must be from 0.01 to 1.0, not 0.0"
        ),
        (
            "separation: possible", "separation: possible, wallLoss: -3",
            "t.yaml:8: settings: wallLoss must be from 0.0 to 30.0, not -3.0"
        ),
        (
            "separation: possible", "separation: maybe",
            "t.yaml:8: settings: separation must be sum, possible or geometric, not 'maybe'"
        ),
        (
            "separation: possible", "separation: possible, positions: maybe",
            "t.yaml:8: settings: positions must be on or off, not 'maybe'"
        ),
        (
            "exposureRadius: 4", "exposureRadius: 400",
            "t.yaml:8: settings: exposureRadius must be from 0.5 to 50.0, not 400.0"
        ),
        ("rooms:", "rooms: [", "t.yaml:"),
        (
            "separation: possible}", "separation: possible, guidance: {text: Stay home, link: ftp://x}}",
            "t.yaml:8: settings: guidance: link must be an http:// or https:// address, not 'ftp://x'"
        ),
        (
            "separation: possible}", "separation: possible, guidance: {link: https://x.org}}",
            "t.yaml:8: settings: guidance: text is missing"
        ),
        (
            "separation: possible}", "separation: possible, guidance: {text: a, colour: red}}",
            "t.yaml:8: settings: guidance: unknown field 'colour'"
        ),
        (
            "separation: possible}", "separation: possible, badgeUUID: f7826da6-4fa2-4e98-8024-bc5b71e0893e}",
            "t.yaml:8: settings: badgeUUID f7826da6-4fa2-4e98-8024-bc5b71e0893e is also in deviceUUIDs"
        ),
        (
            "separation: possible}", "separation: possible, badgeUUID: e2c56db5-dffb-48d2-b060-d0f5a71096e0}",
            "t.yaml:8: settings: badgeUUID e2c56db5-dffb-48d2-b060-d0f5a71096e0 is also fixed beacon b1's"
        ),
        (
            "separation: possible}", "separation: possible, badgeEpochBits: 12}",
            "t.yaml:8: settings: badgeEpochBits goes with badgeUUID"
        ),
        (
            "separation: possible}",
            "separation: possible, badgeUUID: 5a1e0b5c-7e2d-4c1a-9b8e-3f6d2a9c4e71, badgeEpochBits: 30}",
            "t.yaml:8: settings: badgeEpochBits must be from 6.0 to 16.0, not 30.0"
        ),
        (
            "separation: possible}",
            "separation: possible, badgeUUID: 5a1e0b5c-7e2d-4c1a-9b8e-3f6d2a9c4e71, badgeEpochBits: 10.5}",
            "t.yaml:8: settings: badgeEpochBits takes a whole number"
        ),
        (
            "separation: possible}", "separation: possible, lookbackDays: 21}",
            "t.yaml:8: settings: lookbackDays 21 looks back further than retentionDays 14 keeps: lower lookbackDays or raise retentionDays"
        ),
        (
            "separation: possible}", "separation: possible, retentionDays: 7}",
            "t.yaml:8: settings: lookbackDays 14 (the default) looks back further than retentionDays 7 keeps: lower lookbackDays or raise retentionDays"
        ),
    ]

    @Test func rotatingBadgesAreASetting() throws {
        let site = try Site.parse(
            Self.good.replacingOccurrences(
                of: "separation: possible}",
                with: "separation: possible, badgeUUID: 5A1E0B5C-7E2D-4C1A-9B8E-3F6D2A9C4E71, badgeEpochBits: 12}"
            ),
            file: "t.yaml"
        )
        #expect(site.badgeUUID?.description == "5a1e0b5c-7e2d-4c1a-9b8e-3f6d2a9c4e71" && site.badgeEpochBits == 12)
        #expect(try Site.parse(Self.good, file: "t.yaml").badgeUUID == nil)
    }

    @Test(arguments: broken)
    func errorsNameTheFileAndLine(_ from: String, _ to: String, _ expected: String) {
        let text = Self.good.replacingOccurrences(of: from, with: to)
        #expect {
            try Site.parse(text, file: "t.yaml")
        } throws: { error in
            "\(error)".hasPrefix(expected)
        }
    }
}

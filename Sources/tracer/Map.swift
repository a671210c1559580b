import ArgumentParser
import TracerSite

/// `tracer map …`: BeaconMap files.
struct Map: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check BeaconMap site files.",
        subcommands: [Check.self]
    )

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Check a BeaconMap file and summarise it.")
        @Argument(help: "A BeaconMap YAML file.") var file: String

        func run() throws {
            let site = try Site.load(file: file)
            let kiosks = site.anchors.filter { $0.kind == .kiosk }.count
            let buildings = Set(site.rooms.compactMap(\.building)).count
            Output.line(
                "\(file): \(site.name): \(site.rooms.count) rooms in \(buildings) building\(buildings == 1 ? "" : "s"), "
                    + "\(kiosks) kiosks, \(site.anchors.count - kiosks) fixed beacons, "
                    + "\(site.deviceUUIDs.count) personal-device UUID\(site.deviceUUIDs.count == 1 ? "" : "s"): ok"
            )
        }
    }
}

import ArgumentParser
import TracerSite

/// `tracer map …`: BeaconMap files.
struct Map: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check BeaconMap site files.",
        subcommands: [Check.self]
    )

    struct Check: ParsableCommand {
        static func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }

        static let configuration = CommandConfiguration(abstract: "Check a BeaconMap file and summarise it.")
        @Argument(help: "A BeaconMap YAML file.") var file: String

        func run() throws {
            let site = try Site.load(file: file)
            let kiosks = site.anchors.filter { $0.kind == .kiosk }.count
            let buildings = Set(site.rooms.compactMap(\.building)).count
            Output.line(
                "\(file): \(site.name): \(Self.count(site.rooms.count, "room")) in \(Self.count(buildings, "building")), "
                    + "\(Self.count(kiosks, "kiosk")), \(Self.count(site.anchors.count - kiosks, "fixed beacon")), "
                    + "\(site.deviceUUIDs.count) personal-device UUID\(site.deviceUUIDs.count == 1 ? "" : "s"): ok"
            )
        }
    }
}

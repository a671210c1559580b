import ArgumentParser
import TracerModel
import TracerSite
@_spi(Blocking) import TracerStore

/// `tracer map …`: BeaconMap files.
struct Map: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check BeaconMap site files, and publish one as the store's site.",
        subcommands: [Check.self, Publish.self, Show.self]
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

    struct Publish: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a BeaconMap into the store as its site (config/site), replacing the one there.",
            discussion: """
                Every command on the store then uses its rooms, anchors and settings without --map, and kiosks \
                replicating into a site server take it from there (GET /v1/site) without a restart.
                """
        )
        @OptionGroup var options: StoreOptions
        @Argument(help: "A BeaconMap YAML file.") var file: String

        func run() throws {
            let site = try PublishedSite(source: try SiteResolution.read(file), file: file)
            let store = try options.open(creating: true)
            let old = try store.read { try PublishedSite.load(from: $0) }
            let written = try store.write { try site.publish(to: $0) }
            let what =
                "\(site.site.name), \(Check.count(site.site.anchors.count, "anchor")), digest \(site.digest.prefix(12))"
            if !written {
                Output.line("\(file): already the site of \(options.display) (\(what))")
            } else if let old {
                let changes = site.site.anchorDifferences(from: old.site)
                Output.line(
                    "\(file): published to \(options.display) (\(what)), replacing the site from \(old.file)"
                        + (changes.isEmpty ? " (same anchors)" : ": " + changes.joined(separator: "; "))
                )
            } else {
                Output.line("\(file): published to \(options.display) (\(what))")
            }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the BeaconMap published in the store.")
        @OptionGroup var options: StoreOptions

        func run() throws {
            guard let site = try options.open().read({ try PublishedSite.load(from: $0) }) else {
                throw ValidationError(
                    "no site is published in \(options.display) (tracer map publish FILE)"
                )
            }
            Output.line(site.source.hasSuffix("\n") ? String(site.source.dropLast()) : site.source)
        }
    }
}

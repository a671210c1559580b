import ArgumentParser
import Foundation
import TracerBadges
import TracerCards
import TracerModel
import TracerServer
@_spi(Blocking) import TracerStore

/// `tracer badge issue|list|revoke|rekey|reprovision`: the site's rotating badges, on the site
/// server's store (where the site's badge key lives).
struct BadgeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "badge",
        abstract: "Issue, list, revoke and rekey the site's rotating badges (on the site server's store).",
        discussion: """
            A rotating badge advertises the site's badge UUID (settings: badgeUUID in the map) with a \
            major and minor that change every 2^K seconds (settings: badgeEpochBits, K = 10: about 17 \
            minutes), so that nobody outside the site can follow it; the site's kiosks resolve it to \
            badge:SERIAL from days of ids the site server sends them (never a key).
            """,
        subcommands: [Issue.self, Cards.self, List.self, Revoke.self, Rekey.self, Reprovision.self]
    )

    /// The published site, which must have rotating badges: issuing badges no kiosk resolves
    /// would succeed quietly.
    static func siteWithBadges(_ store: DocumentStore, _ options: StoreOptions) throws -> PublishedSite {
        guard let published = try store.read({ try PublishedSite.load(from: $0) }) else {
            throw ValidationError(
                "no site is published in \(options.display): badges belong to a site (tracer map publish FILE --store \(options.display))"
            )
        }
        guard published.site.badgeUUID != nil else {
            throw ValidationError(
                "the site published in \(options.display) (from \(published.file)) has no rotating badges: add settings: badgeUUID (a UUID of their own) to the map and tracer map publish it"
            )
        }
        return published
    }

    /// A serial as typed: a one-line error naming it when the site has no such badge.
    static func unknown(_ serial: String, _ store: DocumentStore) throws -> ValidationError {
        let serials = try store.read { try BadgeRegistry.list(in: $0) }.map(\.serial)
        let near = Closest.to(serial, in: serials)
        return ValidationError(
            "no badge '\(serial)' at this site\(near.isEmpty ? "" : ": the closest are \(near.joined(separator: ", "))") (tracer badge list)"
        )
    }

    static func line(_ b: BadgeRegistry.Issued) -> String { "\(b.serial)  \(b.keyHex)  \(b.deviceID)" }

    static func json(_ b: BadgeRegistry.Issued, link: String? = nil) -> Value {
        var m: [String: Value] = [
            "serial": .string(b.serial), "key": .string(b.keyHex), "deviceId": .string(b.deviceID),
        ]
        if let link { m["link"] = .string(link) }
        return .map(m)
    }

    struct Issue: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Make badges: each one's serial, its key (32 hex digits, for the badge's firmware) and device id.",
            discussion: """
                Prints SERIAL  KEY  badge:SERIAL, one line a badge (--json: an array of {"serial", \
                "key", "deviceId"}). Program each badge with the site's badge UUID, K and its key. With \
                --link and --cards, each badge also gets its card: a one-time link to its page on the \
                person's phone, as a sheet to print (DIR/cards.pdf, as tracer badge cards makes) and \
                as a QR code in DIR/SERIAL.png, all readable by you only.
                """
        )
        @OptionGroup var options: StoreOptions
        @Option(help: "How many badges (1 to 100000).") var count: Int
        @Option(
            help: ArgumentHelp(
                "Also make each badge's one-time link to its page: the site server's public address.",
                valueName: "BASE_URL"
            )
        )
        var link: String?
        @Option(
            help: ArgumentHelp(
                "With --link: write the badges' cards here (cards.pdf to print, and each one's QR code as SERIAL.png).",
                valueName: "DIR"
            )
        )
        var cards: String?
        @Option(help: "With --cards: a4 (ten cards a page) or letter (eight).") var paper: Paper = .a4
        @Flag(help: "Print JSON: an array of {\"serial\", \"key\", \"deviceId\"} (with --link, \"link\" too).")
        var json = false

        func validate() throws {
            guard (1...100_000).contains(count) else {
                throw ValidationError("--count takes 1 to 100000 badges, not \(count)")
            }
            if cards != nil, link == nil { throw ValidationError("--cards DIR goes with --link BASE_URL") }
            if let link { try TokenCommand.Create.checkBase(link) }
        }

        func run() throws {
            if let cards {
                var isDirectory: ObjCBool = false
                if !FileManager.default.fileExists(atPath: cards, isDirectory: &isDirectory) {
                    try? FileManager.default.createDirectory(atPath: cards, withIntermediateDirectories: true)
                }
                guard FileManager.default.isWritableFile(atPath: cards),
                    FileManager.default.fileExists(atPath: cards, isDirectory: &isDirectory), isDirectory.boolValue
                else { throw ValidationError("--cards \(cards): cannot write there (not a writable folder)") }
            }
            let store = try options.open()
            let site = try BadgeCommand.siteWithBadges(store, options)
            if let cards { try CardPrinting.check(site: site.site.name, paper: paper, option: "--cards \(cards)") }
            let issued = try store.write { try BadgeRegistry.issue(count: count, in: $0) }
            var links: [String: String] = [:]
            if let link {
                let made = try store.write { db in
                    try issued.map {
                        try TokenStore.createLink(deviceID: $0.deviceID, name: "badge \($0.serial)", in: db)
                    }
                }
                for (b, made) in zip(issued, made) { links[b.serial] = made.url(base: link) }
                if let cards {
                    for (i, b) in issued.enumerated() {
                        let file = (cards as NSString).appendingPathComponent("\(b.serial).png")
                        try SecretFile.write(bytes: try QRCode(links[b.serial]!).png(), to: file)
                        Output.progress("badge issue: cards", i + 1, issued.count)
                    }
                    Output.endProgress()
                    let sheet = issued.map {
                        CardPrinting.card(site: site.site.name, device: $0.deviceID, link: links[$0.serial]!)
                    }
                    try CardPrinting.write(
                        sheet,
                        site: site.site.name,
                        paper: paper,
                        to: (cards as NSString).appendingPathComponent("cards.pdf")
                    )
                }
            }
            if json {
                Output.line(JSON.string(.array(issued.map { BadgeCommand.json($0, link: links[$0.serial]) })))
            } else {
                for b in issued {
                    Output.line(BadgeCommand.line(b) + (links[b.serial].map { "  \($0)" } ?? ""))
                }
            }
            let uuid = site.site.badgeUUID!.description
            Output.error(
                "\(issued.count) badge\(issued.count == 1 ? "" : "s") issued: program each with UUID \(uuid), K = \(site.site.badgeEpochBits) and its key; "
                    + "the keys let whoever holds them follow the badges, keep them as safe as the badges themselves"
                    + (cards.map {
                        "; their cards in \($0): cards.pdf (\(CardPrinting.summary(issued.count, paper: paper))) and SERIAL.png, readable by you only"
                    } ?? "")
            )
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the site's badges (never their keys).")
        @OptionGroup var options: StoreOptions
        @Flag(
            help:
                "Print JSON: an array of {\"serial\", \"deviceId\", \"number\", \"issuedAt\", \"revokedAt\", \"reprovision\"}."
        )
        var json = false

        func run() throws {
            let store = try options.open()
            let (badges, generation) = try store.read { db in
                (try BadgeRegistry.list(in: db), try BadgeRegistry.generation(in: db) ?? 0)
            }
            if json {
                Output.line(
                    JSON.string(
                        .array(
                            badges.map { b in
                                var m: [String: Value] = [
                                    "serial": .string(b.serial), "deviceId": .string(b.deviceID),
                                    "number": .integer(Int64(b.number)),
                                    "reprovision": .bool(b.revokedAt == nil && b.generation < generation),
                                ]
                                if let t = b.issuedAt { m["issuedAt"] = .string(t.iso8601Seconds) }
                                if let t = b.revokedAt { m["revokedAt"] = .string(t.iso8601Seconds) }
                                return .map(m)
                            }
                        )
                    )
                )
                return
            }
            if badges.isEmpty { Output.line("no badges (tracer badge issue --count N)") }
            for b in badges {
                Output.line(
                    "\(b.serial)  \(b.deviceID)  issued \(ExposureOutput.second(b.issuedAt.map { .timestamp($0) }))"
                        + (b.revokedAt.map { "  revoked \(ExposureOutput.second(.timestamp($0)))" } ?? "")
                        + (b.revokedAt == nil && b.generation < generation
                            ? "  old key: tracer badge reprovision \(b.serial)" : "")
                )
            }
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke a badge: kiosks resolve its ids to nobody from their next table."
        )
        @OptionGroup var options: StoreOptions
        @Argument(help: "The badge's serial.") var serial: String

        func run() throws {
            let store = try options.open()
            guard let (record, already) = try store.write({ try BadgeRegistry.revoke(serial, in: $0) }) else {
                throw try BadgeCommand.unknown(serial, store)
            }
            if already {
                throw ValidationError(
                    "badge \(serial) was already revoked at \(record.revokedAt.map(\.iso8601Seconds) ?? "?")"
                )
            }
            Output.line(
                "badge \(serial) revoked: the site server stops sending its ids, and kiosks stop resolving it when they next ask (within a minute)"
            )
        }
    }

    struct Rekey: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "A new site badge key, when the old one may have leaked; badges resolve under their old key until reprovisioned."
        )
        @OptionGroup var options: StoreOptions

        func run() throws {
            let store = try options.open()
            _ = try BadgeCommand.siteWithBadges(store, options)
            let (generation, outstanding) = try store.write { try BadgeRegistry.rekey(in: $0) }
            Output.line("the site's badge key is new (generation \(generation))")
            Output.line(
                outstanding.isEmpty
                    ? "no badge to reprovision"
                    : "\(outstanding.count) badge\(outstanding.count == 1 ? "" : "s") still use the old key (resolved until each is reprovisioned): tracer badge reprovision SERIAL for each, then program the badge with the key it prints; tracer badge list shows which"
            )
        }
    }

    struct Reprovision: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A badge's new key under the site's current badge key (after a rekey): program the badge with it."
        )
        @OptionGroup var options: StoreOptions
        @Argument(help: "The badge's serial.") var serial: String
        @Flag(help: "Print JSON: {\"serial\", \"key\", \"deviceId\"}.") var json = false

        func run() throws {
            let store = try options.open()
            guard let issued = try store.write({ try BadgeRegistry.reprovision(serial, in: $0) }) else {
                if let b = try store.read({ try BadgeRegistry.list(in: $0) }).first(where: { $0.serial == serial }),
                    b.revokedAt != nil
                {
                    throw ValidationError(
                        "badge \(serial) is revoked: issue a new badge instead (tracer badge issue --count 1)"
                    )
                }
                throw try BadgeCommand.unknown(serial, store)
            }
            Output.line(json ? JSON.string(BadgeCommand.json(issued)) : BadgeCommand.line(issued))
            Output.error(
                "badge \(serial): program it with this key; its old ids stop resolving when the kiosks next ask"
            )
        }
    }
}

import ArgumentParser
import Foundation
import TracerCards
import TracerModel
import TracerServer
@_spi(Blocking) import TracerStore

extension Paper: ExpressibleByArgument {}

/// Printed cards: what `badge cards`, `badge issue --cards` and `token create --card` share.
enum CardPrinting {
    /// The site's name, which every card carries: a card with no site on it is a card nobody
    /// knows what to do with.
    static func siteName(_ store: DocumentStore, _ options: StoreOptions, option: String) throws -> String {
        guard let published = try store.read({ try PublishedSite.load(from: $0) }) else {
            throw ValidationError(
                "\(option): a card carries the site's name, and no site is published in \(options.display) (tracer map publish FILE)"
            )
        }
        return published.site.name
    }

    /// A device's card: a badge's is labelled with its serial, any other device with its id.
    static func card(site: String, device: String, link: String) -> Card {
        let texts = PersonPage.cardTexts
        let label: String
        if device.hasPrefix(Interaction.badgePrefix), let first = texts.first {
            label = first.badge.replacingOccurrences(
                of: "{serial}",
                with: String(device.dropFirst(Interaction.badgePrefix.count))
            )
        } else {
            label = device
        }
        return Card(site: site, label: label, link: link, instructions: texts.map(\.instruction))
    }

    /// Whether the site's cards can be printed at all (its name in the cards' font, on a card),
    /// said before anything is made: badges issued or links made for a sheet that then fails
    /// would be left without their cards.
    static func check(site: String, paper: Paper, option: String) throws {
        let sample = card(
            site: site,
            device: Interaction.badgePrefix + "xxxxxxxx",
            link: "https://tracer.example.org/me#c=" + String(repeating: "x", count: 45)
        )
        do { _ = try CardSheet.pdf([sample], paper: paper, title: "Cards: \(site)") } catch {
            throw ValidationError("\(option): \(error)")
        }
    }

    /// The cards as a PDF in `path`, readable by its owner only (it holds the links).
    static func write(_ cards: [Card], site: String, paper: Paper, to path: String) throws {
        let pdf = try CardSheet.pdf(cards, paper: paper, title: "Cards: \(site)")
        try SecretFile.write(bytes: pdf, to: path)
    }

    /// "12 cards on 2 pages of A4".
    static func summary(_ count: Int, paper: Paper) -> String {
        let (columns, rows) = CardSheet.grid(paper)
        let pages = (count + columns * rows - 1) / (columns * rows)
        return "\(count) card\(count == 1 ? "" : "s") on \(pages) page\(pages == 1 ? "" : "s") of "
            + (paper == .a4 ? "A4" : "US Letter") + " (\(columns * rows) a page)"
    }
}

extension BadgeCommand {
    struct Cards: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print badges' cards: a PDF to print and cut, one card a badge.",
            discussion: """
                Each card has the site's name, the badge's serial, a new one-time link to the \
                badge's page as a QR code, and one line on what to do in each of the page's \
                languages. A badge's earlier cards stop working once the file is written (a \
                reprint replaces them). The file holds the links: it is readable by you only; \
                keep it as safe as the badges until it is printed, then delete it.
                """
        )
        @OptionGroup var options: StoreOptions
        @Argument(help: "The badges' serials (or --all, or --missing).") var serials: [String] = []
        @Flag(help: "Every issued badge that is not revoked.") var all = false
        @Flag(help: "Every issued badge with no card in force (never given one, or its cards revoked).")
        var missing = false
        @Option(
            help: ArgumentHelp(
                "The site server's public address, which the links open (https://tracer.example.org).",
                valueName: "BASE_URL"
            )
        )
        var link: String
        @Option(help: ArgumentHelp("Where to write the PDF.", valueName: "FILE")) var out: String
        @Option(help: "a4 (ten cards a page) or letter (eight).") var paper: Paper = .a4

        func validate() throws {
            let chosen = (serials.isEmpty ? 0 : 1) + (all ? 1 : 0) + (missing ? 1 : 0)
            guard chosen == 1 else {
                throw ValidationError("say which badges: their serials, --all, or --missing (one of them)")
            }
            try TokenCommand.Create.checkBase(link)
            try SecretFile.checkWritable(out, option: "--out")
        }

        func run() throws {
            let store = try options.open()
            let site = try BadgeCommand.siteWithBadges(store, options)
            try CardPrinting.check(site: site.site.name, paper: paper, option: "--out \(out)")
            let badges = try store.read { try BadgeRegistry.list(in: $0) }
            var chosen: [BadgeRegistry.Record] = []
            if all || missing {
                let carded =
                    missing ? Set(try store.read { try TokenStore.cards(in: $0) }.compactMap(\.deviceID)) : []
                chosen = badges.filter { $0.revokedAt == nil && !carded.contains($0.deviceID) }
            } else {
                for serial in serials {
                    guard let badge = badges.first(where: { $0.serial == serial }) else {
                        throw try BadgeCommand.unknown(serial, store)
                    }
                    guard badge.revokedAt == nil else {
                        throw ValidationError("badge \(serial) was revoked: a revoked badge gets no card")
                    }
                    if !chosen.contains(where: { $0.serial == serial }) { chosen.append(badge) }
                }
            }
            guard !chosen.isEmpty else {
                Output.error(
                    badges.allSatisfy({ $0.revokedAt != nil })
                        ? "no badge to print a card for: none is issued and unrevoked (tracer badge issue)"
                        : "every badge has a card in force: nothing to print (--all prints them all again)"
                )
                return
            }
            // The links, in one transaction; the file; only then are the earlier cards revoked.
            let links = try store.write { db in
                try chosen.map { try TokenStore.createLink(deviceID: $0.deviceID, name: "badge \($0.serial)", in: db) }
            }
            let cards = zip(chosen, links).map { badge, made in
                CardPrinting.card(site: site.site.name, device: badge.deviceID, link: made.url(base: link))
            }
            do {
                try CardPrinting.write(cards, site: site.site.name, paper: paper, to: out)
            } catch {
                // No card: no link either.
                _ = try? store.write { db in for made in links { _ = try TokenStore.revoke(made.id, in: db) } }
                throw ValidationError("--out \(out): \(error)")
            }
            let replaced = try store.write { db in
                try TokenStore.revokeCards(
                    of: Set(chosen.map(\.deviceID)),
                    keeping: Set(links.map(\.id)),
                    in: db
                )
            }
            Output.error(
                "\(CardPrinting.summary(cards.count, paper: paper)) in \(out), readable by you only: it holds the links, delete it once printed"
                    + (replaced.isEmpty
                        ? ""
                        : "; \(replaced.count) earlier card\(replaced.count == 1 ? "" : "s") of these badges revoked")
            )
        }
    }
}

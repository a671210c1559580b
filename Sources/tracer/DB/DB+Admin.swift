import ArgumentParser
import Foundation
@_spi(Blocking) import TracerStore

extension DB {
    struct IndexCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "index",
            abstract: "List the declared indexes, or declare one.",
            discussion: "Example: tracer db index interactions deviceId start --group"
        )

        @OptionGroup var options: StoreOptions
        @Argument(help: "The collection id to index (none: list the indexes).") var collection: String?
        @Argument(help: "Fields, each FIELD or FIELD:desc.") var fields: [String] = []
        @Flag(help: "Index the whole collection group rather than each collection.") var group = false

        func run() throws {
            let store = try options.open()
            guard let collection else {
                let all = try store.indexes()
                if all.isEmpty { Output.line("no indexes") }
                for index in all { Output.line(index.description) }
                return
            }
            guard !fields.isEmpty else { throw ValidationError("name at least one field to index") }
            let definition = IndexDefinition(
                collectionID: collection,
                scope: group ? .collectionGroup : .collection,
                fields: try fields.map(IndexDefinition.Field.init(parsing:))
            )
            try store.declareIndex(definition)
            Output.line("index \(definition)")
        }
    }

    struct PurgeCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "purge",
            abstract: "Delete a collection group's documents older than a cut-off, and the change log as old.",
            discussion: "Example: tracer db purge interactions --field start --older-than 14d"
        )

        @OptionGroup var options: StoreOptions
        @Argument(help: "The collection id.") var collection: String
        @Option(help: "The time field to compare.") var field: String
        @Option(
            name: .customLong("older-than"),
            help: "An age (14d, 12h, 30m) or a time (2026-11-08, 2026-11-08T10:00:00Z)."
        )
        var olderThan: String

        func run() throws {
            let cutoff: Timestamp
            if let age = Self.parseAge(olderThan) {
                cutoff = Timestamp.now().adding(seconds: -age)
            } else if let t = Timestamp(parsing: olderThan) {
                cutoff = t
            } else {
                throw ValidationError("--older-than takes an age like 14d or a time like 2026-11-08T10:00:00Z")
            }
            let store = try options.open()
            let n = try store.purge(
                collectionGroup: collection,
                field: try FieldPath(parsing: field),
                olderThan: cutoff
            ) {
                Output.progress("purging", $0, nil)
            }
            // The change log keeps no longer than the data: listeners resuming from before the
            // cut-off are told their token has expired.
            let pruned = try store.pruneChanges(olderThan: cutoff)
            Output.endProgress()
            Output.line(
                "deleted \(n) document\(n == 1 ? "" : "s") of \(collection) older than \(HumanFormat.time(cutoff))"
            )
            Output.line("trimmed \(pruned) change-log entr\(pruned == 1 ? "y" : "ies") older than that")
        }

        static func parseAge(_ text: String) -> Double? {
            guard let unit = text.last, let n = Double(text.dropLast()), n >= 0 else { return nil }
            switch unit {
            case "d": return n * 86_400
            case "h": return n * 3600
            case "m": return n * 60
            case "s": return n
            default: return nil
            }
        }
    }
}

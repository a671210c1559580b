import ArgumentParser
import Foundation
import TracerModel
@_spi(Blocking) import TracerStore

/// `tracer db …`: the document store by hand.
struct DB: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db",
        abstract: "Read, write, query and watch the document store.",
        discussion: """
            Values are JSON. Timestamps are written {"__time__": "2026-11-22T10:00:00Z"}, bytes \
            {"__bytes__": "base64"}. Writes also take {"__serverTimestamp__": true}, {"__increment__": 1}, \
            {"__arrayUnion__": [...]}, {"__arrayRemove__": [...]} and {"__delete__": true}.
            """,
        subcommands: [
            GetCommand.self, SetCommand.self, DeleteCommand.self, QueryCommand.self, WatchCommand.self,
            ImportCommand.self,
            ExportCommand.self, CopyCommand.self, IndexCommand.self, PurgeCommand.self, CollectionsCommand.self,
        ]
    )
}

extension DB {
    struct CollectionsCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "collections",
            abstract: "Print tracer's data model: each collection's path, what writes it, and its fields.",
            discussion: "No store is opened: this is what tracer writes, for `tracer db query` and the docs."
        )
        @Flag(help: "A Markdown table (as docs/design.md and docs/store.md carry it).") var markdown = false

        func run() {
            Output.line((markdown ? DataModel.markdown : DataModel.text).trimmingCharacters(in: .newlines))
        }
    }

    struct GetCommand: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "get", abstract: "Print a document.")
        @OptionGroup var options: StoreOptions
        @Argument(help: "A document path, e.g. beacons/b-101.") var path: String
        @Flag(help: "Print {\"path\": ..., \"data\": {...}}.") var json = false

        func run() throws {
            let path = try DocumentPath(path)
            let doc = try options.open().get(path)
            guard doc.exists else { throw StoreError(.notFound, "no document", context: path.description) }
            Output.line(json ? doc.jsonLine : HumanFormat.document(doc))
        }
    }

    struct SetCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Write a document (replace it, or merge into it)."
        )
        @OptionGroup var options: StoreOptions
        @Argument(help: "A document path.") var path: String
        @Argument(help: "The document as a JSON object.") var json: String
        @Flag(help: "Merge the given fields into the document instead of replacing it.") var merge = false

        func run() throws {
            let path = try DocumentPath(path)
            let data: DocumentData
            do { data = try JSON.parseObject(json, allowSentinels: true) } catch {
                throw StoreError(error.code, "the document for \(path) is not a JSON object: \(error.description)")
            }
            try options.open(creating: true).set(path, data, merge: merge)
        }
    }

    struct DeleteCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete",
            abstract: "Delete a document (its subcollections stay)."
        )
        @OptionGroup var options: StoreOptions
        @Argument(help: "A document path.") var path: String

        func run() throws {
            try options.open().delete(DocumentPath(path))
        }
    }
}

import ArgumentParser
import Foundation
@_spi(Blocking) import TracerStore

extension DB {
    struct ImportCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Write documents from lines of {\"path\", \"data\"} (each replaces the document)."
        )

        @OptionGroup var options: StoreOptions
        @Argument(help: "A JSON-lines file, as `tracer db export` writes.") var file: String
        @Option(help: "Documents per transaction.") var batchSize = 5000
        @Flag(help: "Print 'committed N' after each transaction, once its documents are durable.")
        var reportCommits = false

        func run() throws {
            guard let handle = FileHandle(forReadingAtPath: file) else {
                throw ValidationError("cannot read \(file)")
            }
            let store = try options.open(creating: true)
            let total = Output.stderrIsTerminal ? Self.countLines(file) : nil
            let written = try store.importLines(LineReader(handle: handle), batchSize: batchSize, source: file) {
                if reportCommits { Output.line("committed \($0)") }
                Output.progress("importing", $0, total)
            }
            Output.endProgress()
            Output.line("imported \(written) document\(written == 1 ? "" : "s") from \(file)")
        }

        static func countLines(_ file: String) -> Int? {
            guard let data = FileManager.default.contents(atPath: file) else { return nil }
            return data.reduce(0) { $1 == 10 ? $0 + 1 : $0 }
        }
    }

    struct ExportCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export",
            abstract: "Print documents as lines of {\"path\", \"data\"}: a collection or document and all beneath it."
        )

        @OptionGroup var options: StoreOptions
        @Argument(help: "A collection or document path; '/' for the whole store; with --group a collection id.")
        var path: String = "/"
        @Flag(help: "Export every collection with this id.") var group = false

        func run() throws {
            let scope: ExportScope
            let segments = path.split(separator: "/").count
            if group {
                scope = .group(try CollectionPath(path).id)
            } else if segments == 0 {
                scope = .all
            } else if segments % 2 == 1 {
                scope = .collection(try CollectionPath(path))
            } else {
                scope = .document(try DocumentPath(path))
            }
            var buffer = Data()
            var count = 0
            try options.open().export(scope) { doc in
                buffer.append(contentsOf: (doc.jsonLine + "\n").utf8)
                count += 1
                if buffer.count > 1 << 16 {
                    FileHandle.standardOutput.write(buffer)
                    buffer.removeAll(keepingCapacity: true)
                    Output.progress("exporting", count, nil)
                }
            }
            FileHandle.standardOutput.write(buffer)
            if count > 0 { Output.progress("exporting", count, nil) }
            Output.endProgress()
        }
    }
}

extension DB {
    struct CopyCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "copy",
            abstract:
                "Copy a whole store into another (SQLite to PostgreSQL, or back): documents, their times, indexes.",
            discussion: """
                Run again after an interruption, it skips what is already there. The copy's change \
                tokens start afresh: watchers reconnect without a token, and `tracer notify` starts \
                with a new state file (docs/postgresql.md, "Moving an existing site").
                """
        )

        @Option(help: "The store to copy: a SQLite file or a postgres:// URI.") var from: String
        @Option(help: "The store to copy into (made if it is not there).") var to: String
        @Option(help: "Documents per transaction.") var batchSize = 2000

        func run() throws {
            let source = DocumentStore.redacted(from)
            let target = DocumentStore.redacted(to)
            guard DocumentStore.isPostgres(from) || FileManager.default.fileExists(atPath: from) else {
                throw ValidationError("no store at \(from)")
            }
            guard source != target else { throw ValidationError("--from and --to name the same store") }
            let input = try DocumentStore(path: from)
            let output = try DocumentStore(path: to)
            let started = Date()
            let result = try input.copy(to: output, batchSize: max(1, batchSize)) {
                Output.progress("copying", $0, nil)
            }
            Output.endProgress()
            Output.line(
                "copied \(result.copied) documents from \(source) to \(target) in "
                    + String(format: "%.1f s", Date().timeIntervalSince(started))
                    + (result.unchanged > 0 ? " (\(result.unchanged) already there)" : "")
                    + ", \(result.indexes) indexes"
            )
            Output.line(
                "change tokens start afresh in \(target): restart watchers without a token, and tracer notify with a new state file"
            )
        }
    }
}

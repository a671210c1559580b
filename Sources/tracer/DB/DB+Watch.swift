import ArgumentParser
import Foundation
import Logging
@_spi(Blocking) import TracerStore

extension DB {
    struct WatchCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "watch",
            abstract: "Follow a document or a collection live, one JSON line per change.",
            discussion: """
                Prints {"type": "added"|"modified"|"removed", "path": ..., "data": {...}} for each document now \
                there (as added), then for each change, from this machine's other processes too, until \
                interrupted. With --since TOKEN it prints the changes after that token instead of the \
                current documents, and each line carries the "token" to resume from.
                """
        )

        @OptionGroup var options: StoreOptions
        @Argument(help: "A document path, a collection path, or with --group a collection id.") var path: String
        @Flag(help: "Watch every collection with this id.") var group = false
        @Option(help: "Resume after this change token (printed in each line with this option).") var since: Int64?

        func run() async throws {
            let store = try options.open()
            let segments = path.split(separator: "/", omittingEmptySubsequences: true).count
            if !group && segments % 2 == 0 {
                if since != nil {
                    throw ValidationError(
                        "--since takes a collection or a group; a document's watch starts from its state now"
                    )
                }
                let docPath = try DocumentPath(path)
                try await Services.untilSignalled(logger: Logger(label: "tracer.db")) {
                    var previous: DocumentSnapshot?
                    for try await snap in store.snapshots(document: docPath) {
                        let existed = previous?.exists ?? false
                        switch (existed, snap.exists) {
                        case (false, true): Self.emit("added", docPath, snap.data, nil)
                        case (true, true): Self.emit("modified", docPath, snap.data, nil)
                        case (true, false): Self.emit("removed", docPath, previous?.data, nil)
                        case (false, false): break
                        }
                        previous = snap
                    }
                }
                return
            }
            let query =
                group
                ? TracerStore.Query(collectionGroup: path) : TracerStore.Query(collection: try CollectionPath(path))
            let since = since
            try await Services.untilSignalled(logger: Logger(label: "tracer.db")) {
                for try await snap in store.snapshots(query, from: since.map { .after(token: $0) } ?? .now) {
                    for change in snap.changes {
                        Self.emit(
                            change.kind.rawValue,
                            change.document.path,
                            change.document.data,
                            since == nil ? nil : snap.token
                        )
                    }
                }
            }
        }

        private static func emit(_ type: String, _ path: DocumentPath, _ data: DocumentData?, _ token: Int64?) {
            var line: [String: Value] = ["type": .string(type), "path": .string(path.description)]
            line["data"] = data.map { .map($0) } ?? .null
            if let token { line["token"] = .integer(token) }
            // Keys in the documented order: type, path, data (then token).
            let ordered = ["type", "path", "data", "token"].compactMap { key in
                line[key].map { "\"\(key)\": " + JSON.string($0) }
            }
            Output.line("{" + ordered.joined(separator: ", ") + "}")
        }
    }
}

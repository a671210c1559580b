import ArgumentParser
import Foundation
@_spi(Blocking) import TracerStore

extension DB {
    struct QueryCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "query",
            abstract: "Query a collection (or a collection group).",
            discussion: """
                Examples:
                  tracer db query beacons/b-101/interactions --where 'proximity in ["near","immediate"]' \
                --order-by start --desc --limit 10
                  tracer db query interactions --group --where 'deviceId == "f7826da6-…:1:42"' --json
                """
        )

        @OptionGroup var options: StoreOptions
        @Argument(help: "A collection path, or with --group a collection id.") var collection: String
        @Flag(help: "Query every collection with this id, at any depth.") var group = false
        @Option(
            name: .customLong("where"),
            help: ArgumentHelp("A filter 'FIELD OP VALUE' with VALUE in JSON; repeat to AND them.", valueName: "filter")
        )
        var filters: [String] = []
        @Option(
            name: .customLong("order-by"),
            help: ArgumentHelp("Sort by a field (FIELD or FIELD:desc); repeat for more keys.", valueName: "field")
        )
        var orderBy: [String] = []
        @Flag(help: "Sort the last --order-by field descending.") var desc = false
        @Option(help: "Keep at most N documents.") var limit: Int?
        @Option(name: .customLong("limit-to-last"), help: "Keep the last N documents.") var limitToLast: Int?
        @Option(name: .customLong("start-at"), help: "Cursor: a JSON array of order values.") var startAt: String?
        @Option(name: .customLong("start-after"), help: "Cursor: a JSON array of order values.") var startAfter: String?
        @Option(name: .customLong("end-at"), help: "Cursor: a JSON array of order values.") var endAt: String?
        @Option(name: .customLong("end-before"), help: "Cursor: a JSON array of order values.") var endBefore: String?
        @Flag(help: "Print only the number of matching documents.") var count = false
        @Flag(help: "Print which index the query uses, and SQLite's plan.") var explain = false
        @Flag(help: "Print a JSON array of {\"path\", \"data\"}.") var json = false

        func validate() throws {
            if limit != nil && limitToLast != nil {
                throw ValidationError("--limit and --limit-to-last exclude each other")
            }
            if desc && orderBy.isEmpty { throw ValidationError("--desc needs --order-by") }
        }

        func buildQuery() throws -> TracerStore.Query {
            var query =
                group
                ? TracerStore.Query(collectionGroup: collection)
                : TracerStore.Query(collection: try CollectionPath(collection))
            if group { try _ = CollectionPath(collection) }
            for f in filters { query = query.where(try Filter.parse(f)) }
            for (i, o) in orderBy.enumerated() {
                let field = try IndexDefinition.Field(parsing: o)
                let descending = field.descending || (desc && i == orderBy.count - 1)
                query = query.order(by: field.path, descending: descending)
            }
            if let limit { query = query.limit(limit) }
            if let limitToLast { query = query.limit(toLast: limitToLast) }
            func cursor(_ text: String?, _ option: String) throws -> [Value]? {
                guard let text else { return nil }
                guard case .array(let values) = try JSON.parse(text) else {
                    throw ValidationError("\(option) takes a JSON array of values, one per order field")
                }
                return values
            }
            if let v = try cursor(startAt, "--start-at") { query.start = .init(values: v, inclusive: true) }
            if let v = try cursor(startAfter, "--start-after") { query.start = .init(values: v, inclusive: false) }
            if let v = try cursor(endAt, "--end-at") { query.end = .init(values: v, inclusive: true) }
            if let v = try cursor(endBefore, "--end-before") { query.end = .init(values: v, inclusive: false) }
            return query
        }

        func run() throws {
            let query = try buildQuery()
            let store = try options.open()
            if explain {
                Output.line(try store.explain(query).description)
                return
            }
            let docs = try store.getDocuments(query)
            if count {
                Output.line(json ? "{\"count\": \(docs.count)}" : String(docs.count))
            } else if json {
                Output.line("[" + docs.map(\.jsonLine).joined(separator: ",\n ") + "]")
            } else if docs.isEmpty {
                Output.line("no documents")
            } else {
                let width = docs.map { $0.path.description.count }.max() ?? 0
                for doc in docs {
                    Output.line(
                        doc.path.description.padding(toLength: width, withPad: " ", startingAt: 0) + "  "
                            + HumanFormat.render(.map(doc.data ?? [:]))
                    )
                }
                Output.line("\(docs.count) document\(docs.count == 1 ? "" : "s")")
            }
        }
    }
}

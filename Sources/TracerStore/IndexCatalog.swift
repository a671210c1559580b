import Foundation
import Synchronization

/// The declared indexes, cached per process and reloaded when another process declares one.
final class IndexCatalog: Sendable {
    private struct State {
        var version: Int64 = -1
        var byCollection: [String: [StoredIndex]] = [:]
        /// Query plans by shape, chosen among this version's indexes (`QueryEngine.template(for:)`).
        var plans: [QueryEngine.Shape: QueryEngine.Template] = [:]
    }

    private let state = Mutex(State())

    /// Shapes whose plans are kept: a process asks a few dozen; past this, the plans start over.
    static let keptPlans = 256

    /// The indexes covering a collection id, as of the transaction `db` is in.
    func indexes(for collectionID: String, _ db: any StoreConnection) throws -> [StoredIndex] {
        try current(db).byCollection[collectionID] ?? []
    }

    /// A shape's plan, if one was kept for the catalog's `version`.
    func template(_ shape: QueryEngine.Shape, version: Int64) -> QueryEngine.Template? {
        state.withLock { $0.version == version ? $0.plans[shape] : nil }
    }

    /// Keeps a shape's plan, chosen among the indexes of the catalog's `version`.
    func keep(_ template: QueryEngine.Template, for shape: QueryEngine.Shape, version: Int64) {
        state.withLock {
            guard $0.version == version else { return }
            if $0.plans.count >= Self.keptPlans { $0.plans.removeAll(keepingCapacity: true) }
            $0.plans[shape] = template
        }
    }

    /// The indexes covering a collection id as last refreshed: for a writer that refreshed at the
    /// start of its transaction (no one else can declare one while it holds the write lock).
    func cached(for collectionID: String) -> [StoredIndex] {
        state.withLock { $0.byCollection[collectionID] ?? [] }
    }

    /// Every declared index.
    func all(_ db: any StoreConnection) throws -> [StoredIndex] {
        try refresh(db)
        return state.withLock { $0.byCollection.values.flatMap { $0 }.sorted { $0.id < $1.id } }
    }

    /// Fills an index from the documents already stored (inside a write transaction); returns
    /// how many entries it made.
    static func fill(_ index: StoredIndex, _ db: any StoreConnection) throws -> Int {
        // In pages by document key: PostgreSQL hands a statement's rows over all at once, and
        // the page's entries are written on the same connection while it is read.
        let scan = try db.statement(
            """
            SELECT p.path, d.id, d.data, p.id FROM parents p JOIN documents d ON d.parent = p.id
            WHERE p.collection = ?1 AND (d.parent > ?2 OR (d.parent = ?2 AND d.id > ?3))
            ORDER BY d.parent, d.id LIMIT ?4
            """
        )
        defer { scan.reset() }
        let put = try db.statement(DocumentWriter.insertEntrySQL)
        var count = 0
        var after: (parent: Int64, id: String) = (-1, "")
        let page: Int64 = db.streamsRows ? .max : 2000
        while true {
            scan.reset()
            scan.bind(1, index.definition.collectionID)
            scan.bind(2, after.parent)
            scan.bind(3, after.id)
            scan.bind(4, page)
            var rows: [(DocumentPath, [UInt8]?, Int64)] = []
            while try scan.step() {
                let path = DocumentPath(parent: scan.text(0), id: scan.text(1))
                let data = try DocumentStore.decode(scan, column: 2, path: path)
                rows.append((path, index.key(for: path, data: data), scan.int64(3)))
            }
            for (path, key, parent) in rows {
                after = (parent, path.id)
                guard let key else { continue }
                put.reset()
                put.bind(1, index.id)
                put.bindBlob(2, key)
                put.bind(3, parent)
                put.bind(4, path.id)
                try db.send(put, changed: nil)  // PostgreSQL: pipelined, answered at the next page's read
                count += 1
            }
            if Int64(rows.count) < page { return count }
        }
    }

    func refresh(_ db: any StoreConnection) throws { _ = try current(db) }

    /// The catalog as of the transaction `db` is in: its version, and its indexes by collection
    /// id read together with it (another thread may load another transaction's version at any
    /// time, and a plan must use only indexes this transaction's snapshot has filled).
    func current(_ db: any StoreConnection) throws -> (version: Int64, byCollection: [String: [StoredIndex]]) {
        let version = try db.statement(.catalogVersion, "SELECT value FROM meta WHERE key = 'catalog'")
        let current = try version.step() ? version.int64(0) : 0
        version.reset()
        if let known = state.withLock({ $0.version == current ? $0.byCollection : nil }) { return (current, known) }
        var loaded: [String: [StoredIndex]] = [:]
        let s = try db.statement("SELECT id, collection, scope, fields FROM indexes ORDER BY id")
        while try s.step() {
            let definition = IndexDefinition(
                collectionID: s.text(1),
                scope: IndexDefinition.Scope(rawValue: s.int64(2)) ?? .collection,
                fields: try IndexDefinition.parseFields(s.text(3))
            )
            loaded[definition.collectionID, default: []].append(StoredIndex(id: s.int64(0), definition: definition))
        }
        state.withLock { $0 = State(version: current, byCollection: loaded) }
        return (current, loaded)
    }
}

extension DocumentStore {
    /// Declares an index and fills it from the documents already stored. Declaring one that
    /// exists does nothing. Other processes pick it up at their next read or write.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func declareIndex(_ definition: IndexDefinition) throws {
        try definition.validate()
        // Most declarations find the index there already: a read says so without taking the
        // write lock (or an fsync).
        let known = try pool.read { db in
            try catalog.indexes(for: definition.collectionID, db).contains { $0.definition == definition }
        }
        if known { return }
        let added = try pool.write { db -> Int in
            let find = try db.statement("SELECT id FROM indexes WHERE collection = ?1 AND scope = ?2 AND fields = ?3")
            find.bind(1, definition.collectionID)
            find.bind(2, definition.scope.rawValue)
            find.bind(3, definition.fieldsText)
            let exists = try find.step()
            find.reset()
            if exists { return 0 }
            let insert = try db.statement(
                "INSERT INTO indexes (collection, scope, fields) VALUES (?1, ?2, ?3) RETURNING id"
            )
            insert.bind(1, definition.collectionID)
            insert.bind(2, definition.scope.rawValue)
            insert.bind(3, definition.fieldsText)
            guard try insert.step() else { throw StoreError(.invalidQuery, "the index was not declared") }
            let index = StoredIndex(id: insert.int64(0), definition: definition)
            insert.reset()
            try db.execute("UPDATE meta SET value = value + 1 WHERE key = 'catalog'")
            return try IndexCatalog.fill(index, db) + 1
        }
        if added > 0 {
            logger.info(
                "declared index",
                metadata: ["index": "\(definition)", "index.entries": "\(added - 1)"]
            )
        }
    }

    /// The declared indexes.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func indexes() throws -> [IndexDefinition] {
        try pool.read { db in try catalog.all(db).map(\.definition) }
    }
}

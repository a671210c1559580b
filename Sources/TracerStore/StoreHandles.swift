/// The store's reads and writes, as GRDB hands out its `Database`: a handle that exists only
/// inside the body given to `DocumentStore.reading` (a reader thread) or `writing` (the writer
/// thread), or, on the command line, to `read`/`write`. Every read and write blocks its thread
/// for a disk or a round trip to PostgreSQL, so code on Swift's cooperative threads cannot
/// reach one: the store's own blocking methods are `@_spi(Blocking)` and unavailable from async
/// code, the handles are not `Sendable` (they cannot be kept past the body or sent to a task),
/// and a helper that reads or writes takes the handle, not the store. A blocking call in async
/// code does not compile; docs/development.md, "The store from async code".
///
/// Reads through a writer's handle see the writer's state as committed (they use a reader
/// connection, as before the handles: a transaction's own reads are `runTransaction`'s).
public protocol StoreReads {
    /// The store's reads, for a helper that only reads.
    var reader: StoreReader { get }
}

/// A store's reads, inside `DocumentStore.reading` (or `writing`, as `db.reader`).
public struct StoreReader: StoreReads {
    let store: DocumentStore

    init(_ store: DocumentStore) { self.store = store }

    public var reader: StoreReader { self }
}

/// A store's reads and writes, inside `DocumentStore.writing`.
public struct StoreWriter: StoreReads {
    let store: DocumentStore

    init(_ store: DocumentStore) { self.store = store }

    public var reader: StoreReader { StoreReader(store) }
}

extension StoreReads {
    /// The document at `path` (a snapshot whose `exists` is false when there is none).
    public func get(_ path: DocumentPath) throws -> DocumentSnapshot { try reader.store.get(path) }

    /// The document at a path given as text.
    public func get(_ path: String) throws -> DocumentSnapshot { try reader.store.get(path) }

    /// Documents by path and every document of some collections, read by one statement
    /// (`DocumentStore.fetch`).
    public func fetch(_ paths: [DocumentPath], collections: [CollectionPath] = []) throws -> Fetched {
        try reader.store.fetch(paths, collections: collections)
    }

    /// The documents matching a query, in its order.
    public func getDocuments(_ query: Query) throws -> [DocumentSnapshot] { try reader.store.getDocuments(query) }

    /// How many documents match a query (its limit applies).
    public func count(_ query: Query) throws -> Int { try reader.store.count(query) }

    /// How a query would be read: which index, and the database's plan.
    public func explain(_ query: Query) throws -> QueryExplanation { try reader.store.explain(query) }

    /// The declared indexes.
    public func indexes() throws -> [IndexDefinition] { try reader.store.indexes() }

    /// The newest change sequence token.
    public func currentToken() throws -> Int64 { try reader.store.currentToken() }

    /// Changes after `token` and the time of the oldest (`DocumentStore.backlog`).
    public func backlog(after token: Int64) throws -> (changes: Int64, oldest: Timestamp?) {
        try reader.store.backlog(after: token)
    }

    /// Changed documents after `token` to send upstream (`DocumentStore.outbox`).
    public func outbox(after token: Int64, limit: Int, include: (DocumentPath) -> Bool = { _ in true }) throws -> Outbox
    {
        try reader.store.outbox(after: token, limit: limit, include: include)
    }

    /// A replication checkpoint (`DocumentStore.checkpoint`).
    public func checkpoint(_ name: String) throws -> Int64 { try reader.store.checkpoint(name) }

    /// A resuming process's saved position (`DocumentStore.savedPosition`).
    public func savedPosition(_ name: String) throws -> Int64? { try reader.store.savedPosition(name) }

    /// The database's own integrity check: "ok", or what it found.
    public func integrityCheck() throws -> String { try reader.store.integrityCheck() }

    /// Every document in scope, in order (`DocumentStore.export`).
    public func export(_ scope: ExportScope, _ body: (DocumentSnapshot) throws -> Void) throws {
        try reader.store.export(scope, body)
    }

    /// Index entries in a range (`DocumentStore.indexEntries`).
    public func indexEntries(
        _ definition: IndexDefinition,
        in collection: CollectionPath,
        from lower: Value,
        through upper: Value,
        paths: Bool = true
    ) throws -> [IndexEntry] {
        try reader.store.indexEntries(definition, in: collection, from: lower, through: upper, paths: paths)
    }

    /// A collection group's index entries for one value in a range (`DocumentStore.groupIndexEntries`).
    public func groupIndexEntries(
        _ definition: IndexDefinition,
        equal: Value,
        from lower: Value,
        through upper: Value
    ) throws -> [IndexEntry] {
        try reader.store.groupIndexEntries(definition, equal: equal, from: lower, through: upper)
    }
}

extension StoreWriter {
    /// Writes a whole document, replacing what was there; with `merge`, only the given fields.
    public func set(_ path: DocumentPath, _ data: DocumentData, merge: Bool = false) throws {
        try store.set(path, data, merge: merge)
    }

    /// Writes a new document; fails with `alreadyExists` if one is there.
    public func create(_ path: DocumentPath, _ data: DocumentData) throws { try store.create(path, data) }

    /// Replaces the values at field paths; fails with `notFound` when there is no document.
    public func update(_ path: DocumentPath, _ fields: [FieldPath: Value]) throws { try store.update(path, fields) }

    /// Deletes a document (nothing happens when there is none).
    public func delete(_ path: DocumentPath) throws { try store.delete(path) }

    /// Adds a document with a new random id and returns its path.
    @discardableResult
    public func add(_ collection: CollectionPath, _ data: DocumentData) throws -> DocumentPath {
        try store.add(collection, data)
    }

    /// Applies every write of a batch atomically: all of them or none.
    public func commit(_ batch: WriteBatch) throws { try store.commit(batch) }

    /// Runs `body` as a transaction (`DocumentStore.runTransaction`).
    public func runTransaction<T>(_ body: (Transaction) throws -> T) throws -> T { try store.runTransaction(body) }

    /// Keeps a replication checkpoint.
    public func setCheckpoint(_ name: String, _ value: Int64) throws { try store.setCheckpoint(name, value) }

    /// Keeps a resuming process's position.
    public func savePosition(_ name: String, _ value: Int64) throws { try store.savePosition(name, value) }

    /// Applies documents replicated from another store (`DocumentStore.applyReplica`).
    public func applyReplica(
        _ entries: [Replica],
        also: WriteBatch = WriteBatch(),
        sequence: ReplicaSequence? = nil
    ) throws -> ReplicaResult {
        try store.applyReplica(entries, also: also, sequence: sequence)
    }

    /// Deletes a collection group's documents older than a cutoff (`DocumentStore.purge`).
    @discardableResult
    public func purge(
        collectionGroup: String,
        field: FieldPath,
        olderThan cutoff: Timestamp,
        keepingChangesAfter acknowledged: Int64? = nil,
        batchSize: Int = 500,
        progress: ((Int) -> Void)? = nil
    ) throws -> Int {
        try store.purge(
            collectionGroup: collectionGroup,
            field: field,
            olderThan: cutoff,
            keepingChangesAfter: acknowledged,
            batchSize: batchSize,
            progress: progress
        )
    }

    /// Deletes change records older than a cutoff (`DocumentStore.pruneChanges`).
    @discardableResult
    public func pruneChanges(olderThan cutoff: Timestamp, keepingAfter acknowledged: Int64 = .max) throws -> Int {
        try store.pruneChanges(olderThan: cutoff, keepingAfter: acknowledged)
    }

    /// Declares an index and fills it (`DocumentStore.declareIndex`).
    public func declareIndex(_ definition: IndexDefinition) throws { try store.declareIndex(definition) }
}

extension DocumentStore {
    /// Runs `body` with the store's reads on one of the store's reader threads, and returns what
    /// it returns: every read from async code goes this way.
    public func reading<T: Sendable>(_ body: @escaping @Sendable (StoreReader) throws -> T) async throws -> T {
        try await onReaderThread { try body(StoreReader(self)) }
    }

    /// Runs `body` with the store's reads and writes on the store's writer thread: writes queue
    /// there, one after another, as they do for the store's one writer connection, and never
    /// hold a cooperative thread while they wait or commit. Cancelling the task does not cancel
    /// the write: what is given to the store is written (a daemon cancelled by SIGTERM writes
    /// what it has buffered this way).
    @discardableResult
    public func writing<T: Sendable>(_ body: @escaping @Sendable (StoreWriter) throws -> T) async throws -> T {
        try await onWriterThread { try body(StoreWriter(self)) }
    }

    /// The command line's reads: `body` runs on the calling thread, which it blocks.
    @_spi(Blocking)
    @available(*, noasync, message: "blocks its thread: use reading { db in … }")
    public func read<T>(_ body: (StoreReader) throws -> T) rethrows -> T { try body(StoreReader(self)) }

    /// The command line's writes: `body` runs on the calling thread, which it blocks.
    @_spi(Blocking)
    @available(*, noasync, message: "blocks its thread: use writing { db in … }")
    @discardableResult
    public func write<T>(_ body: (StoreWriter) throws -> T) rethrows -> T { try body(StoreWriter(self)) }
}

import Foundation
import Logging
import Synchronization

/// A Firestore-like document store in one SQLite file, or in a PostgreSQL database.
///
/// Documents live at paths that alternate collection and document ids
/// (`beacons/b-101/interactions/Xy3…`). Writes are atomic (single writes, batches of any size,
/// and transactions); queries follow Firestore's semantics and use declared indexes; listeners
/// see changes from this process and from any other process that writes the same file.
public final class DocumentStore: Sendable {
    /// How a store is opened.
    public struct Configuration: Sendable {
        /// Reader connections for concurrent reads.
        public var readers = 4
        /// `true`: fsync at every commit. `false`: survive crashes, not power loss.
        public var synchronousCommits = true
        /// The clock for server timestamps and change times.
        public var clock: @Sendable () -> Timestamp = { Timestamp.now() }
        /// The writer's page cache, MiB: more makes bulk loads into a large store faster
        /// (random inserts into big indexes stop going to disk).
        public var writerCacheMiB = 64
        /// How often a listener checks for commits made by other processes.
        public var crossProcessPollInterval: Duration = .milliseconds(10)

        public init() {}
    }

    /// The database file, or the PostgreSQL URI it was opened with (without a password).
    public let path: String
    /// Whether the store is on PostgreSQL.
    public let isPostgres: Bool
    let pool: any StorePool
    let configuration: Configuration
    let logger: Logger
    let catalog: IndexCatalog
    let observer: ChangeObserver
    /// The threads of the async face (`reading`, `writing`).
    let threads: StoreThreads

    /// Whether `location` names a PostgreSQL database (`postgres://…` or `postgresql://…`).
    public static func isPostgres(_ location: String) -> Bool {
        location.hasPrefix("postgres://") || location.hasPrefix("postgresql://")
    }

    /// A store location as messages may show it: a PostgreSQL URI loses its password
    /// (`postgres://user:secret@host/db` → `postgres://user@host/db`).
    public static func redacted(_ location: String) -> String {
        guard isPostgres(location), let at = location.firstIndex(of: "@"),
            let scheme = location.range(of: "://"), scheme.upperBound < at,
            let colon = location[scheme.upperBound..<at].firstIndex(of: ":")
        else { return location }
        return String(location[..<colon]) + String(location[at...])
    }

    /// Opens a PostgreSQL store's pool: a URI, the readers, synchronous commits, a log.
    package typealias PostgresOpener =
        @Sendable (_ uri: String, _ readers: Int, _ synchronous: Bool, _ log: (String) -> Void) throws -> any StorePool

    /// The PostgreSQL backend, registered by `TracerStorePostgres` (`PostgresBackend.enable()`):
    /// the engine does not link libpq, so that a build without that module has none.
    private static let postgres = Mutex<PostgresOpener?>(nil)

    package static func register(postgres opener: @escaping PostgresOpener) {
        postgres.withLock { $0 = opener }
    }

    /// Opens (creating if needed) the store at `path`: a SQLite file, or a PostgreSQL database
    /// named by a libpq URI (`postgres://USER@HOST:PORT/DB`, `?host=/socket/dir` included), whose
    /// tables are made in the connection's current schema.
    public init(path: String, configuration: Configuration = Configuration(), logger: Logger? = nil) throws {
        self.configuration = configuration
        let logger = logger ?? Logger(label: "tracer.store")
        self.logger = logger
        if Self.isPostgres(path) {
            self.isPostgres = true
            self.path = Self.redacted(path)
            guard let open = Self.postgres.withLock({ $0 }) else {
                throw StoreError(
                    .postgres,
                    "this build of tracer has no PostgreSQL backend (built without its PostgreSQL trait): give a SQLite file, or use a build with it",
                    context: self.path
                )
            }
            self.pool = try open(path, configuration.readers, configuration.synchronousCommits) {
                logger.notice("\($0)")
            }
        } else {
            self.isPostgres = false
            self.path = path
            let directory = (path as NSString).deletingLastPathComponent
            if !directory.isEmpty {
                try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            }
            self.pool = try ConnectionPool(
                path: path,
                readers: configuration.readers,
                durability: configuration.synchronousCommits ? .full : .normal,
                writerCacheKiB: max(1, configuration.writerCacheMiB) * 1024,
                setUp: { db in try Schema.setUp(db, log: { logger.notice("\($0)") }) }
            )
        }
        self.threads = StoreThreads(readers: configuration.readers)
        let catalog = IndexCatalog()
        self.catalog = catalog
        self.observer = ChangeObserver(
            pool: pool,
            catalog: catalog,
            pollInterval: configuration.crossProcessPollInterval
        )
    }

    /// Whether `close()` has begun.
    private let closed = Atomic<Bool>(false)

    /// Releases what the store runs: lets every write already given to `writing` commit, then
    /// stops the store's reader and writer threads and its listeners' thread and waits for them
    /// to end, and closes the pool (on PostgreSQL, waiting for its LISTEN thread to end too,
    /// within 250 ms). Afterwards every read and write fails with `storeGone`. The server and the
    /// daemon close their store on every way out; a store released without it (a command's, at
    /// exit) stops its threads without waiting. Closing twice does nothing more.
    public func close() async {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        await threads.close()
        await observer.close()
        await pool.finish()
    }

    /// Whether `close()` has begun.
    public var isClosed: Bool { closed.load(ordering: .acquiring) }

    deinit {
        guard !isClosed else { return }
        threads.shutdown()
        observer.stop()
        pool.close()
    }

    // MARK: Reads

    /// The document at `path` (a snapshot whose `exists` is false when there is none).
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func get(_ path: DocumentPath) throws -> DocumentSnapshot {
        // One statement (with the parent's id interned, which never changes): no transaction.
        try pool.readOne { db in try Self.document(path, db) }
    }

    /// The document at `path` as `db` reads it now; one that does not exist when there is none.
    static func document(_ path: DocumentPath, _ db: any StoreConnection) throws -> DocumentSnapshot {
        try snapshot(path, parent: db.parentID(path.parentText), db) ?? DocumentSnapshot(path: path, data: nil)
    }

    /// Documents by path and every document of some collections, read by one statement: one
    /// snapshot, and on PostgreSQL one round trip and one statement for the database to run. A
    /// device's request (its token, its status, its exposures) was four round trips and five
    /// statements on two cores shared with the database, which was the limit (BENCHMARKS.md).
    /// A collection's documents come in the order of their ids.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func fetch(_ paths: [DocumentPath], collections: [CollectionPath] = []) throws -> Fetched {
        guard !paths.isEmpty || !collections.isEmpty else { return Fetched(documents: [], collections: []) }
        return try pool.readOne { db in
            let asked = paths.map(\.parentText) + collections.map(\.description)
            let fetch = FetchStatement(paths: paths, parents: asked, known: db.parents.ids)
            let s = try db.statement(fetch.sql)
            defer { s.reset() }
            fetch.bind(s)
            var documents = paths.map { DocumentSnapshot(path: $0, data: nil) }
            var children = collections.map { _ in [DocumentSnapshot]() }
            while try s.step() {
                let i = Int(s.int64(0))
                db.parents.ids[asked[i]] = s.int64(5)  // known from now on: no lookup in the statement
                let path = i < paths.count ? paths[i] : DocumentPath(parent: asked[i], id: s.text(1))
                let fields = try s.withBytes(2) { try DocumentFields.read($0, path: path) }
                let snapshot = DocumentSnapshot(path: path, fields: fields, created: s.int64(3), updated: s.int64(4))
                if i < paths.count {
                    documents[i] = snapshot
                } else {
                    children[i - paths.count].append(snapshot)
                }
            }
            return Fetched(documents: documents, collections: children.map { $0.sorted { $0.path.id < $1.path.id } })
        }
    }

    /// The document at a path given as text.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func get(_ path: String) throws -> DocumentSnapshot {
        try get(DocumentPath(path))
    }

    static let loadSQL = "SELECT data, created, updated FROM documents WHERE parent = ?1 AND id = ?2"

    static func load(_ path: DocumentPath, _ db: any StoreConnection) throws -> StoredDocument? {
        guard let parent = try db.parentID(path.parentText) else { return nil }
        let s = try db.statement(.loadDocument, loadSQL)
        s.bind(1, parent)
        s.bind(2, path.id)
        defer { s.reset() }
        guard try s.step() else { return nil }
        let data = try decode(s, column: 0, path: path)
        return StoredDocument(data: data, created: s.int64(1), updated: s.int64(2))
    }

    /// The documents at `paths` as stored now, keyed by path (`description`); a path with none is
    /// absent. One statement for up to `loadManyChunk` ids of a parent, where `load` is one each:
    /// on PostgreSQL each `load` is a round trip that also ends the write pipeline, and a kiosk's
    /// batch read its documents one by one this way (Tools/bench/campus, BENCHMARKS.md).
    static func loadMany(_ paths: [DocumentPath], _ db: any StoreConnection) throws -> [String: StoredDocument] {
        var byParent: [String: [DocumentPath]] = [:]
        for path in paths { byParent[path.parentText, default: []].append(path) }
        var found: [String: StoredDocument] = [:]
        for (parentText, paths) in byParent {
            guard let parent = try db.parentID(parentText) else { continue }
            let ids = Array(Set(paths.map(\.id)))
            for chunk in stride(from: 0, to: ids.count, by: loadManyChunk) {
                let part = ids[chunk..<min(ids.count, chunk + loadManyChunk)]
                let s = try db.statement(loadManySQL)
                defer { s.reset() }
                s.bind(1, parent)
                // A short chunk repeats its first id: one statement text for every chunk.
                for i in 0..<loadManyChunk { s.bind(Int32(i + 2), part[part.startIndex + (i < part.count ? i : 0)]) }
                while try s.step() {
                    let path = try DocumentPath(parentText + "/" + s.text(0))
                    found[path.description] = StoredDocument(
                        data: try decode(s, column: 1, path: path),
                        created: s.int64(2),
                        updated: s.int64(3)
                    )
                }
            }
        }
        return found
    }

    static let loadManyChunk = 64
    static let loadManySQL =
        "SELECT id, data, created, updated FROM documents WHERE parent = ?1 AND id IN ("
        + (2...(loadManyChunk + 1)).map { "?\($0)" }.joined(separator: ", ") + ")"

    /// The document at `path` under the interned parent `parent` as read now, its fields decoded
    /// when they are used; nil when there is none.
    static func snapshot(_ path: DocumentPath, parent: Int64?, _ db: any StoreConnection) throws -> DocumentSnapshot? {
        guard let parent else { return nil }
        let s = try db.statement(.loadDocument, loadSQL)
        s.bind(1, parent)
        s.bind(2, path.id)
        defer { s.reset() }
        guard try s.step() else { return nil }
        let fields = try s.withBytes(0) { try DocumentFields.read($0, path: path) }
        return DocumentSnapshot(path: path, fields: fields, created: s.int64(1), updated: s.int64(2))
    }

    static func decode(_ s: any StoreStatement, column: Int32, path: DocumentPath) throws -> DocumentData {
        try s.withBytes(column) { try DocumentCodec.decode($0, path: path) }
    }

    // MARK: Writes

    /// Writes a whole document, replacing what was there; with `merge`, only the given fields.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func set(_ path: DocumentPath, _ data: DocumentData, merge: Bool = false) throws {
        var batch = WriteBatch()
        batch.set(path, data, merge: merge)
        try commit(batch)
    }

    /// Writes a new document; fails with `alreadyExists` if one is there.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func create(_ path: DocumentPath, _ data: DocumentData) throws {
        var batch = WriteBatch()
        batch.create(path, data)
        try commit(batch)
    }

    /// Replaces the values at field paths; fails with `notFound` when there is no document.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func update(_ path: DocumentPath, _ fields: [FieldPath: Value]) throws {
        var batch = WriteBatch()
        batch.update(path, fields)
        try commit(batch)
    }

    /// Deletes a document (nothing happens when there is none). Subcollections stay, as in Firestore.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func delete(_ path: DocumentPath) throws {
        var batch = WriteBatch()
        batch.delete(path)
        try commit(batch)
    }

    /// Adds a document with a new random id and returns its path.
    @discardableResult
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func add(_ collection: CollectionPath, _ data: DocumentData) throws -> DocumentPath {
        let path = collection.newDocument()
        try create(path, data)
        return path
    }

    /// Applies every write of a batch atomically: all of them or none.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func commit(_ batch: WriteBatch) throws {
        guard !batch.operations.isEmpty else { return }
        func apply(optimistic: Bool) throws {
            try pool.write { db in
                let writer = try DocumentWriter(
                    db: db,
                    now: configuration.clock(),
                    catalog: catalog,
                    optimistic: optimistic
                )
                for op in batch.operations { try writer.apply(op) }
                try writer.finish()
            }
        }
        do {
            try apply(optimistic: true)
        } catch is DocumentWriter.Conflicted {
            try apply(optimistic: false)
        }
        observer.localCommit()
    }

    /// Runs `body` as a transaction: its reads see one consistent state, its writes apply together
    /// when it returns, and nothing applies if it throws.
    ///
    /// The transaction holds the store's write lock from its start, so it never conflicts with
    /// another writer; when another process holds the lock too long it is retried, and fails with
    /// `aborted` after five attempts.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func runTransaction<T>(_ body: (Transaction) throws -> T) throws -> T {
        let result = try pool.write { db in
            let writer = try DocumentWriter(db: db, now: configuration.clock(), catalog: catalog)
            let transaction = Transaction(writer: writer)
            let result = try body(transaction)
            transaction.finished = true
            for op in transaction.batch.operations { try writer.apply(op) }
            return result
        }
        observer.localCommit()
        return result
    }

    /// The newest change sequence token: a listener resumed from it misses nothing after it.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func currentToken() throws -> Int64 {
        try pool.readOne { db in try db.scalar("SELECT coalesce(max(seq), 0) FROM changes") ?? 0 }
    }
}

/// `DocumentStore.fetch`'s statement: a `SELECT` for each document or collection asked for,
/// joined by `UNION ALL`, whose first column says which was asked. A parent's id the connection
/// knows is a parameter; one it does not is looked up inside the statement (a collection never
/// written has none, and gives no rows), not by a round trip before it.
struct FetchStatement {
    enum Parameter {
        case id(Int64)
        case text(String)
    }

    let sql: String
    let parameters: [Parameter]

    init(paths: [DocumentPath], parents: [String], known: [String: Int64]) {
        var parameters: [Parameter] = []
        var selects: [String] = []
        for (i, parent) in parents.enumerated() {
            var select = "SELECT \(i), id, data, created, updated, parent FROM documents WHERE parent = "
            if let id = known[parent] {
                parameters.append(.id(id))
                select += "?\(parameters.count)"
            } else {
                parameters.append(.text(parent))
                select += "(SELECT id FROM parents WHERE path = ?\(parameters.count))"
            }
            if i < paths.count {
                parameters.append(.text(paths[i].id))
                select += " AND id = ?\(parameters.count)"
            }
            selects.append(select)
        }
        self.sql = selects.joined(separator: " UNION ALL ")
        self.parameters = parameters
    }

    func bind(_ s: any StoreStatement) {
        for (i, p) in parameters.enumerated() {
            switch p {
            case .id(let id): s.bind(Int32(i + 1), id)
            case .text(let text): s.bind(Int32(i + 1), text)
            }
        }
    }
}

/// What `DocumentStore.fetch` read: the documents in the order their paths were given (one
/// whose `exists` is false where there is none), and each collection's documents.
public struct Fetched: Sendable {
    public let documents: [DocumentSnapshot]
    public let collections: [[DocumentSnapshot]]

    public init(documents: [DocumentSnapshot], collections: [[DocumentSnapshot]]) {
        self.documents = documents
        self.collections = collections
    }
}

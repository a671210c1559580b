/// Writes to apply together, atomically. Any number of operations (no 500 cap).
public struct WriteBatch: Sendable {
    enum Operation: Sendable {
        case set(DocumentPath, DocumentData, merge: Bool)
        case create(DocumentPath, DocumentData)
        case update(DocumentPath, [FieldPath: Value])
        case delete(DocumentPath)
    }

    private(set) var operations: [Operation] = []

    /// An empty batch.
    public init() {}

    /// The number of writes in the batch.
    public var count: Int { operations.count }

    /// Writes a whole document; with `merge`, only the given fields.
    public mutating func set(_ path: DocumentPath, _ data: DocumentData, merge: Bool = false) {
        operations.append(.set(path, data, merge: merge))
    }

    /// Writes a document that must not exist yet.
    public mutating func create(_ path: DocumentPath, _ data: DocumentData) {
        operations.append(.create(path, data))
    }

    /// Replaces the values at field paths of a document that must exist.
    public mutating func update(_ path: DocumentPath, _ fields: [FieldPath: Value]) {
        operations.append(.update(path, fields))
    }

    /// Deletes a document.
    public mutating func delete(_ path: DocumentPath) {
        operations.append(.delete(path))
    }
}

/// A transaction's handle: reads first, then writes, applied together when the body returns.
public final class Transaction {
    let writer: DocumentWriter
    var batch = WriteBatch()
    var finished = false

    init(writer: DocumentWriter) {
        self.writer = writer
    }

    /// Reads a document. All reads must come before the first write, as in Firestore.
    public func get(_ path: DocumentPath) throws -> DocumentSnapshot {
        try checkReadable()
        return DocumentSnapshot(path: path, stored: try DocumentStore.load(path, writer.db))
    }

    /// Runs a query inside the transaction. All reads must come before the first write.
    public func getDocuments(_ query: Query) throws -> [DocumentSnapshot] {
        try checkReadable()
        return try QueryEngine(db: writer.db, catalog: writer.catalog).run(query)
    }

    public func set(_ path: DocumentPath, _ data: DocumentData, merge: Bool = false) {
        batch.set(path, data, merge: merge)
    }

    public func create(_ path: DocumentPath, _ data: DocumentData) {
        batch.create(path, data)
    }

    public func update(_ path: DocumentPath, _ fields: [FieldPath: Value]) {
        batch.update(path, fields)
    }

    public func delete(_ path: DocumentPath) {
        batch.delete(path)
    }

    private func checkReadable() throws {
        if finished { throw StoreError(.invalidQuery, "the transaction has ended") }
        if batch.count > 0 {
            throw StoreError(.invalidQuery, "a transaction must do all its reads before its writes")
        }
    }
}

/// Applies write operations inside one open write transaction.
final class DocumentWriter {
    static let insertEntrySQL = """
        INSERT INTO index_entries (idx, key, parent, doc) VALUES (?1, ?2, ?3, ?4)
        ON CONFLICT (idx, key) DO UPDATE SET parent = excluded.parent, doc = excluded.doc
        """

    let db: any StoreConnection
    let now: Timestamp
    let catalog: IndexCatalog
    /// Whether new documents are written without waiting to learn that their paths were free
    /// (`DocumentStore.commit` on PostgreSQL): see `Conflicted`.
    let optimistic: Bool
    /// Whether an optimistic insert found its path taken: the transaction must be done again.
    private var conflicted = false

    /// An optimistic batch met a document already at a path it wrote as new (a batch that writes
    /// a path twice, or an id a kiosk replayed): its transaction is rolled back and the batch done
    /// again one statement at a time, which writes it as it should.
    struct Conflicted: Error {}
    /// The next change's sequence number. Writers are serialised (SQLite's write lock, an
    /// advisory lock on PostgreSQL), so numbers are drawn and committed in one order, with no gaps.
    private var nextSeq: Int64
    /// The last change this transaction logged (0 when none).
    private(set) var lastSeq: Int64 = 0
    // Prepared once per transaction: a batch of thousands of writes looks none of them up again.
    private let insertChange: any StoreStatement
    private let insertNew: any StoreStatement
    private let upsert: any StoreStatement
    private let deleteDocument: any StoreStatement
    private let insertEntry: any StoreStatement
    private let deleteEntry: any StoreStatement

    /// `optimistic` (where the connection pipelines) sends each new document's insert without
    /// waiting for its answer; `finish()` then says whether all of them were new.
    init(db: any StoreConnection, now: Timestamp, catalog: IndexCatalog, optimistic: Bool = false) throws {
        self.db = db
        self.now = now
        self.catalog = catalog
        self.optimistic = optimistic && db.pipelines
        try catalog.refresh(db)
        nextSeq = (try db.scalar("SELECT max(seq) FROM changes") ?? 0) + 1
        insertChange = try db.statement("INSERT INTO changes (seq, parent, id, op, ts) VALUES (?5, ?1, ?2, ?3, ?4)")
        insertNew = try db.statement(
            """
            INSERT INTO documents (parent, id, data, created, updated) VALUES (?1, ?2, ?3, ?4, ?4)
            ON CONFLICT (parent, id) DO NOTHING
            """
        )
        upsert = try db.statement(
            """
            INSERT INTO documents (parent, id, data, created, updated) VALUES (?1, ?2, ?3, ?4, ?5)
            ON CONFLICT (parent, id) DO UPDATE SET data = excluded.data, updated = excluded.updated
            """
        )
        deleteDocument = try db.statement("DELETE FROM documents WHERE parent = ?1 AND id = ?2")
        insertEntry = try db.statement(Self.insertEntrySQL)
        deleteEntry = try db.statement("DELETE FROM index_entries WHERE idx = ?1 AND key = ?2")
    }

    func apply(_ op: WriteBatch.Operation) throws {
        try conflictChecked { try write(op) }
    }

    /// Runs one operation's writes; a failure that an earlier optimistic insert's conflict may
    /// have caused (this operation read a document that insert left as it was) is `Conflicted`:
    /// the batch again.
    private func conflictChecked(_ body: () throws -> Void) throws {
        do {
            try body()
        } catch {
            if optimistic {
                _ = try? db.flush()
                if conflicted { throw Conflicted() }
            }
            throw error
        }
    }

    /// Waits for every statement sent; throws `Conflicted` when an optimistic insert met a document.
    func finish() throws {
        try db.flush()
        if conflicted { throw Conflicted() }
    }

    private func write(_ op: WriteBatch.Operation) throws {
        switch op {
        case .set(let path, let data, merge: false) where !WriteRules.dependsOnStoredValues(data):
            // The common case, a new document with a fresh id: insert first, read only on conflict.
            let new = try WriteRules.set(data, old: nil, now: now, path: path)
            if try insertIfAbsent(path, new) { return }
            try put(path, new, old: try DocumentStore.load(path, db))
        case .set(let path, let data, let merge):
            let old = try DocumentStore.load(path, db)
            let new =
                merge
                ? try WriteRules.merge(data, into: old?.data, now: now, path: path)
                : try WriteRules.set(data, old: old?.data, now: now, path: path)
            try put(path, new, old: old)
        case .create(let path, let data):
            let new = try WriteRules.set(data, old: nil, now: now, path: path)
            if try !insertIfAbsent(path, new) {
                throw StoreError(.alreadyExists, "the document already exists", context: path.description)
            }
        case .update(let path, let fields):
            guard let old = try DocumentStore.load(path, db) else {
                throw StoreError(.notFound, "no document to update", context: path.description)
            }
            try put(path, try WriteRules.update(fields, old: old.data, now: now, path: path), old: old)
        case .delete(let path):
            guard let old = try DocumentStore.load(path, db) else { return }
            try remove(path, old: old)
        }
    }

    /// A full `set` (or, for nil, a delete) of a path whose stored document the caller read in
    /// this transaction (`old`, nil when there was none): nothing is read again, and a new
    /// document's insert goes out without waiting where the writer is optimistic.
    func replace(_ path: DocumentPath, with data: DocumentData?, old: StoredDocument?) throws {
        try conflictChecked {
            guard let data else {
                if let old { try remove(path, old: old) }
                return
            }
            guard !WriteRules.dependsOnStoredValues(data) else { return try write(.set(path, data, merge: false)) }
            let new = try WriteRules.set(data, old: old?.data, now: now, path: path)
            if let old { return try put(path, new, old: old) }
            if try insertIfAbsent(path, new) { return }
            try put(path, new, old: try DocumentStore.load(path, db))
        }
    }

    private func logChange(_ path: DocumentPath, parent: Int64, _ op: ChangeOp) throws {
        let s = insertChange
        s.reset()
        s.bind(1, parent)
        s.bind(2, path.id)
        s.bind(3, op.rawValue)
        s.bind(4, now.microseconds)
        s.bind(5, nextSeq)
        try db.send(s, changed: nil)
        lastSeq = nextSeq
        nextSeq += 1
    }

    /// Inserts a document that is not there yet, then its change and index entries; false (and
    /// nothing written) if one is there.
    ///
    /// An optimistic writer does not wait to learn whether the path was free: the insert and what
    /// follows go out in one pipeline, and it returns true. Fresh random ids are free but for one
    /// chance in 62²⁰; when one is not, `finish()` throws `Conflicted`.
    private func insertIfAbsent(_ path: DocumentPath, _ data: DocumentData) throws -> Bool {
        let encoded = try WriteRules.stored(data, path: path)
        let parent = try db.internParent(path.parentText, collection: path.collectionID)
        let s = insertNew
        s.reset()
        s.bind(1, parent)
        s.bind(2, path.id)
        s.bindBlob(3, encoded)
        s.bind(4, now.microseconds)
        if optimistic {
            try db.send(s) { [unowned self] inserted in if inserted != 1 { self.conflicted = true } }
        } else {
            try s.run()
            guard db.changes == 1 else { return false }
        }
        try logChange(path, parent: parent, .created)
        try updateIndexes(path, parent: parent, old: nil, new: data)
        return true
    }

    /// Writes a document copied from another store as it was there, its times included.
    func restore(_ path: DocumentPath, _ data: DocumentData, created: Timestamp, updated: Timestamp) throws {
        let old = try DocumentStore.load(path, db)
        try put(path, data, old: old, times: (created.microseconds, updated.microseconds))
    }

    private func put(
        _ path: DocumentPath,
        _ data: DocumentData,
        old: StoredDocument?,
        times: (created: Int64, updated: Int64)? = nil
    ) throws {
        let encoded = try WriteRules.stored(data, path: path)
        let parent = try db.internParent(path.parentText, collection: path.collectionID)
        let s = upsert
        s.reset()
        s.bind(1, parent)
        s.bind(2, path.id)
        s.bindBlob(3, encoded)
        s.bind(4, times?.created ?? old?.created ?? now.microseconds)
        s.bind(5, times?.updated ?? now.microseconds)
        try db.send(s, changed: nil)
        try logChange(path, parent: parent, old == nil ? .created : .updated)
        try updateIndexes(path, parent: parent, old: old?.data, new: data)
    }

    private func remove(_ path: DocumentPath, old: StoredDocument) throws {
        let parent = try db.internParent(path.parentText, collection: path.collectionID)
        let s = deleteDocument
        s.reset()
        s.bind(1, parent)
        s.bind(2, path.id)
        try db.send(s, changed: nil)
        try logChange(path, parent: parent, .deleted)
        try updateIndexes(path, parent: parent, old: old.data, new: nil)
    }

    private func updateIndexes(_ path: DocumentPath, parent: Int64, old: DocumentData?, new: DocumentData?) throws {
        for index in catalog.cached(for: path.collectionID) {
            let oldKey = old.flatMap { index.key(for: path, data: $0) }
            let newKey = new.flatMap { index.key(for: path, data: $0) }
            if oldKey == newKey { continue }
            if let oldKey {
                deleteEntry.reset()
                deleteEntry.bind(1, index.id)
                deleteEntry.bindBlob(2, oldKey)
                try db.send(deleteEntry, changed: nil)
            }
            if let newKey {
                insertEntry.reset()
                insertEntry.bind(1, index.id)
                insertEntry.bindBlob(2, newKey)
                insertEntry.bind(3, parent)
                insertEntry.bind(4, path.id)
                try db.send(insertEntry, changed: nil)
            }
        }
    }
}

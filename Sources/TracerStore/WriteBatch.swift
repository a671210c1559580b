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
    let db: SQLiteConnection
    let now: Timestamp
    let catalog: IndexCatalog

    init(db: SQLiteConnection, now: Timestamp, catalog: IndexCatalog) throws {
        self.db = db
        self.now = now
        self.catalog = catalog
        try catalog.refresh(db)
    }

    func apply(_ op: WriteBatch.Operation) throws {
        switch op {
        case .set(let path, let data, let merge):
            let old = try DocumentStore.load(path, db)
            let new =
                merge
                ? try WriteRules.merge(data, into: old?.data, now: now, path: path)
                : try WriteRules.set(data, old: old?.data, now: now, path: path)
            try put(path, new, old: old)
        case .create(let path, let data):
            let old = try DocumentStore.load(path, db)
            if old != nil { throw StoreError(.alreadyExists, "the document already exists", context: path.description) }
            try put(path, try WriteRules.set(data, old: nil, now: now, path: path), old: nil)
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

    private func logChange(_ path: DocumentPath, _ op: ChangeOp) throws -> Int64 {
        let s = try db.statement("INSERT INTO changes (parent, id, op, ts) VALUES (?1, ?2, ?3, ?4)")
        s.bind(1, path.parent.description)
        s.bind(2, path.id)
        s.bind(3, op.rawValue)
        s.bind(4, now.microseconds)
        try s.run()
        return db.lastInsertRowID
    }

    private func put(_ path: DocumentPath, _ data: DocumentData, old: StoredDocument?) throws {
        try WriteRules.checkSize(data, path: path)
        let seq = try logChange(path, old == nil ? .created : .updated)
        let s = try db.statement(
            """
            INSERT INTO documents (collection, parent, id, data, created, updated, seq)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
            ON CONFLICT (collection, parent, id) DO UPDATE SET data = excluded.data, updated = excluded.updated,
                seq = excluded.seq
            """)
        s.bind(1, path.collectionID)
        s.bind(2, path.parent.description)
        s.bind(3, path.id)
        s.bindText(4, JSON.bytes(data))
        s.bind(5, old?.created ?? now.microseconds)
        s.bind(6, now.microseconds)
        s.bind(7, seq)
        try s.run()
        try updateIndexes(path, old: old?.data, new: data)
    }

    private func remove(_ path: DocumentPath, old: StoredDocument) throws {
        _ = try logChange(path, .deleted)
        let s = try db.statement("DELETE FROM documents WHERE collection = ?1 AND parent = ?2 AND id = ?3")
        s.bind(1, path.collectionID)
        s.bind(2, path.parent.description)
        s.bind(3, path.id)
        try s.run()
        try updateIndexes(path, old: old.data, new: nil)
    }

    private func updateIndexes(_ path: DocumentPath, old: DocumentData?, new: DocumentData?) throws {
        for index in try catalog.indexes(for: path.collectionID, db) {
            let oldKey = old.flatMap { index.key(for: path, data: $0) }
            let newKey = new.flatMap { index.key(for: path, data: $0) }
            if oldKey == newKey { continue }
            if let oldKey {
                let d = try db.statement("DELETE FROM index_entries WHERE idx = ?1 AND key = ?2")
                d.bind(1, index.id)
                d.bindBlob(2, oldKey)
                try d.run()
            }
            if let newKey {
                let i = try db.statement("INSERT OR REPLACE INTO index_entries (idx, key, parent, id) VALUES (?1, ?2, ?3, ?4)")
                i.bind(1, index.id)
                i.bindBlob(2, newKey)
                i.bind(3, path.parent.description)
                i.bind(4, path.id)
                try i.run()
            }
        }
    }
}

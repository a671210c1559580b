import Foundation

/// The store's tables. A document's collection path is interned once in `parents` and its rows
/// carry the integer; documents keep their fields in `DocumentCodec`'s binary form; index entries
/// carry order-preserving keys (`IndexKey`) so that every query is bound parameters over fixed SQL.
///
/// Schema 1 (tracer before schema 2) kept the parent path as text in every document and change
/// row, and documents as JSON text: `setUp` upgrades such a store in place, in one transaction.
package enum Schema {
    package static let version: Int64 = 2

    static let create = """
        CREATE TABLE IF NOT EXISTS parents (
            id INTEGER PRIMARY KEY,     -- what documents and changes carry
            path TEXT NOT NULL UNIQUE,  -- the collection path
            collection TEXT NOT NULL    -- its last segment: the collection id
        );
        CREATE INDEX IF NOT EXISTS parents_by_collection ON parents (collection);
        CREATE TABLE IF NOT EXISTS documents (
            parent INTEGER NOT NULL,    -- parents.id
            id TEXT NOT NULL,
            data BLOB NOT NULL,         -- DocumentCodec's binary form
            created INTEGER NOT NULL,   -- microseconds since the epoch
            updated INTEGER NOT NULL,
            PRIMARY KEY (parent, id)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS changes (
            seq INTEGER PRIMARY KEY,    -- the sequence token listeners resume from
            parent INTEGER NOT NULL,    -- parents.id
            id TEXT NOT NULL,
            op INTEGER NOT NULL,        -- 1 created, 2 updated, 3 deleted
            ts INTEGER NOT NULL
        );
        CREATE TABLE IF NOT EXISTS indexes (
            id INTEGER PRIMARY KEY,
            collection TEXT NOT NULL,
            scope INTEGER NOT NULL,     -- 0 one collection, 1 the collection group
            fields TEXT NOT NULL,
            UNIQUE (collection, scope, fields)
        );
        CREATE TABLE IF NOT EXISTS index_entries (
            idx INTEGER NOT NULL,
            key BLOB NOT NULL,          -- [parent path], field values, document name: see IndexKey
            parent INTEGER NOT NULL,    -- the document's key, so that a query's scan joins its
            doc TEXT NOT NULL,          -- documents inside SQLite (QueryEngine)
            PRIMARY KEY (idx, key)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
        INSERT OR IGNORE INTO meta VALUES ('catalog', 0);
        """

    /// Creates the tables, or upgrades an older store; `log` hears of an upgrade.
    static func setUp(_ db: SQLiteConnection, log: (String) -> Void) throws {
        let current = try db.scalar("PRAGMA user_version") ?? 0
        if current > version {
            throw StoreError(
                .sqlite,
                "the store was written by a newer tracer (schema \(current), this one knows \(version))",
                context: db.path
            )
        }
        if current == version { return }
        try db.execute("BEGIN IMMEDIATE")
        do {
            // Another process may have upgraded it while this one waited for the lock.
            let now = try db.scalar("PRAGMA user_version") ?? 0
            if now == 1 {
                try upgradeFrom1(db, log: log)
            } else if now == 0 {
                try db.execute(create)
            }
            try db.execute("PRAGMA user_version = \(version)")
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
    }

    /// Schema 1 to 2, inside the caller's transaction: parents interned, documents re-encoded,
    /// the change log kept with its sequence numbers (listeners' and replicas' tokens stay valid),
    /// the declared indexes kept and their entries filled again (they now carry the key of
    /// their document).
    static func upgradeFrom1(_ db: SQLiteConnection, log: (String) -> Void) throws {
        let started = Date()
        let total = try db.scalar("SELECT count(*) FROM documents") ?? 0
        log("upgrading the store from schema 1 to 2 (\(total) documents): parents interned, documents in binary")
        try db.execute(
            """
            ALTER TABLE documents RENAME TO documents_v1;
            ALTER TABLE changes RENAME TO changes_v1;
            DROP TABLE index_entries;
            """
        )
        try db.execute(create)
        let intern = try db.statement("INSERT INTO parents (path, collection) VALUES (?1, ?2)")
        let parents = try db.statement(
            "SELECT parent FROM documents_v1 UNION SELECT parent FROM changes_v1 ORDER BY 1"
        )
        var names: [String] = []
        while try parents.step() { names.append(parents.text(0)) }
        parents.reset()
        for name in names {
            intern.reset()
            intern.bind(1, name)
            intern.bind(2, String(name.split(separator: "/").last ?? ""))
            try intern.run()
        }
        let rows = try db.statement(
            """
            SELECT p.id, d.parent, d.id, d.data, d.created, d.updated
            FROM documents_v1 d JOIN parents p ON p.path = d.parent
            """
        )
        let insert = try db.statement(
            "INSERT INTO documents (parent, id, data, created, updated) VALUES (?1, ?2, ?3, ?4, ?5)"
        )
        var done: Int64 = 0
        while try rows.step() {
            let path = DocumentPath(parent: rows.text(1), id: rows.text(2))
            let fields = try rows.withBytes(3) { try DocumentCodec.decode($0, path: path) }
            insert.reset()
            insert.bind(1, rows.int64(0))
            insert.bind(2, path.id)
            insert.bindBlob(3, DocumentCodec.encode(fields))
            insert.bind(4, rows.int64(4))
            insert.bind(5, rows.int64(5))
            try insert.run()
            done += 1
            if done % 100_000 == 0 { log("upgrading: \(done) of \(total) documents") }
        }
        rows.reset()
        try db.execute(
            """
            INSERT INTO changes (seq, parent, id, op, ts)
                SELECT c.seq, p.id, c.id, c.op, c.ts FROM changes_v1 c JOIN parents p ON p.path = c.parent;
            DROP TABLE documents_v1;
            DROP TABLE changes_v1;
            """
        )
        // Index entries now carry their document's key: each declared index is filled again.
        let indexes = try db.statement("SELECT id, collection, scope, fields FROM indexes ORDER BY id")
        var declared: [StoredIndex] = []
        while try indexes.step() {
            let definition = IndexDefinition(
                collectionID: indexes.text(1),
                scope: IndexDefinition.Scope(rawValue: indexes.int64(2)) ?? .collection,
                fields: try IndexDefinition.parseFields(indexes.text(3))
            )
            declared.append(StoredIndex(id: indexes.int64(0), definition: definition))
        }
        indexes.reset()
        for index in declared {
            let entries = try IndexCatalog.fill(index, db)
            log("upgrading: index \(index.definition) filled again (\(entries) entries)")
        }
        log("upgraded the store to schema 2 in \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
    }
}

/// A stored document's row.
struct StoredDocument {
    var data: DocumentData
    var created: Int64
    var updated: Int64
}

enum ChangeOp: Int64 {
    case created = 1
    case updated = 2
    case deleted = 3
}

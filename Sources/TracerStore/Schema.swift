/// The store's tables. Documents keep their JSON text in `data`; index entries carry
/// order-preserving keys (`IndexKey`) so that every query is bound parameters over fixed SQL.
enum Schema {
    static let version: Int64 = 1

    static let create = """
        CREATE TABLE IF NOT EXISTS documents (
            collection TEXT NOT NULL,   -- the collection id: the parent path's last segment
            parent TEXT NOT NULL,       -- the collection path
            id TEXT NOT NULL,
            data TEXT NOT NULL,         -- JSON, with tagged timestamps and bytes
            created INTEGER NOT NULL,   -- microseconds since the epoch
            updated INTEGER NOT NULL,
            PRIMARY KEY (collection, parent, id)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS changes (
            seq INTEGER PRIMARY KEY,    -- the sequence token listeners resume from
            parent TEXT NOT NULL,
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
            PRIMARY KEY (idx, key)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
        INSERT OR IGNORE INTO meta VALUES ('catalog', 0);
        """

    static func setUp(_ db: SQLiteConnection) throws {
        let current = try db.scalar("PRAGMA user_version") ?? 0
        if current > version {
            throw StoreError(
                .sqlite,
                "the store was written by a newer tracer (schema \(current), this one knows \(version))",
                context: db.path
            )
        }
        try db.execute("BEGIN IMMEDIATE")
        do {
            try db.execute(create)
            try db.execute("PRAGMA user_version = \(version)")
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
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

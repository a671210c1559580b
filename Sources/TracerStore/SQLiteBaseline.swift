/// The same rows written and read with plain prepared statements on the sqlite3 C API, with
/// the same pragmas and the same indexes as the store: the baseline the store's benchmark
/// measures itself against in the same run. Not part of the store's API.
@_spi(Benchmarks) public final class SQLiteBaseline {
    private let db: SQLiteConnection

    /// A fresh database with the interactions table and the indexes the store's benchmark declares.
    public init(path: String, synchronousCommits: Bool = true) throws {
        db = try SQLiteConnection(path: path)
        try db.execute(
            """
            PRAGMA journal_mode = WAL;
            PRAGMA synchronous = \(synchronousCommits ? "FULL" : "NORMAL");
            PRAGMA cache_size = -65536;
            CREATE TABLE IF NOT EXISTS interactions (
                parent TEXT NOT NULL, id TEXT NOT NULL, data TEXT NOT NULL,
                device_id TEXT NOT NULL, start INTEGER NOT NULL,
                PRIMARY KEY (parent, id)) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS interactions_parent_start ON interactions (parent, start);
            CREATE INDEX IF NOT EXISTS interactions_device_start ON interactions (device_id, start);
            """
        )
    }

    /// One row: a document already encoded as JSON, and the values its indexes hold.
    public struct Row: Sendable {
        public var parent: String
        public var id: String
        public var json: String
        public var deviceID: String
        public var start: Int64

        public init(parent: String, id: String, json: String, deviceID: String, start: Int64) {
            self.parent = parent
            self.id = id
            self.json = json
            self.deviceID = deviceID
            self.start = start
        }
    }

    /// Inserts rows in one transaction.
    public func insert(_ rows: [Row]) throws {
        try db.execute("BEGIN IMMEDIATE")
        let s = try db.statement(
            "INSERT INTO interactions (parent, id, data, device_id, start) VALUES (?1, ?2, ?3, ?4, ?5)"
        )
        for row in rows {
            s.reset()
            s.bind(1, row.parent)
            s.bind(2, row.id)
            s.bind(3, row.json)
            s.bind(4, row.deviceID)
            s.bind(5, row.start)
            try s.run()
        }
        try db.execute("COMMIT")
    }

    /// The documents of one parent in a time window; returns how many, having read each one's text.
    public func window(parent: String, from: Int64, to: Int64) throws -> Int {
        let s = try db.statement(
            "SELECT data FROM interactions WHERE parent = ?1 AND start >= ?2 AND start < ?3 ORDER BY start"
        )
        defer { s.reset() }
        s.bind(1, parent)
        s.bind(2, from)
        s.bind(3, to)
        var n = 0
        while try s.step() { n += s.text(0).utf8.count > 0 ? 1 : 0 }
        return n
    }

    /// One document's text by its key; returns its length.
    public func point(parent: String, id: String) throws -> Int {
        let s = try db.statement("SELECT data FROM interactions WHERE parent = ?1 AND id = ?2")
        defer { s.reset() }
        s.bind(1, parent)
        s.bind(2, id)
        return try s.step() ? s.text(0).utf8.count : 0
    }
}

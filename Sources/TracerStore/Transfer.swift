import Foundation

/// What `export` covers.
public enum ExportScope: Sendable {
    /// Every document in the store.
    case all
    /// A collection's documents and everything beneath them.
    case collection(CollectionPath)
    /// A document and everything beneath it.
    case document(DocumentPath)
    /// Every document of every collection with this id.
    case group(String)
}

extension DocumentStore {
    /// Calls `body` with every document in `scope`, in path order, from one consistent snapshot.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func export(_ scope: ExportScope, _ body: (DocumentSnapshot) throws -> Void) throws {
        try pool.read { db in
            // The collections in scope, then each one's documents in pages by id (PostgreSQL
            // hands a statement's rows over all at once: a whole store would be held in memory).
            let s: any StoreStatement
            var only: (parent: String, id: String)?
            switch scope {
            case .all:
                s = try db.statement("SELECT id, path FROM parents ORDER BY path")
            case .group(let id):
                s = try db.statement("SELECT id, path FROM parents WHERE collection = ?1 ORDER BY path")
                s.bind(1, id)
            case .collection(let c):
                // The collection itself, and anything whose parent path starts with "c/".
                s = try db.statement(
                    "SELECT id, path FROM parents WHERE path = ?1 OR (path >= ?2 AND path < ?3) ORDER BY path"
                )
                s.bind(1, c.description)
                s.bind(2, c.description + "/")
                s.bind(3, c.description + "0")  // '0' follows '/'
            case .document(let d):
                s = try db.statement(
                    "SELECT id, path FROM parents WHERE path = ?1 OR (path >= ?2 AND path < ?3) ORDER BY path"
                )
                s.bind(1, d.parent.description)
                s.bind(2, d.description + "/")
                s.bind(3, d.description + "0")
                only = (d.parent.description, d.id)
            }
            var parents: [(Int64, String)] = []
            while try s.step() { parents.append((s.int64(0), s.text(1))) }
            s.reset()
            let page = db.streamsRows ? Int64.max : 1000
            let docs = try db.statement(
                """
                SELECT id, data, created, updated FROM documents
                WHERE parent = ?1 AND id > ?2 AND (CAST(?4 AS TEXT) IS NULL OR id = ?4) ORDER BY id LIMIT ?3
                """
            )
            defer { docs.reset() }
            for (parent, path) in parents {
                var after = ""
                while true {
                    docs.reset()
                    docs.bind(1, parent)
                    docs.bind(2, after)
                    docs.bind(3, page)
                    if let only, only.parent == path { docs.bind(4, only.id) }
                    var rows: Int64 = 0
                    while try docs.step() {
                        rows += 1
                        let doc = DocumentPath(parent: path, id: docs.text(0))
                        after = doc.id
                        let data = try DocumentStore.decode(docs, column: 1, path: doc)
                        try body(
                            DocumentSnapshot(
                                path: doc,
                                data: data,
                                createTime: Timestamp(microseconds: docs.int64(2)),
                                updateTime: Timestamp(microseconds: docs.int64(3))
                            )
                        )
                    }
                    if rows < page { break }
                }
            }
        }
    }

    /// One export line: `{"path": ..., "data": {...}}`.
    public static func exportLine(_ doc: DocumentSnapshot) -> String {
        "{\"path\": " + JSON.string(.string(doc.path.description)) + ", \"data\": " + JSON.string(.map(doc.data ?? [:]))
            + "}"
    }

    /// Parses one import line: `{"path": ..., "data": {...}}`.
    public static func parseImportLine(_ line: String) throws -> (DocumentPath, DocumentData) {
        let value = try JSON.parse(line, allowSentinels: true)
        guard case .map(let fields) = value, case .string(let path)? = fields["path"],
            case .map(let data)? = fields["data"]
        else {
            throw StoreError(.invalidJSON, "expected {\"path\": \"collection/doc\", \"data\": {...}}")
        }
        return (try DocumentPath(path), data)
    }

    /// Imports lines of `{"path", "data"}` (each a full `set`), `batchSize` documents per
    /// transaction. On a bad line it stops with an error naming the line; the batches before it
    /// stay written. Returns the number of documents written.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func importLines(
        _ lines: some Sequence<(number: Int, text: String)>,
        batchSize: Int = 5000,
        source: String,
        progress: (Int) -> Void = { _ in }
    ) throws -> Int {
        var batch = WriteBatch()
        var written = 0
        for (number, text) in lines {
            if text.allSatisfy(\.isWhitespace) { continue }
            do {
                let (path, data) = try Self.parseImportLine(text)
                batch.set(path, data)
                if batch.count >= batchSize {
                    try commit(batch)
                    written += batch.count
                    batch = WriteBatch()
                    progress(written)
                }
            } catch let e as StoreError {
                throw StoreError(e.code, "\(source):\(number): \(e.description)")
            }
        }
        do {
            try commit(batch)
        } catch let e as StoreError {
            throw StoreError(e.code, "\(source), the last \(batch.count) documents: \(e.description)")
        }
        written += batch.count
        progress(written)
        return written
    }
}

/// Lines of a file, read in chunks: for files larger than memory should hold at once.
public struct LineReader: Sequence, IteratorProtocol {
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private var position = 0
    private var finished = false
    private var lineNumber = 0
    /// Bytes read so far, for progress.
    public private(set) var bytesRead = 0

    public init(handle: FileHandle) {
        self.handle = handle
    }

    public mutating func next() -> (number: Int, text: String)? {
        while true {
            if let nl = buffer[position...].firstIndex(of: 10) {
                let line = String(decoding: buffer[position..<nl], as: UTF8.self)
                position = nl + 1
                lineNumber += 1
                return (lineNumber, line)
            }
            if finished {
                guard position < buffer.count else { return nil }
                let line = String(decoding: buffer[position...], as: UTF8.self)
                position = buffer.count
                lineNumber += 1
                return (lineNumber, line)
            }
            buffer.removeFirst(position)
            position = 0
            let chunk = handle.readData(ofLength: 1 << 20)
            if chunk.isEmpty {
                finished = true
            } else {
                bytesRead += chunk.count
                buffer.append(contentsOf: chunk)
            }
        }
    }
}

/// What `copy(to:)` did.
public struct CopyResult: Sendable, Equatable {
    /// Documents written to the destination.
    public var copied = 0
    /// Documents the destination already had, the same (from an earlier, interrupted copy).
    public var unchanged = 0
    /// Indexes declared in the destination.
    public var indexes = 0
}

extension DocumentStore {
    /// Copies every document (with its create and update times) and every declared index into
    /// `destination`, another store (SQLite or PostgreSQL). Resumable: a document the destination
    /// already has with the same fields and update time is skipped, so a copy interrupted and run
    /// again goes on where it stopped. The destination's change log is its own: its sequence
    /// tokens start afresh, and say nothing of this store's.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func copy(
        to destination: DocumentStore,
        batchSize: Int = 2000,
        progress: (Int) -> Void = { _ in }
    ) throws -> CopyResult {
        var result = CopyResult()
        // Indexes first: each is filled as the documents arrive.
        for index in try indexes() {
            try destination.declareIndex(index)
            result.indexes += 1
        }
        // What the destination has: a digest per document, not the documents (memory: about 100
        // bytes a document).
        var present: [String: UInt64] = [:]
        try destination.export(.all) { doc in present[doc.path.description] = Self.digest(doc) }
        var batch: [DocumentSnapshot] = []
        func flush() throws {
            guard !batch.isEmpty else { return }
            try destination.pool.write { db in
                let writer = try DocumentWriter(
                    db: db,
                    now: destination.configuration.clock(),
                    catalog: destination.catalog
                )
                for doc in batch {
                    try writer.restore(
                        doc.path,
                        doc.data ?? [:],
                        created: doc.createTime ?? destination.configuration.clock(),
                        updated: doc.updateTime ?? destination.configuration.clock()
                    )
                }
            }
            destination.observer.localCommit()
            result.copied += batch.count
            batch.removeAll(keepingCapacity: true)
            progress(result.copied + result.unchanged)
        }
        try export(.all) { doc in
            if present[doc.path.description] == Self.digest(doc) {
                result.unchanged += 1
                return
            }
            batch.append(doc)
            if batch.count >= max(1, batchSize) { try flush() }
        }
        try flush()
        return result
    }

    /// A document's fields and update time, hashed (FNV-1a over its JSON, whose keys are sorted:
    /// the stored form follows a dictionary's order, which two equal documents need not share).
    static func digest(_ doc: DocumentSnapshot) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ bytes: some Sequence<UInt8>) {
            for b in bytes {
                h ^= UInt64(b)
                h = h &* 0x100_0000_01b3
            }
        }
        mix(JSON.bytes(doc.data ?? [:]))
        withUnsafeBytes(of: doc.updateTime?.microseconds ?? 0) { mix($0) }
        return h
    }
}

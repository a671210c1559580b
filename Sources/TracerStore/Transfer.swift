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
    static let exportSQL =
        "SELECT p.path, d.id, d.data, d.created, d.updated FROM parents p JOIN documents d ON d.parent = p.id"

    /// Streams documents in path order to `body`, from one consistent snapshot.
    public func export(_ scope: ExportScope, _ body: (DocumentSnapshot) throws -> Void) throws {
        try pool.read { db in
            let s: SQLiteStatement
            switch scope {
            case .all:
                s = try db.statement(Self.exportSQL + " ORDER BY p.path, d.id")
            case .group(let id):
                s = try db.statement(Self.exportSQL + " WHERE p.collection = ?1 ORDER BY p.path, d.id")
                s.bind(1, id)
            case .collection(let c):
                // The collection itself, and anything whose parent path starts with "c/".
                s = try db.statement(
                    Self.exportSQL + " WHERE p.path = ?1 OR (p.path >= ?2 AND p.path < ?3) ORDER BY p.path, d.id"
                )
                s.bind(1, c.description)
                s.bind(2, c.description + "/")
                s.bind(3, c.description + "0")  // '0' follows '/'
            case .document(let d):
                s = try db.statement(
                    Self.exportSQL
                        + " WHERE (p.path = ?1 AND d.id = ?4) OR (p.path >= ?2 AND p.path < ?3) ORDER BY p.path, d.id"
                )
                s.bind(1, d.parent.description)
                s.bind(2, d.description + "/")
                s.bind(3, d.description + "0")
                s.bind(4, d.id)
            }
            defer { s.reset() }
            while try s.step() {
                let path = DocumentPath(parent: s.text(0), id: s.text(1))
                let data = try DocumentStore.decode(s, column: 2, path: path)
                try body(
                    DocumentSnapshot(
                        path: path,
                        data: data,
                        createTime: Timestamp(microseconds: s.int64(3)),
                        updateTime: Timestamp(microseconds: s.int64(4))
                    )
                )
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

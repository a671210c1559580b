/// Store-and-forward replication: what a store has to send after a checkpoint, the checkpoint
/// itself, and applying what another store sent.
///
/// The sender reads its change log after the sequence token the receiver last acknowledged and
/// sends the *current* state of each document named there, whole (or its deletion). Applying a
/// whole document is idempotent, so a batch replayed after a lost answer changes nothing; a
/// document changed twice is sent twice, and the second time carries its newest state.
public struct Outbox: Sendable {
    /// One document to send: its JSON now (decoded from the stored form and written with
    /// timestamps tagged, as `tracer db export` writes it), or nil when it was deleted.
    public struct Entry: Sendable, Equatable {
        public var path: DocumentPath
        public var json: [UInt8]?

        public init(path: DocumentPath, json: [UInt8]?) {
            self.path = path
            self.json = json
        }
    }

    public var entries: [Entry]
    /// The change token this batch reaches: acknowledged, the next batch starts after it.
    public var through: Int64
    /// Changes after `through` still to send.
    public var remaining: Int64
    /// The time of the oldest change not yet acknowledged (the first after the checkpoint).
    public var oldest: Timestamp?
}

/// A replicated document as the receiver parsed it: its data, or nil for a deletion.
public struct Replica: Sendable, Equatable {
    public var path: DocumentPath
    public var data: DocumentData?

    public init(path: DocumentPath, data: DocumentData?) {
        self.path = path
        self.data = data
    }
}

/// What applying a replicated batch did.
public struct ReplicaResult: Sendable, Equatable {
    /// Documents written or deleted.
    public var applied = 0
    /// Documents already in that state (a replayed batch): nothing written, no change logged.
    public var unchanged = 0
    /// What the receiver had acknowledged of the sender before this batch (nil: nothing yet).
    public var previous: Int64?
    /// The batch was behind what the receiver had acknowledged: nothing of it was written.
    public var stale = false
}

/// Where a receiver keeps how far it has taken a sender's changes (an integer field of a
/// document), and how far a batch reaches: a batch at or below it is not applied again.
public struct ReplicaSequence: Sendable, Equatable {
    public var path: DocumentPath
    public var field: String
    public var through: Int64

    public init(path: DocumentPath, field: String, through: Int64) {
        self.path = path
        self.field = field
        self.through = through
    }
}

extension DocumentStore {
    /// Up to `limit` changes after `token` as whole documents (each path once, in change order),
    /// keeping those `include` accepts; read in one consistent snapshot.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func outbox(
        after token: Int64,
        limit: Int,
        include: (DocumentPath) -> Bool = { _ in true }
    ) throws -> Outbox {
        try pool.read { db in
            let s = try db.statement(
                """
                SELECT c.seq, p.path, c.id, c.ts FROM changes c JOIN parents p ON p.id = c.parent
                WHERE c.seq > ?1 ORDER BY c.seq LIMIT ?2
                """
            )
            s.bind(1, token)
            s.bind(2, Int64(max(1, limit)))
            var paths: [DocumentPath] = []
            var seen = Set<DocumentPath>()
            var through = token
            var oldest: Timestamp?
            while try s.step() {
                through = s.int64(0)
                if oldest == nil { oldest = Timestamp(microseconds: s.int64(3)) }
                let path = DocumentPath(parent: s.text(1), id: s.text(2))
                if include(path), seen.insert(path).inserted { paths.append(path) }
            }
            s.reset()
            var entries: [Outbox.Entry] = []
            entries.reserveCapacity(paths.count)
            for path in paths {
                // The wire carries JSON (SyncBatch): the stored form is the store's own.
                let stored = try Self.load(path, db)
                entries.append(.init(path: path, json: stored.map { JSON.bytes($0.data) }))
            }
            // Sequence numbers are contiguous (the log is pruned only from its old end), so what
            // is left is a subtraction, not a count over a backlog of a million rows.
            let newest = try db.scalar("SELECT coalesce(max(seq), 0) FROM changes") ?? 0
            return Outbox(entries: entries, through: through, remaining: max(0, newest - through), oldest: oldest)
        }
    }

    /// How far behind a checkpoint is: the changes after it, and the time of the first of them.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func backlog(after token: Int64) throws -> (changes: Int64, oldest: Timestamp?) {
        try pool.read { db in
            let newest = try db.scalar("SELECT coalesce(max(seq), 0) FROM changes") ?? 0
            let s = try db.statement("SELECT ts FROM changes WHERE seq > ?1 ORDER BY seq LIMIT 1")
            s.bind(1, token)
            defer { s.reset() }
            let oldest = try s.step() ? Timestamp(microseconds: s.int64(0)) : nil
            return (max(0, newest - token), oldest)
        }
    }

    /// A named checkpoint kept in the store beside its data, outside the documents (writing it
    /// logs no change): 0 when never set.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func checkpoint(_ name: String) throws -> Int64 {
        try pool.read { db in
            let s = try db.statement("SELECT value FROM meta WHERE key = ?1")
            s.bind(1, "checkpoint:" + name)
            defer { s.reset() }
            return try s.step() ? s.int64(0) : 0
        }
    }

    /// Moves a named checkpoint (durably, before it returns).
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func setCheckpoint(_ name: String, _ value: Int64) throws {
        try pool.write { db in
            let s = try db.statement("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)")
            s.bind(1, "checkpoint:" + name)
            s.bind(2, value)
            try s.run()
        }
    }

    /// Applies replicated documents in one transaction: each written whole (or deleted) unless
    /// it is already in that state, so that a batch applied twice changes nothing the second
    /// time. `also` (the receiver's own bookkeeping) commits in the same transaction.
    ///
    /// With a `sequence`, batches are applied in order whatever order they arrive in: read in
    /// the same transaction, a batch reaching no further than what was acknowledged writes no
    /// document (a replay after a lost answer, or an old request arriving late, cannot roll a
    /// document back); one below it writes nothing at all, `also` included, and is `stale`.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func applyReplica(
        _ entries: [Replica],
        also: WriteBatch = WriteBatch(),
        sequence: ReplicaSequence? = nil
    ) throws -> ReplicaResult {
        // Optimistic where the store pipelines (PostgreSQL): new documents' inserts go out
        // without waiting. Writers hold the store's write lock, so what was read here stays so;
        // should an insert meet a document after all, the batch is done again waiting on each.
        func apply(optimistic: Bool) throws -> ReplicaResult {
            try pool.write { db in
                let writer = try DocumentWriter(
                    db: db,
                    now: configuration.clock(),
                    catalog: catalog,
                    optimistic: optimistic
                )
                var result = ReplicaResult()
                if let sequence {
                    if case .integer(let had)? = try Self.load(sequence.path, db)?.data[sequence.field] {
                        result.previous = had
                        if sequence.through <= had {
                            result.unchanged = entries.count
                            result.stale = sequence.through < had
                            if !result.stale { for op in also.operations { try writer.apply(op) } }
                            try writer.finish()
                            return result
                        }
                    }
                }
                // The batch's documents as stored, read together (one read each was a round trip
                // per document on PostgreSQL: Tools/bench/campus).
                let stored = try Self.loadMany(entries.map(\.path), db)
                var met = Set<String>()
                for e in entries {
                    // A path met earlier in this batch is read again: it is written by now.
                    let first = met.insert(e.path.description).inserted
                    let current = first ? stored[e.path.description] : try Self.load(e.path, db)
                    if current?.data == e.data {
                        result.unchanged += 1
                        continue
                    }
                    try writer.replace(e.path, with: e.data, old: current)
                    result.applied += 1
                }
                for op in also.operations { try writer.apply(op) }
                try writer.finish()
                return result
            }
        }
        let result: ReplicaResult
        do {
            result = try apply(optimistic: true)
        } catch is DocumentWriter.Conflicted {
            result = try apply(optimistic: false)
        }
        observer.localCommit()
        return result
    }
}

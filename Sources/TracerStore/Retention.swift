extension DocumentStore {
    /// Deletes the documents of a collection group whose time field is older than `cutoff`, in
    /// transactions of at most `batchSize` documents so that writers are never held up for long.
    /// Listeners see each deletion. Returns how many documents were deleted.
    ///
    /// With a collection-group index on `field`, each batch is one index range read.
    ///
    /// `keepingChangesAfter` (a replicating kiosk's acknowledged token) keeps every document
    /// changed after that token, however old: what the site server has not acknowledged is
    /// never purged.
    @discardableResult
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func purge(
        collectionGroup: String,
        field: FieldPath,
        olderThan cutoff: Timestamp,
        keepingChangesAfter acknowledged: Int64? = nil,
        batchSize: Int = 500,
        progress: ((Int) -> Void)? = nil
    ) throws -> Int {
        let query = Query(collectionGroup: collectionGroup)
            .where(field, .lessThan, .timestamp(cutoff))
            .order(by: field)
            .limit(max(1, batchSize))
        var total = 0
        while true {
            let (deleted, kept) = try pool.write { db -> (Int, Int) in
                let writer = try DocumentWriter(db: db, now: configuration.clock(), catalog: catalog)
                let victims = try QueryEngine(db: db, catalog: catalog).run(query)
                var kept = 0
                let pending = try acknowledged.map { _ in
                    try db.statement("SELECT 1 FROM changes WHERE seq > ?1 AND parent = ?2 AND id = ?3 LIMIT 1")
                }
                for doc in victims {
                    if let pending, let acknowledged {
                        // Only the log's tail after the checkpoint is scanned: the backlog.
                        pending.bind(1, acknowledged)
                        pending.bind(2, try db.parentID(doc.path.parentText) ?? -1)
                        pending.bind(3, doc.path.id)
                        let unacknowledged = try pending.step()
                        pending.reset()
                        if unacknowledged {
                            kept += 1
                            continue
                        }
                    }
                    // Deleted as the query read it (inside the write lock, so as it is): one read
                    // each again was a round trip a document on PostgreSQL.
                    if let data = doc.data, let created = doc.createTime, let updated = doc.updateTime {
                        let old = StoredDocument(
                            data: data,
                            created: created.microseconds,
                            updated: updated.microseconds
                        )
                        try writer.replace(doc.path, with: nil, old: old)
                    } else {
                        try writer.apply(.delete(doc.path))
                    }
                }
                return (victims.count - kept, kept)
            }
            if deleted > 0 { observer.localCommit() }
            total += deleted
            progress?(total)
            // Kept documents come first again in the next batch: stop at them.
            if deleted + kept < batchSize || kept > 0 { return total }
        }
    }

    /// Drops change-log entries older than `cutoff` (keeping the newest one, so sequence numbers
    /// keep growing). Listeners resuming from a token before the cutoff get `tokenExpired`.
    /// `keepingAfter` keeps every entry after that token (a replica has not acknowledged them).
    @discardableResult
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func pruneChanges(olderThan cutoff: Timestamp, keepingAfter acknowledged: Int64 = .max) throws -> Int {
        try pool.write { db in
            let s = try db.statement(
                "DELETE FROM changes WHERE ts < ?1 AND seq <= ?2 AND seq < (SELECT max(seq) FROM changes)"
            )
            s.bind(1, cutoff.microseconds)
            s.bind(2, acknowledged)
            try s.run()
            return db.changes
        }
    }
}

extension DocumentStore {
    /// SQLite's `PRAGMA integrity_check`: "ok", or the problems found.
    @_spi(Blocking) @available(*, noasync, message: "blocks its thread: use reading/writing { db in … }")
    public func integrityCheck() throws -> String {
        try pool.integrityCheck()
    }
}

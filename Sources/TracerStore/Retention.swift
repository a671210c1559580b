extension DocumentStore {
    /// Deletes the documents of a collection group whose time field is older than `cutoff`, in
    /// transactions of at most `batchSize` documents so that writers are never held up for long.
    /// Listeners see each deletion. Returns how many documents were deleted.
    ///
    /// With a collection-group index on `field`, each batch is one index range read.
    @discardableResult
    public func purge(
        collectionGroup: String,
        field: FieldPath,
        olderThan cutoff: Timestamp,
        batchSize: Int = 500,
        progress: ((Int) -> Void)? = nil
    ) throws -> Int {
        let query = Query(collectionGroup: collectionGroup)
            .where(field, .lessThan, .timestamp(cutoff))
            .order(by: field)
            .limit(max(1, batchSize))
        var total = 0
        while true {
            let deleted = try pool.write { db -> Int in
                let writer = try DocumentWriter(db: db, now: configuration.clock(), catalog: catalog)
                let victims = try QueryEngine(db: db, catalog: catalog).run(query)
                for doc in victims { try writer.apply(.delete(doc.path)) }
                return victims.count
            }
            if deleted > 0 { observer.localCommit() }
            total += deleted
            progress?(total)
            if deleted < batchSize { return total }
        }
    }

    /// Drops change-log entries older than `cutoff` (keeping the newest one, so sequence numbers
    /// keep growing). Listeners resuming from a token before the cutoff get `tokenExpired`.
    @discardableResult
    public func pruneChanges(olderThan cutoff: Timestamp) throws -> Int {
        try pool.write { db in
            let s = try db.statement("DELETE FROM changes WHERE ts < ?1 AND seq < (SELECT max(seq) FROM changes)")
            s.bind(1, cutoff.microseconds)
            try s.run()
            return db.changes
        }
    }
}

extension DocumentStore {
    /// SQLite's `PRAGMA integrity_check`: "ok", or the problems found.
    public func integrityCheck() throws -> String {
        try pool.read { db in
            let s = try db.statement("PRAGMA integrity_check")
            var lines: [String] = []
            while try s.step() { lines.append(s.text(0)) }
            return lines.joined(separator: "\n")
        }
    }
}

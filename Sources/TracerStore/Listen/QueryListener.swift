/// Keeps a query's results current and reports each change as a snapshot.
final class QueryListener: Listener {
    let query: Query
    let orders: [Query.Order]
    let startAt: ListenStart
    let onSnapshot: @Sendable (QuerySnapshot) -> Void
    let onError: @Sendable (StoreError) -> Void
    private var results: [DocumentSnapshot] = []
    /// The documents in `results`, by path.
    private var known: [DocumentPath: DocumentSnapshot] = [:]
    /// Queries with a limit or cursors are re-run on a change: a removal can pull in a document
    /// the listener has never seen.
    private let rerun: Bool

    init(
        query: Query,
        from start: ListenStart,
        onSnapshot: @escaping @Sendable (QuerySnapshot) -> Void,
        onError: @escaping @Sendable (StoreError) -> Void
    ) {
        self.query = query
        self.orders = QueryEngine.effectiveOrders(query)
        self.startAt = start
        self.onSnapshot = onSnapshot
        self.onError = onError
        self.rerun = query.limit != nil || query.start != nil || query.end != nil
    }

    var scope: ListenScope { .collectionID(query.source.collectionID) }

    func inScope(_ path: DocumentPath) -> Bool {
        switch query.source {
        case .collection(let c): path.segments.count == c.segments.count + 1 && path.parent == c
        case .group(let id): path.collectionID == id
        }
    }

    private func matches(_ doc: DocumentSnapshot) -> Bool {
        doc.exists && orders.allSatisfy { $0.field.isDocumentID || doc[$0.field] != nil }
            && query.filters.allSatisfy { $0.matches(doc) }
    }

    func start(_ context: ListenContext) throws {
        switch startAt {
        case .now:
            replaceResults(try context.run(query))
            let changes = SnapshotDiff.changes(old: [], new: results, orders: orders)
            onSnapshot(QuerySnapshot(documents: results, changes: changes, token: context.token))
        case .after(let token):
            try context.checkReachable(token)
            let batch = try ChangeBatch.read(context.db, after: token)
            replaceResults(try context.run(query))
            let position = Dictionary(results.enumerated().map { ($1.path, $0) }, uniquingKeysWith: { a, _ in a })
            var changes: [DocumentChange] = []
            for path in batch.paths where inScope(path) {
                let createdSince = batch.firstOp[path] == .created
                if let i = position[path] {
                    changes.append(
                        DocumentChange(
                            kind: createdSince ? .added : .modified,
                            document: results[i],
                            oldIndex: -1,
                            newIndex: i
                        )
                    )
                } else if !createdSince {
                    changes.append(
                        DocumentChange(kind: .removed, document: try context.current(path), oldIndex: -1, newIndex: -1)
                    )
                }
            }
            onSnapshot(QuerySnapshot(documents: results, changes: changes, token: context.token))
        }
    }

    func apply(_ batch: ChangeBatch, _ context: ListenContext) throws {
        let relevant = batch.paths.filter(inScope)
        guard !relevant.isEmpty else { return }
        var changes: [DocumentChange]
        if rerun {
            let new = try context.run(query)
            changes = SnapshotDiff.changes(old: results, new: new, orders: orders)
            replaceResults(new)
        } else {
            // Each changed document moves in the sorted results by binary search: a round costs
            // O(changes · log n), not a re-sort of everything the listener holds.
            changes = []
            for path in relevant {
                let doc = try context.current(path)
                let matchesNow = matches(doc)
                let before = known[path]
                if let before, matchesNow, before.data == doc.data { continue }
                var oldIndex: Int?
                if let before, let i = position(of: before) {
                    oldIndex = i
                    results.remove(at: i)
                    known[path] = nil
                    if !matchesNow {
                        changes.append(DocumentChange(kind: .removed, document: before, oldIndex: i, newIndex: -1))
                        continue
                    }
                }
                guard matchesNow else { continue }
                let newIndex = insertionIndex(doc)
                results.insert(doc, at: newIndex)
                known[path] = doc
                changes.append(
                    DocumentChange(
                        kind: oldIndex == nil ? .added : .modified,
                        document: doc,
                        oldIndex: oldIndex ?? -1,
                        newIndex: newIndex
                    )
                )
            }
        }
        if !changes.isEmpty {
            onSnapshot(QuerySnapshot(documents: results, changes: changes, token: context.token))
        }
    }

    func fail(_ error: StoreError) { onError(error) }

    /// Replaces the results whole (first snapshot, re-run queries).
    private func replaceResults(_ new: [DocumentSnapshot]) {
        results = new
        known = Dictionary(new.map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
    }

    private func insertionIndex(_ doc: DocumentSnapshot) -> Int {
        SnapshotDiff.insertionIndex(of: doc, in: results, orders: orders)
    }

    /// Where a document known to be in the results sits (the order is total: names break ties).
    private func position(of doc: DocumentSnapshot) -> Int? {
        let i = insertionIndex(doc)
        return i < results.count && results[i].path == doc.path ? i : nil
    }
}

/// Reports a document's state each time it changes.
final class DocumentListener: Listener {
    let path: DocumentPath
    var scope: ListenScope { .document(path) }
    /// The document, and the sequence token it is as of.
    let onSnapshot: @Sendable (DocumentSnapshot, Int64) -> Void
    let onError: @Sendable (StoreError) -> Void
    private var last: DocumentSnapshot?

    init(
        path: DocumentPath,
        onSnapshot: @escaping @Sendable (DocumentSnapshot, Int64) -> Void,
        onError: @escaping @Sendable (StoreError) -> Void
    ) {
        self.path = path
        self.onSnapshot = onSnapshot
        self.onError = onError
    }

    func start(_ context: ListenContext) throws {
        let snapshot = try context.current(path)
        last = snapshot
        onSnapshot(snapshot, context.token)
    }

    func apply(_ batch: ChangeBatch, _ context: ListenContext) throws {
        guard batch.firstOp[path] != nil else { return }
        let snapshot = try context.current(path)
        guard snapshot.data != last?.data else { return }
        last = snapshot
        onSnapshot(snapshot, context.token)
    }

    func fail(_ error: StoreError) { onError(error) }
}

extension DocumentStore {
    /// Listens to a query: `onSnapshot` gets the first snapshot, then one for each commit that
    /// changes the results, from this process or another. Callbacks run on the store's listener
    /// thread, one at a time. The listener stops when the registration is cancelled or released.
    public func addListener(
        _ query: Query,
        from start: ListenStart = .now,
        onError: @escaping @Sendable (StoreError) -> Void = { _ in },
        onSnapshot: @escaping @Sendable (QuerySnapshot) -> Void
    ) throws -> ListenerRegistration {
        try QueryEngine.validate(query)
        return observer.add(QueryListener(query: query, from: start, onSnapshot: onSnapshot, onError: onError))
    }

    /// Listens to one document: its current state, then each change.
    public func addListener(
        document path: DocumentPath,
        onError: @escaping @Sendable (StoreError) -> Void = { _ in },
        onSnapshot: @escaping @Sendable (DocumentSnapshot) -> Void
    ) -> ListenerRegistration {
        observer.add(
            DocumentListener(path: path, onSnapshot: { snapshot, _ in onSnapshot(snapshot) }, onError: onError)
        )
    }

    /// Listens to one document, with the sequence token each state is as of (a resumable
    /// position for whoever passes the document on).
    public func addListener(
        document path: DocumentPath,
        onError: @escaping @Sendable (StoreError) -> Void = { _ in },
        onChange: @escaping @Sendable (DocumentSnapshot, Int64) -> Void
    ) -> ListenerRegistration {
        observer.add(DocumentListener(path: path, onSnapshot: onChange, onError: onError))
    }

    /// A query's snapshots as an async sequence; the listener stops when the loop ends.
    public func snapshots(
        _ query: Query,
        from start: ListenStart = .now
    ) -> AsyncThrowingStream<QuerySnapshot, any Error> {
        AsyncThrowingStream { continuation in
            do {
                let registration = try addListener(
                    query,
                    from: start,
                    onError: { continuation.finish(throwing: $0) },
                    onSnapshot: { continuation.yield($0) }
                )
                continuation.onTermination = { _ in registration.cancelWithoutWaiting() }
            } catch {
                continuation.finish(throwing: error)
            }
        }
    }

    /// A document's snapshots as an async sequence; the listener stops when the loop ends.
    public func snapshots(document path: DocumentPath) -> AsyncThrowingStream<DocumentSnapshot, any Error> {
        AsyncThrowingStream { continuation in
            let registration = addListener(
                document: path,
                onError: { continuation.finish(throwing: $0) },
                onSnapshot: { continuation.yield($0) }
            )
            continuation.onTermination = { _ in registration.cancelWithoutWaiting() }
        }
    }
}

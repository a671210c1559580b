/// The documents of a query at one moment, and what changed since the previous snapshot.
public struct QuerySnapshot: Sendable {
    /// The matching documents, in the query's order.
    public var documents: [DocumentSnapshot]
    /// The changes since the listener's previous snapshot (all `added` in the first one).
    public var changes: [DocumentChange]
    /// The store's change sequence number this snapshot reflects: resume a listener from it.
    public var token: Int64
}

/// One document's change within a query's results.
public struct DocumentChange: Sendable, Equatable {
    /// What happened.
    public enum Kind: String, Sendable {
        case added, modified, removed
    }

    public var kind: Kind
    public var document: DocumentSnapshot
    /// Its position before the change (-1 for `added`).
    public var oldIndex: Int
    /// Its position after the change (-1 for `removed`).
    public var newIndex: Int
}

/// Where a listener starts.
public enum ListenStart: Sendable, Equatable {
    /// An initial snapshot of the current state (every document `added`), then changes.
    case now
    /// Every change after a sequence token, then live changes: one restarted later misses nothing.
    /// Documents changed since then come as `added` (created since), `modified`, or `removed`.
    case after(token: Int64)
}

/// A live listener; it stops when cancelled or released.
public final class ListenerRegistration: Sendable {
    /// Stops the listener; `true`: waits for a callback already running on the observer thread.
    private let stopper: @Sendable (Bool) -> Void

    init(_ stopper: @escaping @Sendable (Bool) -> Void) {
        self.stopper = stopper
    }

    /// Stops the listener; no callback runs after this returns, except one already running.
    public func cancel() { stopper(true) }

    /// Stops the listener without waiting for a callback that is running. For a stream's end:
    /// its termination handler runs under the ending task's status lock, which a callback in
    /// flight (yielding to that stream, resuming that task) needs: waiting there deadlocked a
    /// flagger told to stop while its first snapshot was being delivered.
    public func cancelWithoutWaiting() { stopper(false) }

    /// Dropped, it stops without waiting (nothing can wait on a registration no one holds).
    deinit { stopper(false) }
}

enum SnapshotDiff {
    /// Firestore's change list: removals (by old position), then additions, then modifications,
    /// each applied in turn to a tracking list so that indexes are as a client would replay them.
    static func changes(old: [DocumentSnapshot], new: [DocumentSnapshot], orders: [Query.Order]) -> [DocumentChange] {
        let oldByPath = Dictionary(old.map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
        let newByPath = Dictionary(new.map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
        var tracker = old
        var out: [DocumentChange] = []
        for doc in old where newByPath[doc.path] == nil {
            let i = tracker.firstIndex { $0.path == doc.path }!
            tracker.remove(at: i)
            out.append(DocumentChange(kind: .removed, document: doc, oldIndex: i, newIndex: -1))
        }
        func insertionIndex(_ doc: DocumentSnapshot) -> Int {
            Self.insertionIndex(of: doc, in: tracker, orders: orders)
        }
        for doc in new where oldByPath[doc.path] == nil {
            let i = insertionIndex(doc)
            tracker.insert(doc, at: i)
            out.append(DocumentChange(kind: .added, document: doc, oldIndex: -1, newIndex: i))
        }
        for doc in new {
            guard let before = oldByPath[doc.path], before.data != doc.data else { continue }
            let oldIndex = tracker.firstIndex { $0.path == doc.path }!
            tracker.remove(at: oldIndex)
            let newIndex = insertionIndex(doc)
            tracker.insert(doc, at: newIndex)
            out.append(DocumentChange(kind: .modified, document: doc, oldIndex: oldIndex, newIndex: newIndex))
        }
        return out
    }

    /// The first index of `sorted` whose document sorts at or after `doc` in the query's order.
    static func insertionIndex(of doc: DocumentSnapshot, in sorted: [DocumentSnapshot], orders: [Query.Order]) -> Int {
        var lo = 0
        var hi = sorted.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if QueryEngine.compare(sorted[mid], doc, orders) < 0 { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}

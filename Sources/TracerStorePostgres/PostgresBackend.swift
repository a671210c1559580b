import TracerStore

/// The store's PostgreSQL backend. `enable()` (once, at start, by every program that may be
/// given a `postgres://` location) lets `DocumentStore(path:)` open one; a program built without
/// this module answers such a location with a one-line error instead.
public enum PostgresBackend {
    public static func enable() {
        DocumentStore.register { uri, readers, synchronous, log in
            try PostgresPool(uri: uri, readers: readers, synchronous: synchronous, log: log)
        }
    }
}

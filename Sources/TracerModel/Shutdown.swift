import TracerStore

/// Something that holds resources to release before it is dropped: an AsyncHTTPClient's
/// `HTTPClient` traps in a debug build when it is dropped unshut (and leaks its connections in a
/// release one), which turned a wrong `--store` after a webhook's client was made into a crash.
public protocol AsyncShutdown: Sendable {
    func shutdown() async throws
}

/// Makes a resource, runs `body` with it and shuts it down on every path out, a thrown error
/// included: the one way tracer scopes its HTTP clients (never `defer { Task { shutdown } }`,
/// which may run after the process has moved on, or not at all).
public func withShutdown<Resource: AsyncShutdown, Result>(
    _ make: () async throws -> Resource,
    _ body: (Resource) async throws -> Result
) async throws -> Result {
    try await shutdown(after: body, on: try await make())
}

/// The same for a resource that may not be wanted (`make` gives nil): `body` gets nil then.
public func withShutdown<Resource: AsyncShutdown, Result>(
    _ make: () async throws -> Resource?,
    _ body: (Resource?) async throws -> Result
) async throws -> Result {
    guard let resource = try await make() else { return try await body(nil) }
    return try await shutdown(after: body, on: resource)
}

private func shutdown<Resource: AsyncShutdown, Result>(
    after body: (Resource) async throws -> Result,
    on resource: Resource
) async throws -> Result {
    let result: Result
    do {
        result = try await body(resource)
    } catch {
        try? await resource.shutdown()
        throw error
    }
    try await resource.shutdown()
    return result
}

/// A store is closed the same way: its threads stopped and waited for on every path out
/// (`DocumentStore.close`).
extension DocumentStore: AsyncShutdown {
    public func shutdown() async { await close() }
}

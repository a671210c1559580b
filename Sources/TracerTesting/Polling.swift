import Foundation

/// Polls `condition` every 20 ms until it holds or `seconds` pass; whether it held. For tests:
/// a wait with a deadline, never a fixed sleep (a loaded machine only makes it slower).
public func until(_ seconds: Double = 120, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date(timeIntervalSinceNow: seconds)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

/// Runs blocking work (a socket read, a process wait) on a thread of its own and awaits it: a
/// test must not block one of Swift's cooperative threads (two on this machine, shared by every
/// test of the run and by an in-process server), or what it waits for may never run.
public func onThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}

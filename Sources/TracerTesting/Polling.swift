import Foundation

/// Polls `condition` every 20 ms until it holds or `seconds` pass; whether it held. For tests:
/// a wait with a deadline, never a fixed sleep (a loaded machine only makes it slower).
public func until(_ seconds: Double = 120, _ condition: () throws -> Bool) async rethrows -> Bool {
    let deadline = Date(timeIntervalSinceNow: seconds)
    while Date() < deadline {
        if try condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try condition()
}

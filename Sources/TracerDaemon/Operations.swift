import CTracerSystemd
import Foundation

/// systemd's notifications (`Type=notify`): READY, STATUS, STOPPING, through libsystemd's
/// `sd_notify`. A no-op when the daemon was not started by systemd (no `NOTIFY_SOCKET`).
public struct SystemdNotifier: Sendable {
    /// Whether systemd is listening.
    public let isActive: Bool

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        isActive = !(environment["NOTIFY_SOCKET"] ?? "").isEmpty
    }

    /// Sends `state` (`READY=1`, `STATUS=…`); errors are ignored, as sd_notify's callers do.
    public func notify(_ state: String) {
        guard isActive else { return }
        _ = sd_notify(0, state)
    }
}

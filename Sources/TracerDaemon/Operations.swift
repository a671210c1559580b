import CTracerSystemd
import Dispatch
import Foundation
import Synchronization

/// systemd's notifications (`Type=notify`): READY, STATUS, STOPPING, through libsystemd's
/// `sd_notify`. A no-op when the daemon was not started by systemd (no `NOTIFY_SOCKET`).
///
/// `sd_notify` blocks while the receiver's socket is full (a systemd that does not read, a
/// test that stopped reading): it runs on a queue of its own, never on the caller's thread (two
/// blocked calls once froze both threads of the cooperative pool), and a status waiting to be
/// sent is replaced by a newer one rather than queued behind it.
public final class SystemdNotifier: Sendable {
    /// Whether systemd is listening.
    public let isActive: Bool
    private let queue = DispatchQueue(label: "tracer.systemd-notify")
    private let waitingStatus = Mutex<String?>(nil)

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        isActive = !(environment["NOTIFY_SOCKET"] ?? "").isEmpty
    }

    /// Sends `state` (`READY=1`, `STATUS=…`) in order, without waiting; errors are ignored, as
    /// sd_notify's callers do.
    public func notify(_ state: String) {
        guard isActive else { return }
        guard state.hasPrefix("STATUS=") else {
            queue.async { _ = sd_notify(0, state) }
            return
        }
        let alreadyWaiting = waitingStatus.withLock { waiting in
            defer { waiting = state }
            return waiting != nil
        }
        if alreadyWaiting { return }
        queue.async { [self] in
            if let status = waitingStatus.withLock({ w in
                defer { w = nil }
                return w
            }) {
                _ = sd_notify(0, status)
            }
        }
    }

    /// Waits (up to `timeout`) until what was sent so far has reached the socket: at exit.
    public func flush(timeout: Duration = .seconds(1)) {
        let done = DispatchSemaphore(value: 0)
        queue.async { done.signal() }
        _ = done.wait(timeout: .now() + .milliseconds(Int(timeout / .milliseconds(1))))
    }
}

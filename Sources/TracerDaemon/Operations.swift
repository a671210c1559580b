import Foundation

/// systemd's `sd_notify` datagram (`Type=notify`): READY, STATUS, STOPPING. A no-op when the
/// daemon was not started by systemd (no `NOTIFY_SOCKET`). Written here (one sendto on a Unix
/// datagram socket) because nothing in the package graph speaks it and libsystemd is not worth
/// a C dependency for one call.
public struct SystemdNotifier: Sendable {
    let path: String?

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    }

    public var isActive: Bool { path != nil }

    /// Sends `state` (`READY=1`, `STATUS=…`); errors are ignored, as sd_notify's are.
    public func notify(_ state: String) {
        guard let path else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        // "@name" is an abstract socket: a leading NUL.
        var bytes = Array(path.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let message = Array(state.utf8)
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                message.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, 0, sa, length) }
            }
        }
    }
}

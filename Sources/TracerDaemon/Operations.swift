import Foundation

/// systemd's `sd_notify` datagram (`Type=notify`): READY, STATUS, STOPPING. A no-op when the
/// daemon was not started by systemd (no `NOTIFY_SOCKET`).
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

/// Counters in Prometheus's text format on a small HTTP listener (`--metrics 127.0.0.1:9464`):
/// every request is answered with the current text, whatever its path.
public final class MetricsServer: @unchecked Sendable {
    public let port: UInt16
    private let fd: Int32
    private let render: @Sendable () -> String

    /// Listens on `host:port` (port 0 picks one); `render` gives the body for each request.
    public init(bind: String, render: @escaping @Sendable () -> String) throws {
        let parts = bind.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let requested = UInt16(parts[1]) else {
            throw DaemonError("--metrics takes HOST:PORT (like 127.0.0.1:9464), not '\(bind)'")
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = requested.bigEndian
        guard inet_pton(AF_INET, String(parts[0]), &address.sin_addr) == 1 else {
            throw DaemonError("--metrics: '\(parts[0])' is not an IPv4 address")
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw DaemonError("--metrics: cannot make a socket") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Foundation.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw DaemonError("--metrics: cannot listen on \(bind): \(reason)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        self.port = UInt16(bigEndian: actual.sin_port)
        self.render = render
        let thread = Thread { [self] in serve() }
        thread.name = "tracer.metrics"
        thread.start()
    }

    private func serve() {
        while true {
            let client = accept(fd, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            // Read the request head (what it asks for does not matter), then answer.
            var timeout = timeval(tv_sec: 1, tv_usec: 0)
            setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var buffer = [UInt8](repeating: 0, count: 4096)
            _ = read(client, &buffer, buffer.count)
            let body = render()
            let response =
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: \(body.utf8.count)\r\n"
                + "Connection: close\r\n\r\n" + body
            let bytes = Array(response.utf8)
            var sent = 0
            while sent < bytes.count {
                let n = bytes[sent...].withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                sent += n
            }
            close(client)
        }
    }
}

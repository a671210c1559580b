import Foundation

/// A plain HTTP/1.1 POST over a socket (http:// only; put TLS in front with a reverse proxy or
/// stunnel). Foundation's URLSession is not in a bare Linux install's reach here, and a webhook
/// needs nothing more.
public struct Webhook: Sendable {
    public let url: String
    let host: String
    let port: UInt16
    let path: String

    public init(_ url: String) throws {
        guard let c = URLComponents(string: url), c.scheme == "http", let host = c.host, !host.isEmpty else {
            throw ExposureError(.badInput, "--webhook takes an http:// URL (like http://127.0.0.1:9000/hook), not '\(url)'")
        }
        self.url = url
        self.host = host
        self.port = UInt16(c.port ?? 80)
        self.path =
            (c.percentEncodedPath.isEmpty ? "/" : c.percentEncodedPath) + (c.percentEncodedQuery.map { "?" + $0 } ?? "")
    }

    /// Posts `body` as JSON; returns the HTTP status, or throws when nothing answered.
    public func post(_ body: String, timeout: Int = 10) throws -> Int {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else {
            throw ExposureError(.delivery, "\(url): cannot resolve \(host)")
        }
        defer { freeaddrinfo(list) }
        let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard fd >= 0 else { throw ExposureError(.delivery, "\(url): cannot make a socket") }
        defer { close(fd) }
        var wait = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        guard connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            throw ExposureError(.delivery, "\(url): \(String(cString: strerror(errno)))")
        }
        let payload = Array(body.utf8)
        let head =
            "POST \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(payload.count)\r\nConnection: close\r\nUser-Agent: tracer-notify\r\n\r\n"
        let bytes = Array(head.utf8) + payload
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { throw ExposureError(.delivery, "\(url): the connection closed while sending") }
            sent += n
        }
        var response = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !response.contains(10) {
            let n = read(fd, &buffer, buffer.count)
            guard n > 0 else { break }
            response += buffer[0..<n]
        }
        let statusLine = String(decoding: response.prefix { $0 != 10 }, as: UTF8.self)
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let code = Int(parts[1]) else {
            throw ExposureError(.delivery, "\(url): no HTTP answer")
        }
        return code
    }
}

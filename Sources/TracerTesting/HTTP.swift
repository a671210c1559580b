import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// The tests' HTTP client: AsyncHTTPClient, kept for the test process's life (never shut down,
/// as `HTTPClient.shared`), but with room for many requests at once to one server: the shared
/// client's 8 connections a host made a test's ninth request wait behind eight held by a busy
/// store (`BusyStoreTests`), where a server would have answered it.
let testClient: HTTPClient = {
    var configuration = HTTPClient.Configuration()
    configuration.connectionPool = .init(idleTimeout: .seconds(5), concurrentHTTP1ConnectionsPerHostSoftLimit: 256)
    return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
}()

/// A GET of `path` on a loopback server: the response's body whatever its status, or nil when
/// nothing answered within `timeout` seconds.
public func httpGet(
    port: UInt16,
    path: String = "/",
    headers: [String: String] = [:],
    timeout: Int = 5
) async
    -> String?
{
    var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
    for (name, value) in headers { request.headers.add(name: name, value: value) }
    do {
        let response = try await testClient.execute(request, timeout: .seconds(Int64(timeout)))
        let body = try await response.body.collect(upTo: 64 << 20)
        return String(buffer: body)
    } catch {
        return nil
    }
}

/// Everything a socket gives until the peer closes it, or `timeout` seconds pass without a byte.
public func readAll(_ fd: Int32, timeout: Int) -> [UInt8] {
    var wait = timeval(tv_sec: timeout, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
    var response = [UInt8]()
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = read(fd, &buffer, buffer.count)
        if n <= 0 { break }
        response += buffer[0..<n]
    }
    return response
}

/// A datagram socket standing in for systemd's `NOTIFY_SOCKET`: what `sd_notify` sends arrives here.
///
/// A thread reads it as the datagrams come, as systemd does: the kernel keeps at most
/// `net.unix.max_dgram_qlen` (10 here) unread and `sd_notify` then blocks, and the daemon gives
/// up on what it could not send within a second at exit, so a test that read only at the end
/// lost the daemon's `STOPPING=1` behind ten `STATUS=` lines when a loaded machine made it wait
/// long enough.
public final class NotifySocket: @unchecked Sendable {
    public let path: String
    private let fd: Int32
    private let directory = TemporaryDirectory("tracer-notify")
    private let inbox = Inbox()
    private let stopped = DispatchSemaphore(value: 0)

    /// What the reader thread has received and not yet handed out.
    private final class Inbox: @unchecked Sendable {
        let condition = NSCondition()
        var datagrams: [String] = []
        var closing = false
    }

    public init() throws {
        path = directory.file("notify")
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in path.utf8.enumerated() { raw[i] = b }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard fd >= 0, bound == 0 else { throw CocoaError(.fileWriteUnknown) }
        // A short receive timeout, so that the reader sees `closing` soon after it is set.
        var wait = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        let (descriptor, inbox, stopped) = (fd, inbox, stopped)
        Thread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                inbox.condition.lock()
                let closing = inbox.closing
                inbox.condition.unlock()
                if closing { break }
                let n = recv(descriptor, &buffer, buffer.count, 0)
                guard n > 0 else { continue }
                inbox.condition.lock()
                inbox.datagrams.append(String(decoding: buffer[0..<n], as: UTF8.self))
                inbox.condition.broadcast()
                inbox.condition.unlock()
            }
            stopped.signal()
        }.start()
    }

    /// The next datagram, waiting up to `timeout` seconds.
    public func receive(timeout: Int = 5) -> String? {
        let deadline = Date().addingTimeInterval(Double(timeout))
        inbox.condition.lock()
        defer { inbox.condition.unlock() }
        while inbox.datagrams.isEmpty {
            if !inbox.condition.wait(until: deadline) { break }
        }
        return inbox.datagrams.isEmpty ? nil : inbox.datagrams.removeFirst()
    }

    deinit {
        inbox.condition.lock()
        inbox.closing = true
        inbox.condition.unlock()
        // The reader leaves within its receive timeout; only then is the descriptor closed, so
        // that it never reads a number the process has reused.
        stopped.wait()
        close(fd)
    }
}

/// An HTTP receiver on loopback for webhook tests: records each request's body and answers 200,
/// or `failing` for as many requests as `failNext` says.
public final class HTTPReceiver: @unchecked Sendable {
    public let port: UInt16
    private let fd: Int32
    private let condition = NSCondition()
    private var bodies: [String] = []
    private var failures = 0
    /// Requests answered with an error so far.
    public private(set) var refused = 0

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 16) == 0 else { throw CocoaError(.fileWriteUnknown) }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        port = UInt16(bigEndian: actual.sin_port)
        // The thread holds the receiver only while it answers a request, so a test that lets go
        // of it ends it (deinit); the thread closes the socket once accept fails, so its number is
        // never another socket's while the thread may still accept on it.
        let thread = Thread { [weak self] in
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 { break }
                guard let self else {
                    close(client)
                    break
                }
                self.answer(client)
            }
            close(fd)
        }
        thread.start()
    }

    /// The next `n` requests are answered 503.
    public func failNext(_ n: Int) {
        condition.lock()
        failures = n
        condition.unlock()
    }

    private func answer(_ client: Int32) {
        var request = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 8192)
        // Head, then as many body bytes as Content-Length says.
        while true {
            let n = read(client, &buffer, buffer.count)
            if n <= 0 { break }
            request += buffer[0..<n]
            let text = String(decoding: request, as: UTF8.self)
            if let split = text.range(of: "\r\n\r\n") {
                let head = text[..<split.lowerBound].lowercased()
                let length =
                    head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) }
                    ?? 0
                if text[split.upperBound...].utf8.count >= length { break }
            }
        }
        let text = String(decoding: request, as: UTF8.self)
        let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
        condition.lock()
        let fail = failures > 0
        if fail {
            failures -= 1
            refused += 1
        } else {
            bodies.append(body)
            condition.broadcast()
        }
        condition.unlock()
        let response =
            fail
            ? "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            : "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        _ = Array(response.utf8).withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
        close(client)
    }

    /// The next body received, waiting up to `timeout` seconds.
    public func next(timeout: Double = 10) -> String? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while bodies.isEmpty {
            if !condition.wait(until: deadline) { return nil }
        }
        return bodies.removeFirst()
    }

    /// Ends the accepting thread (accept fails on a socket shut down), which closes it.
    deinit { shutdown(fd, Int32(SHUT_RDWR)) }
}

/// A request to a loopback URL: its status and body, or nil when nothing answered.
public func httpRequest(
    _ method: HTTPMethod,
    _ url: String,
    headers: [String: String] = [:],
    body: String? = nil,
    timeout: Int = 10
) async -> (status: Int, body: String)? {
    var request = HTTPClientRequest(url: url)
    request.method = method
    for (name, value) in headers { request.headers.add(name: name, value: value) }
    if let body { request.body = .bytes(ByteBuffer(string: body)) }
    do {
        let response = try await testClient.execute(request, timeout: .seconds(Int64(timeout)))
        let answer = try await response.body.collect(upTo: 64 << 20)
        return (Int(response.status.code), String(buffer: answer))
    } catch {
        return nil
    }
}

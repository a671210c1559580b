import Foundation

/// A Server-Sent Events client over a loopback socket, for tests and benchmarks: it sends one GET
/// and parses events on a thread of its own; tests wait for what they need without holding a
/// cooperative thread.
public final class SSEClient: @unchecked Sendable {
    public struct Event: Sendable, Equatable {
        public var id: String?
        public var event: String
        public var data: String
    }

    private let lock = NSLock()
    private var received: [Event] = []
    private var head = ""
    private var closed = false
    private let fd: Int32

    /// Connects and sends `GET path` with `headers`; throws when nothing listens.
    public init(port: Int, path: String, headers: [String: String] = [:]) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "cannot connect to port \(port)"])
        }
        var request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        for (k, v) in headers { request += "\(k): \(v)\r\n" }
        request += "\r\n"
        let bytes = Array(request.utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let thread = Thread { [self] in read() }
        thread.start()
    }

    deinit { stop() }

    /// Closes the connection (the server sees the client leave).
    /// Ends the connection. The socket is shut down under the lock, and only while the reader has
    /// not closed it: once closed, its number may already be another test's socket.
    public func stop() {
        lock.lock()
        defer { lock.unlock() }
        if !closed { shutdown(fd, Int32(SHUT_RDWR)) }
        closed = true
    }

    public var events: [Event] {
        lock.lock()
        defer { lock.unlock() }
        return received
    }

    /// The response's status line and headers.
    public var responseHead: String {
        lock.lock()
        defer { lock.unlock() }
        return head
    }

    /// Waits until `condition` holds for the events so far (polling every 10 ms); false on timeout.
    public func wait(timeout: Double = 30, _ condition: ([Event]) -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition(events) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition(events)
    }

    private func read() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        var pending = [UInt8]()
        var inBody = false
        var chunked = false
        var text = ""
        defer {
            lock.lock()
            close(fd)
            closed = true
            lock.unlock()
        }
        while true {
            let n = Foundation.read(fd, &buffer, buffer.count)
            if n <= 0 { return }
            pending += buffer[0..<n]
            if !inBody {
                guard let end = Self.find([13, 10, 13, 10], pending) else { continue }
                let h = String(decoding: pending[0..<end], as: UTF8.self)
                chunked = h.lowercased().contains("transfer-encoding: chunked")
                lock.lock()
                head = h
                lock.unlock()
                pending.removeFirst(end + 4)
                inBody = true
            }
            var ended = false
            if chunked {
                // Chunks: size in hex, CRLF, bytes, CRLF; the last is empty.
                while let lineEnd = Self.find([13, 10], pending) {
                    let size = Int(String(decoding: pending[0..<lineEnd], as: UTF8.self), radix: 16) ?? 0
                    if size == 0 {
                        ended = true
                        break
                    }
                    guard pending.count >= lineEnd + 2 + size + 2 else { break }
                    text += String(decoding: pending[(lineEnd + 2)..<(lineEnd + 2 + size)], as: UTF8.self)
                    pending.removeFirst(lineEnd + 2 + size + 2)
                }
            } else {
                text += String(decoding: pending, as: UTF8.self)
                pending.removeAll()
            }
            // Events end with a blank line.
            while let range = text.range(of: "\n\n") {
                let block = text[..<range.lowerBound]
                text = String(text[range.upperBound...])
                var event = Event(id: nil, event: "message", data: "")
                var isEvent = false
                for line in block.split(separator: "\n") {
                    if line.hasPrefix(":") { continue }
                    let pair = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                    guard pair.count == 2 else { continue }
                    switch pair[0] {
                    case "id": event.id = pair[1]
                    case "event": event.event = pair[1]
                    case "data":
                        event.data += (event.data.isEmpty ? "" : "\n") + pair[1]
                        isEvent = true
                    default: break
                    }
                }
                if isEvent {
                    lock.lock()
                    received.append(event)
                    lock.unlock()
                }
            }
            if ended { return }
        }
    }

    static func find(_ needle: [UInt8], _ haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
            if Array(haystack[i..<(i + needle.count)]) == needle { return i }
        }
        return nil
    }
}

import Foundation
import Synchronization

/// A small fault-injecting TCP proxy on loopback, for tests that need what networks do: it
/// forwards to a target port, and on demand loses answers (the server has the request and
/// commits; its answer never reaches the client) or goes down altogether (a network gone).
///
/// Blocking sockets and a thread per direction: a test proxies a handful of connections.
public final class FaultProxy: @unchecked Sendable {
    /// The port clients connect to.
    public let port: Int
    let target: Int
    let listener: Int32
    private let state = Mutex(State())

    struct State {
        var dropEvery = 0
        var answers = 0
        var dropped = 0
        var down = false
        var silent = false
        var held: Set<Int32> = []
        /// Requests whose first line starts so lose their answer, this many times.
        var loseAnswers: (prefix: [UInt8], count: Int)?
        var open: Set<Int32> = []
        var stopped = false
    }

    /// Starts forwarding 127.0.0.1:port (a free one) to 127.0.0.1:target.
    public init(target: Int) throws {
        self.target = target
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let t = Thread { [self] in
            Self.blockSignals()
            acceptLoop()
        }
        t.name = "fault-proxy"
        t.start()
    }

    deinit { stop() }

    /// Loses every `n`th answer from the target (0: none): the request reaches the server, the
    /// connection is closed before its answer is passed on.
    public func dropEvery(_ n: Int) { state.withLock { $0.dropEvery = n } }

    /// Down: every open connection is cut and new ones are closed at once. Up: forwarding again.
    public func setDown(_ down: Bool) {
        let cut = state.withLock { s -> Set<Int32> in
            s.down = down
            return down ? s.open : []
        }
        for fd in cut { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    /// Silent: a network that swallows everything (a captive portal, a phone between cells). Open
    /// connections are cut, and new ones are accepted and never answered; back to forwarding,
    /// those held are cut too, as a network that returns resets them.
    public func setSilent(_ silent: Bool) {
        let cut = state.withLock { s -> Set<Int32> in
            s.silent = silent
            if silent { return s.open }
            defer { s.held = [] }
            return s.held
        }
        for fd in cut { shutdown(fd, Int32(SHUT_RDWR)) }
        if !silent { for fd in cut { close(fd) } }
    }

    /// The next `count` requests whose first line starts with `prefix` (`POST /v1/reports`)
    /// reach the server, and their answers are lost: the connection is cut as the answer begins.
    public func loseAnswers(to prefix: String, count: Int = 1) {
        state.withLock { $0.loseAnswers = (Array(prefix.utf8), count) }
    }

    /// Connections being forwarded now (each counts its two sockets once).
    public var forwarding: Int { state.withLock { $0.open.count / 2 } }

    /// Answers lost so far.
    public var dropped: Int { state.withLock { $0.dropped } }

    /// Stops accepting and cuts every connection.
    public func stop() {
        let (cut, held, first) = state.withLock { s -> (Set<Int32>, Set<Int32>, Bool) in
            defer {
                s.stopped = true
                s.held = []
            }
            return (s.open, s.held, !s.stopped)
        }
        guard first else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for fd in cut { shutdown(fd, Int32(SHUT_RDWR)) }
        // Held connections have no pump to close them.
        for fd in held {
            shutdown(fd, Int32(SHUT_RDWR))
            close(fd)
        }
    }

    /// The proxy's threads take no signals: a test process gets SIGCHLD for every process it
    /// runs, and a blocking `connect`, `read` or `send` interrupted by one (EINTR) would end a
    /// connection the test meant to keep.
    static func blockSignals() {
        var all = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_BLOCK, &all, nil)
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if state.withLock({ $0.stopped }) { return }
                continue
            }
            if state.withLock({ $0.down || $0.stopped }) {
                close(client)
                continue
            }
            let holding = state.withLock { s -> Bool in
                if s.silent { s.held.insert(client) }
                return s.silent
            }
            if holding { continue }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in.loopback(port: target)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            if connected != 0 {
                close(client)
                close(server)
                continue
            }
            state.withLock {
                $0.open.insert(client)
                $0.open.insert(server)
            }
            // Whether the client has sent since the last answer began: the next bytes from the
            // server are then a new answer (lost when its request was one to lose).
            let awaiting = Flag()
            let up = Thread { [self] in
                Self.blockSignals()
                pump(from: client, to: server, answers: false, awaiting: awaiting)
            }
            let downstream = Thread { [self] in
                Self.blockSignals()
                pump(from: server, to: client, answers: true, awaiting: awaiting)
            }
            up.start()
            downstream.start()
        }
    }

    private func pump(from: Int32, to: Int32, answers: Bool, awaiting: Flag) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(from, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            if n <= 0 { break }
            if answers,
                let lose = awaiting.value.withLock({ a -> Bool? in
                    defer { a = false }
                    return a ? awaiting.lose.withLock { $0 } : nil
                })
            {
                let drop = state.withLock { s -> Bool in
                    s.answers += 1
                    guard lose || (s.dropEvery > 0 && s.answers % s.dropEvery == 0) else { return false }
                    s.dropped += 1
                    return true
                }
                if drop { break }
            } else if !answers {
                let starts = awaiting.value.withLock { a -> Bool in
                    defer { a = true }
                    return !a
                }
                // A request's first bytes: is it one whose answer is to be lost?
                if starts {
                    let head = Array(buffer.prefix(min(n, 256)))
                    let lose = state.withLock { s -> Bool in
                        guard let l = s.loseAnswers, l.count > 0, head.starts(with: l.prefix) else { return false }
                        s.loseAnswers = l.count > 1 ? (l.prefix, l.count - 1) : nil
                        return true
                    }
                    awaiting.lose.withLock { $0 = lose }
                }
            }
            var sent = 0
            while sent < n {
                // MSG_NOSIGNAL: a peer gone is an error here, not a SIGPIPE that ends the test run.
                let m = buffer.withUnsafeBytes { send(to, $0.baseAddress! + sent, n - sent, Int32(MSG_NOSIGNAL)) }
                if m <= 0 { break }
                sent += m
            }
            if sent < n { break }
        }
        // Either side gone: both connections end.
        shutdown(from, Int32(SHUT_RDWR))
        shutdown(to, Int32(SHUT_RDWR))
        let closeNow = state.withLock { s -> Bool in
            // The second pump to finish closes both descriptors.
            if s.open.contains(from) {
                s.open.remove(from)
                s.open.remove(to)
                return false
            }
            return true
        }
        if closeNow {
            close(from)
            close(to)
        }
    }
}

/// A flag two threads share.
final class Flag: Sendable {
    let value = Mutex(false)
    /// Whether the request being answered is one whose answer is lost.
    let lose = Mutex(false)
}

extension sockaddr_in {
    /// 127.0.0.1:`port`.
    public static func loopback(port: Int) -> sockaddr_in {
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = UInt16(port).bigEndian
        a.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return a
    }
}

import Foundation
import Glibc

/// Runs the built `tracer` binary, as a person or a script would.
public struct TracerProcess {
    /// What a finished run printed and how it exited.
    public struct Result: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String
    }

    /// The `tracer` binary beside the test bundle (or `$TRACER_BIN`).
    public static var binary: String {
        if let env = ProcessInfo.processInfo.environment["TRACER_BIN"] { return env }
        let exe =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = (exe as NSString).deletingLastPathComponent
        // On Linux the test runner is `<products>/tracerPackageTests.xctest`; elsewhere a bundle inside it.
        while !dir.isEmpty, dir != "/" {
            let candidate = (dir as NSString).appendingPathComponent("tracer")
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate, isDirectory: &isDir), !isDir.boolValue {
                return candidate
            }
            dir = (dir as NSString).deletingLastPathComponent
        }
        return "tracer"
    }

    /// Runs `tracer ARGS…` to completion on a thread of its own, so that an async test waiting
    /// for it holds none of Swift Testing's few cooperative threads (on 2 cores, a few blocked
    /// tests stall every async one).
    public static func running(
        _ arguments: [String],
        stdin: String? = nil,
        environment: [String: String] = [:],
        program: String = TracerProcess.binary
    ) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(
                    with: Swift.Result {
                        try run(arguments, stdin: stdin, environment: environment, program: program)
                    }
                )
            }
            thread.start()
        }
    }

    /// Runs `tracer ARGS…` (or another program's) to completion.
    public static func run(
        _ arguments: [String],
        stdin: String? = nil,
        environment: [String: String] = [:],
        program: String = TracerProcess.binary
    ) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { _, new in new }
        process.environment = env
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let input = Pipe()
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        // Read both pipes before waiting, so a chatty child cannot fill a pipe and stall.
        let group = DispatchGroup()
        nonisolated(unsafe) var errData = Data()
        group.enter()
        DispatchQueue.global().async {
            errData = err.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self)
        )
    }

    /// Starts `tracer ARGS…` in the background; read its output line by line.
    public static func start(_ arguments: [String], environment: [String: String] = [:]) throws -> Background {
        try Background(arguments, environment: environment)
    }

    /// Another program of the tests' (a stand-in server), read and ended the same way.
    public static func start(program: String, _ arguments: [String]) throws -> Background {
        try Background(arguments, environment: [:], executable: program)
    }

    /// A running `tracer` process whose standard output is read line by line.
    public final class Background: @unchecked Sendable {
        public let process = Process()
        private let out = Pipe()
        private let err = Pipe()
        private var errData = Data()
        private let lock = NSCondition()
        private var lines: [String] = []
        private var partial = Data()
        private var closed = false
        private var errClosed = false

        init(_ arguments: [String], environment: [String: String], executable: String = TracerProcess.binary) throws {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            var env = ProcessInfo.processInfo.environment
            env.merge(environment) { _, new in new }
            process.environment = env
            process.standardOutput = out
            process.standardError = err
            process.standardInput = FileHandle.nullDevice
            try process.run()
            // Each pipe read to its end by a thread of its own, with blocking reads. Not
            // `readabilityHandler`: on Linux, tearing its dispatch read source down while other
            // threads set theirs up can leave libdispatch's epoll bookkeeping pointing at freed
            // memory, and its manager thread then crashes the whole test run (SIGSEGV in
            // `_dispatch_event_loop_drain`, once in CI: swift-corelibs-libdispatch issue 949).
            Self.read(out.fileHandleForReading, "tracer.test.stdout") { [weak self] data in self?.receive(data) }
            Self.read(err.fileHandleForReading, "tracer.test.stderr") { [weak self] data in
                guard let self else { return }
                self.lock.lock()
                if data.isEmpty { self.errClosed = true } else { self.errData.append(data) }
                self.lock.broadcast()
                self.lock.unlock()
            }
        }

        /// Hands `sink` what `handle` gives as it comes, and once empty data at its end, from a
        /// thread that ends there. The thread holds the handle, so its descriptor stays open (and
        /// is never another file's) until the thread is done with it.
        private static func read(_ handle: FileHandle, _ name: String, _ sink: @escaping @Sendable (Data) -> Void) {
            let thread = Thread {
                var buffer = [UInt8](repeating: 0, count: 65536)
                while true {
                    let n = buffer.withUnsafeMutableBytes {
                        Glibc.read(handle.fileDescriptor, $0.baseAddress, $0.count)
                    }
                    if n < 0 && errno == EINTR { continue }
                    guard n > 0 else { break }
                    sink(Data(buffer[0..<n]))
                }
                sink(Data())
            }
            thread.name = name
            thread.start()
        }

        private func receive(_ data: Data) {
            lock.lock()
            if data.isEmpty {
                closed = true
            } else {
                partial.append(data)
                while let nl = partial.firstIndex(of: 10) {
                    lines.append(String(decoding: partial[partial.startIndex..<nl], as: UTF8.self))
                    partial = Data(partial[(nl + 1)...])
                }
            }
            lock.broadcast()
            lock.unlock()
        }

        /// What the process has written to standard error so far; once it has ended, all of it.
        /// The process can end before its reader has drained the pipe (the exit is seen first
        /// under load: once in CI, a watch's one-line error read as nothing), so after the end
        /// this waits, up to 10 seconds, for the pipe's end of file.
        public var stderr: String {
            let ended = !process.isRunning
            let deadline = Date(timeIntervalSinceNow: 10)
            lock.lock()
            defer { lock.unlock() }
            while ended && !errClosed {
                if !lock.wait(until: deadline) { break }
            }
            return String(decoding: errData, as: UTF8.self)
        }

        /// The next line, waiting up to `timeout` seconds; nil on timeout or end of output.
        public func nextLine(timeout: Double = 10) -> String? {
            let deadline = Date(timeIntervalSinceNow: timeout)
            lock.lock()
            defer { lock.unlock() }
            while lines.isEmpty && !closed {
                if !lock.wait(until: deadline) { return nil }
            }
            return lines.isEmpty ? nil : lines.removeFirst()
        }

        /// The next line, polling without holding a thread (for async tests); nil on timeout or
        /// end of output.
        public func line(timeout: Double = 30) async -> String? {
            let deadline = Date(timeIntervalSinceNow: timeout)
            while Date() < deadline {
                let (line, ended) = take()
                if let line { return line }
                if ended { return nil }
                try? await Task.sleep(for: .milliseconds(10))
            }
            return nil
        }

        private func take() -> (String?, Bool) {
            lock.lock()
            defer { lock.unlock() }
            let line = lines.isEmpty ? nil : lines.removeFirst()
            return (line, closed && lines.isEmpty)
        }

        /// Sends `signal` and waits up to `timeout` seconds for the process to end, without holding
        /// a thread; its exit status and the seconds it took, or nil if it is still running.
        public func stop(_ signal: Int32 = SIGTERM, timeout: Double = 10) async -> (status: Int32, seconds: Double)? {
            let start = Date()
            if process.isRunning { Foundation.kill(process.processIdentifier, signal) }
            while process.isRunning, Date().timeIntervalSince(start) < timeout {
                try? await Task.sleep(for: .milliseconds(10))
            }
            guard !process.isRunning else { return nil }
            return (process.terminationStatus, Date().timeIntervalSince(start))
        }

        /// Whether the process has not ended.
        public var isRunning: Bool { process.isRunning }

        /// Its process id (for /proc: its memory, its threads).
        public var pid: Int32 { process.processIdentifier }

        /// Its anonymous resident memory now (its heap, not the files it maps), in MiB from
        /// /proc, or nil when it has ended.
        public var heapMiB: Int? {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix("RssAnon:") }),
                let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
            else { return nil }
            return kib / 1024
        }

        /// Sends a signal and returns at once (SIGSTOP and SIGCONT freeze and resume it).
        public func signal(_ signal: Int32) {
            if process.isRunning { Foundation.kill(process.processIdentifier, signal) }
        }

        /// Sends a signal (SIGKILL by default) and waits for the process to end.
        public func kill(_ signal: Int32 = SIGKILL) {
            if process.isRunning { Foundation.kill(process.processIdentifier, signal) }
            process.waitUntilExit()
        }

        deinit { kill() }
    }
}

import Foundation
import NIOPosix
import Synchronization
import TracerVerification

/// OCR on a fixed pool of threads, one Tesseract engine per thread, with a bounded queue.
///
/// An engine takes 0.2 s to start and a page about 0.6 s of one core, so the server reads pages
/// on `threads` threads of their own (never the event loops nor the cooperative pool), keeps the
/// engines between pages, and refuses (`OCRError.Code.busy`) rather than queueing without end
/// once `queueLimit` pages wait: the HTTP layer answers 503 with Retry-After.
public final class OCRPool: Sendable {
    public let threads: Int
    public let queueLimit: Int
    public let limits: ImageLimits
    /// Each page must be read within this long (`OCREngine.deadline`).
    public let deadline: Duration
    let pool: NIOThreadPool
    /// Engines not in use. Made lazily, at most one per thread: a job takes one and gives it back.
    let idle = Mutex<[OCREngine]>([])
    /// Pages running or waiting.
    let admitted = Atomic<Int>(0)

    public init(
        threads: Int,
        queueLimit: Int,
        limits: ImageLimits = ImageLimits(),
        deadline: Duration = OCREngine.defaultDeadline
    ) {
        self.threads = max(1, threads)
        self.queueLimit = max(0, queueLimit)
        self.limits = limits
        self.deadline = deadline
        pool = NIOThreadPool(numberOfThreads: self.threads)
        pool.start()
    }

    /// Set by `close`.
    private let closed = Atomic<Bool>(false)

    /// Stops the pool's threads and waits for them to end (the page being read on each first;
    /// pages still waiting fail). The server closes it on its way out; a pool released without
    /// it stops its threads without waiting. Closing twice does nothing more.
    public func close() async {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        try? await pool.shutdownGracefully()
    }

    deinit {
        if !closed.load(ordering: .acquiring) { pool.shutdownGracefully { _ in } }
    }

    /// Pages running or waiting now.
    public var load: Int { admitted.load(ordering: .relaxed) }

    /// Reads a page on one of the pool's threads; `busy` at once when the queue is full or the
    /// pool is closed.
    public func read(data: Data, name: String) async throws -> OCRPage {
        guard !closed.load(ordering: .acquiring) else {
            throw OCRError("the server is stopping: try again shortly", code: .busy)
        }
        let n = admitted.wrappingAdd(1, ordering: .relaxed).newValue
        defer { admitted.wrappingSubtract(1, ordering: .relaxed) }
        guard n <= threads + queueLimit else {
            throw OCRError("\(threads) pages are being read and \(queueLimit) wait: try again shortly", code: .busy)
        }
        return try await pool.runIfActive { [self] in
            let engine = try idle.withLock { $0.popLast() } ?? OCREngine(limits: limits, deadline: deadline)
            defer { idle.withLock { $0.append(engine) } }
            return try engine.read(data: data, name: name)
        }
    }
}

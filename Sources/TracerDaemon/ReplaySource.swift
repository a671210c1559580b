import Foundation
import Synchronization
import TracerRanging
import TracerStore

/// Adverts from a replay file: docs/design.md's JSON lines,
/// `{"t": 1763776800.125, "address": "C3:11:…", "rssi": -63, "manufacturerData": {"76": "0215…"}}`.
///
/// Lines that cannot be read are skipped and counted (the first few are kept for the report):
/// one bad line in a day's capture must not stop the rest.
public final class ReplaySource: AdvertSource, Sendable {
    public let path: String
    public var name: String { "replay:\(path)" }
    public var isReplay: Bool { true }
    private let counts = Mutex((lines: 0, skipped: 0, problems: [String]()))

    public init(path: String) throws {
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw DaemonError("cannot read the replay file \(path)", code: .io, file: path)
        }
        self.path = path
    }

    /// Lines read, lines skipped, and the first problems, once the stream has ended.
    public var report: (lines: Int, skipped: Int, problems: [String]) { counts.withLock { $0 } }

    public func batches() -> AsyncThrowingStream<[Advert], any Error> {
        let (stream, continuation) = AsyncThrowingStream<[Advert], any Error>.makeStream(
            bufferingPolicy: .bufferingOldest(4)
        )
        // Reading and parsing run on their own thread, a stage ahead of the ranging.
        let thread = Thread { [self] in
            guard let handle = FileHandle(forReadingAtPath: path) else {
                continuation.finish(throwing: DaemonError("cannot read the replay file \(path)", code: .io, file: path))
                return
            }
            var batch: [Advert] = []
            batch.reserveCapacity(1024)
            for (number, text) in LineReader(handle: handle) {
                if text.isEmpty { continue }
                countLine()
                do {
                    batch.append(try Self.advert(text))
                } catch {
                    skip("\(path):\(number): \(error)")
                }
                if batch.count == 1024 {
                    if !send(batch, continuation) { return }
                    batch.removeAll(keepingCapacity: true)
                }
            }
            if !batch.isEmpty, !send(batch, continuation) { return }
            continuation.finish()
        }
        thread.name = "tracer.replay"
        thread.start()
        return stream
    }

    /// Hands a batch over, waiting while the consumer is four batches behind; false once it has gone.
    private func send(_ batch: [Advert], _ continuation: AsyncThrowingStream<[Advert], any Error>.Continuation) -> Bool
    {
        while true {
            switch continuation.yield(batch) {
            case .enqueued: return true
            case .terminated: return false
            case .dropped: usleep(200)
            @unknown default: return false
            }
        }
    }

    private func countLine() {
        counts.withLock { $0.lines += 1 }
    }

    private func skip(_ problem: String) {
        counts.withLock {
            $0.skipped += 1
            if $0.problems.count < 5 { $0.problems.append(problem) }
        }
    }

    /// One line of the replay format.
    static func advert(_ line: String) throws -> Advert {
        guard case .map(let f) = try JSON.parse(line) else { throw ReplayError(.notJSON, "not a JSON object") }
        guard let t = f["t"]?.doubleValue, t.isFinite else {
            throw ReplayError(.badField, "no time \"t\"", context: "t")
        }
        guard case .integer(let rssi)? = f["rssi"], (-127...20).contains(rssi) else {
            throw ReplayError(.badField, "no whole-number \"rssi\" in dBm", context: "rssi")
        }
        var data: [(company: UInt16, data: [UInt8])] = []
        if case .map(let m)? = f["manufacturerData"] {
            for (key, value) in m {
                guard let company = UInt16(key), case .string(let hex) = value, let bytes = Hex.decode(hex) else {
                    throw ReplayError(
                        .badField,
                        "manufacturerData must map decimal company ids to hex",
                        context: "manufacturerData"
                    )
                }
                data.append((company, bytes))
            }
        }
        var txPower: Int?
        if case .integer(let p)? = f["txPower"] { txPower = Int(p) }
        return Advert(time: t, rssi: Int(rssi), manufacturerData: data, txPower: txPower)
    }
}

/// Why a replay's line is not an advert: a code to decide by, the field it concerns, and one
/// line for people (the daemon reports the first few with their file and line, and skips them).
struct ReplayError: Error, Equatable, CustomStringConvertible {
    enum Code: String, Equatable {
        /// The line is not a JSON object.
        case notJSON
        /// A field is missing or not what the format says.
        case badField
    }

    let code: Code
    /// The field it concerns (`t`, `rssi`, `manufacturerData`), when there is one.
    let context: String?
    let description: String

    init(_ code: Code, _ description: String, context: String? = nil) {
        self.code = code
        self.description = description
        self.context = context
    }
}

import Foundation
import Synchronization
import TracerRanging
import TracerStore

/// Herald-style CSV logs for analysis outside tracer: `contacts.csv`, one row per reading, and
/// `detection.csv`, one row per (device, anchor), written when the daemon stops. No Bluetooth
/// address is in either: tracer never has one past the source.
public final class CSVLog: Sendable {
    private let contacts: FileHandle
    /// Rows not yet written, and each (device, anchor)'s first and last reading.
    private let state = Mutex<
        (buffer: Data, detections: [String: (device: String, anchor: String, first: Double, last: Double, count: Int)])
    >((Data(), [:]))
    private let directory: String

    public init(directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.directory = directory
        let path = (directory as NSString).appendingPathComponent("contacts.csv")
        let fresh = !FileManager.default.fileExists(atPath: path)
        if fresh,
            !FileManager.default.createFile(
                atPath: path,
                contents: Data("time,device,anchor,rssi,smoothedRSSI,distance\n".utf8)
            )
        {
            throw DaemonError("cannot write \(path)", code: .io, file: path)
        }
        guard let handle = FileHandle(forWritingAtPath: path) else {
            throw DaemonError("cannot write \(path)", code: .io, file: path)
        }
        handle.seekToEndOfFile()
        contacts = handle
    }

    /// Adds one reading.
    public func reading(_ s: Sighting, smoothed: Double, distance: Double?) {
        let row =
            "\(Self.time(s.time)),\(s.deviceID),\(s.anchorKey),\(Int(s.rssi)),\(String(format: "%.1f", smoothed)),"
            + (distance.map { String(format: "%.2f", $0) } ?? "") + "\n"
        let key = s.deviceID + "\u{1}" + s.anchorKey
        let full = state.withLock { state in
            state.buffer.append(contentsOf: row.utf8)
            if var d = state.detections[key] {
                d.last = s.time
                d.count += 1
                state.detections[key] = d
            } else {
                state.detections[key] = (s.deviceID, s.anchorKey, s.time, s.time, 1)
            }
            return state.buffer.count > 1 << 16
        }
        if full { flush() }
    }

    /// Writes what is buffered to contacts.csv.
    public func flush() {
        let data = state.withLock { state in
            defer { state.buffer.removeAll(keepingCapacity: true) }
            return state.buffer
        }
        if !data.isEmpty { contacts.write(data) }
    }

    /// Flushes contacts.csv and writes detection.csv.
    public func close() throws {
        flush()
        try contacts.close()
        var text = "device,anchor,firstSeen,lastSeen,readings\n"
        for d in state.withLock({ $0.detections.values }).sorted(by: { ($0.first, $0.device) < ($1.first, $1.device) })
        {
            text += "\(d.device),\(d.anchor),\(Self.time(d.first)),\(Self.time(d.last)),\(d.count)\n"
        }
        try text.write(
            toFile: (directory as NSString).appendingPathComponent("detection.csv"),
            atomically: true,
            encoding: .utf8
        )
    }

    static func time(_ t: Double) -> String { Timestamp(seconds: t).iso8601 }
}

import ArgumentParser
import Foundation
@_spi(Blocking) import TracerStore

/// Writing to the terminal: whole lines, unbuffered, so pipes see each line as it happens.
enum Output {
    /// A word as a shell takes it back: as it is when it is plain, else in single quotes.
    static func shellQuoted(_ word: String) -> String {
        let plain = word.unicodeScalars.allSatisfy {
            CharacterSet.alphanumerics.contains($0) || "_./:@%+=,-".unicodeScalars.contains($0)
        }
        return plain && !word.isEmpty ? word : "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    static var stderrIsTerminal: Bool { isatty(2) == 1 }

    /// A progress line redrawn in place on a terminal: `label  [#####.....]  40%  n/total`.
    static func progress(_ label: String, _ done: Int, _ total: Int?) {
        guard stderrIsTerminal else { return }
        var text = "\r\(label) \(done)"
        if let total, total > 0 {
            let fraction = min(1, Double(done) / Double(total))
            let filled = Int(fraction * 30)
            text =
                "\r\(label) [" + String(repeating: "#", count: filled) + String(repeating: ".", count: 30 - filled)
                + "] \(Int(fraction * 100))%  \(done)/\(total)"
        }
        FileHandle.standardError.write(Data(text.utf8))
    }

    static func endProgress() {
        if stderrIsTerminal { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}

/// Values for people: readable times, short bytes, JSON for the rest.
enum HumanFormat {
    static func render(_ value: Value) -> String {
        switch value {
        case .timestamp(let t): time(t)
        case .bytes(let b): "<\(b.count) bytes>"
        case .string(let s): JSON.string(.string(s))
        case .array(let a): "[" + a.map(render).joined(separator: ", ") + "]"
        case .map(let m):
            "{" + m.keys.sorted().map { "\($0): \(render(m[$0]!))" }.joined(separator: ", ") + "}"
        default: JSON.string(value)
        }
    }

    /// `2026-11-22 10:00:05Z`, with fractions only when there are some.
    static func time(_ t: Timestamp) -> String {
        var s = t.iso8601.replacingOccurrences(of: "T", with: " ").dropLast()  // the Z
        while s.hasSuffix("0") { s = s.dropLast() }
        if s.hasSuffix(".") { s = s.dropLast() }
        return s + "Z"
    }

    /// A document as indented `field: value` lines under its path.
    static func document(_ doc: DocumentSnapshot) -> String {
        var lines = [doc.path.description]
        if let created = doc.createTime, let updated = doc.updateTime {
            lines.append("  (created \(time(created)), updated \(time(updated)))")
        }
        let data = doc.data ?? [:]
        let width = data.keys.map(\.count).max() ?? 0
        for key in data.keys.sorted() {
            lines.append("  " + key.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + render(data[key]!))
        }
        return lines.joined(separator: "\n")
    }
}

extension DocumentSnapshot {
    /// `{"path": ..., "data": {...}}`
    var jsonLine: String { DocumentStore.exportLine(self) }
}

/// A file that holds a secret (a token): created readable and writable by its owner only (0600)
/// before anything is written to it, then renamed into place, so that no moment of it is
/// readable by others, whatever the umask (a shell's `> file` gives 0644).
enum SecretFile {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Says in one line, before anything is made, when `path` cannot be written.
    static func checkWritable(_ path: String, option: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        let folder = directory.isEmpty ? "." : directory
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw ValidationError("\(option) \(path): a folder, not a file")
        }
        guard FileManager.default.isWritableFile(atPath: folder) else {
            throw ValidationError("\(option) \(path): cannot write there (no folder \(folder), or not writable)")
        }
    }

    static func write(_ text: String, to path: String) throws { try write(bytes: Array(text.utf8), to: path) }

    /// The same for any content: a card's QR code or a sheet of cards holds the links they open.
    static func write(bytes: [UInt8], to path: String) throws {
        let temporary = path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(description: String(cString: strerror(errno))) }
        let written = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd)
        close(fd)
        guard written == bytes.count, synced == 0, rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw Failure(description: reason)
        }
    }
}

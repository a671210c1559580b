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

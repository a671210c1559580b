import Foundation

extension FileHandle {
    /// What a starting server prints first (its address, its port, "ready"): the bytes read until
    /// a newline or the end of the stream, without surrounding whitespace ("" when it printed
    /// nothing before it ended).
    public func firstLine() -> String {
        var seen = Data()
        while !seen.contains(10) {
            let chunk = availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
        }
        return String(decoding: seen, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

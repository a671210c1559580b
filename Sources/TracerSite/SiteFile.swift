import Foundation
import Yams

/// Edits to a BeaconMap file that keep what people wrote: comments, order, layout.
public enum SiteFile {
    /// Sets keys of the top-level `settings` mapping (adding it if missing), then checks that
    /// the result still loads before replacing the file.
    public static func updateSettings(file: String, _ values: [(key: String, value: String)], comment: String) throws {
        var lines = try Self.lines(of: file)
        try setSettings(&lines, file: file, values, comment: comment)
        try replace(file, lines)
    }

    /// Sets each anchor's keys and the settings' in one edit, each anchor with its own note and
    /// the settings with theirs, then checks that the result loads before replacing the file:
    /// what `tracer site calibration --write` stores, every kiosk of a site at once.
    public static func update(
        file: String,
        anchors: [(key: String, values: [(key: String, value: String)], comment: String)],
        settings: [(key: String, value: String)],
        comment: String
    ) throws {
        var lines = try Self.lines(of: file)
        for a in anchors { try setAnchor(&lines, file: file, key: a.key, a.values, comment: a.comment) }
        if !settings.isEmpty { try setSettings(&lines, file: file, settings, comment: comment) }
        try replace(file, lines)
    }

    /// Whether a comment line is the note a calibration left (replaced by the next, not piled up).
    static func isCalibrationNote(_ line: String) -> Bool {
        line.trimmingCharacters(in: .whitespaces).hasPrefix("# ")
            && (line.contains("tracer calibrate") || line.contains("tracer site calibration"))
    }

    static func setSettings(
        _ lines: inout [String],
        file: String,
        _ values: [(key: String, value: String)],
        comment: String
    ) throws {
        let root = try Yams.compose(yaml: lines.joined(separator: "\n"))
        let settings = root?.mapping?.first { $0.key.string == "settings" }
        if let settings {
            // A block mapping's first key sits on a later line than `settings:`; Yams does not
            // keep the style it parsed.
            guard let mapping = settings.value.mapping,
                let first = mapping.first?.key.mark?.line, let own = settings.key.mark?.line, first > own
            else {
                throw SiteError(
                    file: file,
                    line: settings.key.mark?.line,
                    message: "settings is written inline ({...}); write it one key per line so that it can be updated"
                )
            }
            let indent = String(repeating: " ", count: max(2, (mapping.first?.key.mark?.column ?? 3) - 1))
            var lastLine = settings.key.mark?.line ?? 1
            for (k, v) in mapping { lastLine = max(lastLine, k.mark?.line ?? 0, v.mark?.line ?? 0) }
            var inserted = 0
            for (key, value) in values {
                if let existing = mapping.first(where: { $0.key.string == key }), let line = existing.key.mark?.line {
                    lines[line - 1] = indent + "\(key): \(value)"
                } else {
                    lines.insert(indent + "\(key): \(value)", at: lastLine + inserted)
                    inserted += 1
                }
            }
            if let line = settings.key.mark?.line {
                // One note of the last calibration, not a pile of them.
                if line >= 2, isCalibrationNote(lines[line - 2]) {
                    lines[line - 2] = "# \(comment)"
                } else {
                    lines.insert("# \(comment)", at: line - 1)
                }
            }
        } else {
            lines.append("# \(comment)")
            lines.append("settings:")
            for (key, value) in values { lines.append("  \(key): \(value)") }
        }
    }

    /// Sets keys of an anchor's mapping in `anchors:` (flow `{…}` on one line, or block), with
    /// one comment line above the anchor, then checks that the result loads before replacing
    /// the file.
    public static func updateAnchor(
        file: String,
        key: String,
        _ values: [(key: String, value: String)],
        comment: String
    ) throws {
        var lines = try Self.lines(of: file)
        try setAnchor(&lines, file: file, key: key, values, comment: comment)
        try replace(file, lines)
    }

    static func setAnchor(
        _ lines: inout [String],
        file: String,
        key: String,
        _ values: [(key: String, value: String)],
        comment: String
    ) throws {
        // Each key is set on the text as the one before left it (a flow line's columns move).
        for (field, value) in values {
            let node = try anchor(key, in: lines, file: file)
            guard let mapping = node.mapping, let first = mapping.first?.key.mark?.line else {
                throw SiteError(file: file, line: node.mark?.line, message: "anchor '\(key)' is not a mapping")
            }
            var lastLine = first
            for (k, v) in mapping { lastLine = max(lastLine, k.mark?.line ?? 0, v.mark?.line ?? 0) }
            if let existing = mapping.first(where: { $0.key.string == field }), let kLine = existing.key.mark?.line,
                let vMark = existing.value.mark, vMark.line == kLine
            {
                // Replace the old value's text: from its column to the next `,` or `}` or the line's end.
                var chars = Array(lines[kLine - 1])
                let start = vMark.column - 1
                var end = start
                while end < chars.count, chars[end] != ",", chars[end] != "}", chars[end] != "#" { end += 1 }
                while end > start, chars[end - 1] == " " { end -= 1 }
                chars.replaceSubrange(start..<end, with: Array(value))
                lines[kLine - 1] = String(chars)
            } else if let mark = node.mark, Array(lines[mark.line - 1]).dropFirst(mark.column - 1).first == "{" {
                // A flow mapping (Yams does not keep the style it parsed: the brace at its mark says).
                // Before the closing brace of the mapping's last line.
                guard let brace = lines[lastLine - 1].lastIndex(of: "}") else {
                    throw SiteError(file: file, line: lastLine, message: "anchor '\(key)': cannot find its closing }")
                }
                lines[lastLine - 1].insert(contentsOf: ", \(field): \(value)", at: brace)
            } else {
                let indent = String(repeating: " ", count: max(0, (mapping.first?.key.mark?.column ?? 1) - 1))
                lines.insert(indent + "\(field): \(value)", at: lastLine)
            }
        }
        // One note of the last calibration above the anchor.
        if let line = try anchor(key, in: lines, file: file).mark?.line {
            let indent = String(lines[line - 1].prefix { $0 == " " })
            if line >= 2, isCalibrationNote(lines[line - 2]) {
                lines[line - 2] = indent + "# \(comment)"
            } else {
                lines.insert(indent + "# \(comment)", at: line - 1)
            }
        }
    }

    /// The node of the anchor with this key in the map's text.
    static func anchor(_ key: String, in lines: [String], file: String) throws -> Node {
        let root = try Yams.compose(yaml: lines.joined(separator: "\n"))
        let anchors = root?.mapping?.first { $0.key.string == "anchors" }?.value.sequence
        guard let node = anchors?.first(where: { $0.mapping?.first { $0.key.string == "key" }?.value.string == key })
        else {
            throw SiteError(file: file, line: nil, message: "no anchor '\(key)' in the map")
        }
        return node
    }

    /// The file's lines, without the empty one after its last newline.
    static func lines(of file: String) throws -> [String] {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw SiteError(file: file, line: nil, message: "cannot read the file")
        }
        var lines = String(decoding: data, as: UTF8.self).components(separatedBy: "\n")
        if lines.last == "" { lines.removeLast() }
        return lines
    }

    /// Replaces the file with these lines once they load as a site, atomically.
    static func replace(_ file: String, _ lines: [String]) throws {
        let text = lines.joined(separator: "\n") + "\n"
        _ = try Site.parse(text, file: file)  // never leave a map that does not load
        // Written beside the map, then renamed over it: the map is whole at every moment.
        let temporary = file + ".tmp"
        try text.write(toFile: temporary, atomically: false, encoding: .utf8)
        if rename(temporary, file) != 0 {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw SiteError(file: file, line: nil, message: "cannot replace the file: \(reason)")
        }
    }
}

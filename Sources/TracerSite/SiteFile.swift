import Foundation
import Yams

/// Edits to a BeaconMap file that keep what people wrote: comments, order, layout.
public enum SiteFile {
    /// Sets keys of the top-level `settings` mapping (adding it if missing), then checks that
    /// the result still loads before replacing the file.
    public static func updateSettings(file: String, _ values: [(key: String, value: String)], comment: String) throws {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw SiteError(file: file, line: nil, message: "cannot read the file")
        }
        var lines = String(decoding: data, as: UTF8.self).components(separatedBy: "\n")
        if lines.last == "" { lines.removeLast() }
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
                let previous = line >= 2 ? lines[line - 2] : ""
                if previous.hasPrefix("# "), previous.contains("tracer calibrate") {
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

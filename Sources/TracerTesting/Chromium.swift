import Foundation

/// Debian's headless Chromium driven by `Tools/testing/browser.py` (the DevTools protocol), and
/// axe-core for accessibility: what the page tests share.
public enum Chromium {
    /// The repository's root.
    public static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path
    public static let testingTools = package + "/Tools/testing"

    /// Where tests leave what a person may want to look at (screenshots).
    public static let artifacts: String = {
        let path = package + "/.build/test-artifacts"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    public static var installed: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium") }

    /// Runs browser.py on a thread of its own (it blocks); its JSON line and exit status.
    public static func browser(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
                process.arguments = [testingTools + "/browser.py"] + arguments
                let out = Pipe()
                process.standardOutput = out
                do {
                    try process.run()
                    let data = out.fileHandleForReading.readDataToEndOfFile()
                    process.waitUntilExit()
                    continuation.resume(returning: (process.terminationStatus, String(decoding: data, as: UTF8.self)))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            thread.start()
        }
    }

    /// What browser.py said: whether the page got ready, whether the check held and when (the
    /// wall clock), and axe-core's serious and critical violations (with --axe).
    public struct Outcome: Decodable, Sendable {
        public struct Violation: Decodable, Sendable, CustomStringConvertible {
            public let id: String
            public let impact: String
            public let help: String
            public let nodes: [String]
            public var description: String { "\(impact) \(id): \(help) \(nodes)" }
        }
        /// One `--step`: whether its check held, how long it took, and when it ended (wall clock).
        public struct Step: Decodable, Sendable {
            public let check: Bool
            public let seconds: Double
            public let at: Double
        }
        public let ready: Bool
        public let check: Bool?
        public let checkedAt: Double?
        public let axe: [Violation]?
        public let steps: [Step]?
        /// With `--installable`: Chromium's reasons it would not offer to install the page, and
        /// the manifest it found.
        public let installability: [String]?
        public let manifest: String?
    }

    /// `browser` with its outcome decoded (nil when it printed none), and its whole output.
    public static func run(_ arguments: [String]) async throws -> (status: Int32, outcome: Outcome?, output: String) {
        let (status, output) = try await browser(arguments)
        let line = output.split(separator: "\n").last.map(String.init) ?? ""
        return (status, try? JSONDecoder().decode(Outcome.self, from: Data(line.utf8)), output)
    }

    /// The English left on a page shown in another language: every visible text of the page
    /// that holds an English word French never uses. What the site wrote (its name, its
    /// guidance, ids: `translate="no"`) and what is marked as another language (the server's own
    /// words) are left out.
    public static let englishOnPage = #"""
        (() => { const english = /(^|[^\p{L}])(the|and|your|with|this|that|could|was|were|been|has|have|not|is|are|of|to|be|from|report|please)(?![\p{L}])/iu; const out = []; const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT); for (let n = walk.nextNode(); n; n = walk.nextNode()) { const el = n.parentElement; if (!el || el.closest('[hidden], [translate=no], script, style') || (el.closest('[lang]') && el.closest('[lang]').lang !== document.documentElement.lang)) continue; if (english.test(n.textContent)) out.push(n.textContent.trim()); } return out; })()
        """#

    /// The arguments for a phone-sized window (390×844) and a screenshot in `artifacts`, the
    /// screenshot's old files (and its steps') removed.
    public static func phone(_ url: String, screenshot name: String) -> [String] {
        let shot = artifacts + "/" + name
        let stem = String(name.dropLast(4))
        for file in (try? FileManager.default.contentsOfDirectory(atPath: artifacts)) ?? []
        where file == name || file == name + ".ready" || file.hasPrefix(stem + "-step") || file == stem + "-before.png"
        {
            try? FileManager.default.removeItem(atPath: artifacts + "/" + file)
        }
        return [url, "--screenshot", shot, "--width", "390", "--height", "844", "--timeout", "60"]
    }

    /// axe-core's script (`Tools/testing/axe-core` installs it from PyPI once).
    public static func axeCore() throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: testingTools + "/axe-core")
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let path = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard process.terminationStatus == 0, FileManager.default.fileExists(atPath: path) else {
            throw POSIXError(.ENOENT, userInfo: ["axe-core": path])
        }
        return path
    }

    /// Waits (up to `seconds`) until browser.py says the page is ready (its `.ready` file).
    public static func waitUntilReady(_ screenshot: String, seconds: Double = 90) async throws {
        let marker = artifacts + "/" + screenshot + ".ready"
        let deadline = Date().addingTimeInterval(seconds)
        while !FileManager.default.fileExists(atPath: marker), Date() < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}

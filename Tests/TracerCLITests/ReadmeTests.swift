import Foundation
import Testing
import TracerTesting

/// The README's quick start for a site, run as a person would paste it (after the build), from
/// the repository: it must end with the people flagged at the lab listed. (Its port is a free one
/// here, and a trap stops the server should a line fail.)
@Suite struct ReadmeTests {
    let dir = TemporaryDirectory("tracer-readme")

    static func quickStart() throws -> String {
        let readme = try String(contentsOfFile: Chromium.package + "/README.md", encoding: .utf8)
        guard let section = readme.range(of: "## Quick start for a site"),
            let open = readme.range(of: "```sh\n", range: section.upperBound..<readme.endIndex),
            let close = readme.range(of: "\n```", range: open.upperBound..<readme.endIndex)
        else { throw CocoaError(.fileReadCorruptFile) }
        return String(readme[open.upperBound..<close.lowerBound])
    }

    /// docs/cli.md and docs/api.md are made from the commands' help and the OpenAPI document:
    /// they must not fall behind either.
    @Test func theMadeReferencesAreCurrent() async throws {
        let r = try await TracerProcess.running(
            ["--check"],
            environment: ["TRACER_BIN": TracerProcess.binary],
            program: Chromium.package + "/Tools/docs/reference"
        )
        #expect(r.status == 0, "\(r.stderr)")
    }

    @Test func theQuickStartEndsWithTheExposuresListed() async throws {
        let lines = try Self.quickStart()
        #expect(lines.split(separator: "\n").count <= 35, "the quick start is about 30 lines")
        let port = try PostgresCluster.freePort()
        let script =
            "set -eu\ntrap '[ -n \"${server:-}\" ] && kill \"$server\" 2>/dev/null || true' EXIT\n"
            + "cd '\(Chromium.package)'\n" + lines.replacingOccurrences(of: "127.0.0.1:8080", with: "127.0.0.1:\(port)")
        let file = dir.file("quick-start.sh")
        try script.write(toFile: file, atomically: true, encoding: .utf8)
        let r = try await TracerProcess.running(
            [file],
            environment: ["TMPDIR": dir.path, "TRACER_STORE": "", "TRACER_SERVER": "", "TRACER_TOKEN_FILE": ""],
            program: "/bin/bash"
        )
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        let out = r.stdout.split(separator: "\n")
        #expect(out.contains { $0.hasPrefix("recorded report ") }, "\(r.stdout)")
        let table = out.drop { !$0.hasPrefix("device ") }
        #expect(table.first?.contains("how close") == true, "\(r.stdout)")
        #expect(table.dropFirst().first?.contains("Wet Lab (kiosk-lab)") == true, "\(r.stdout)")
        #expect(table.contains { $0.contains(" exposures of ") || $0.contains(" exposure of ") }, "\(r.stdout)")
        // Its token files are readable by their owner only, whatever the umask.
        let files = FileManager.default.enumerator(atPath: dir.path)?.compactMap { $0 as? String } ?? []
        let tokens = files.filter { $0.hasSuffix(".token") }
        #expect(tokens.count >= 3, "\(files)")
        for token in tokens {
            let mode = try FileManager.default.attributesOfItem(atPath: dir.file(token))[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(token): \(String(mode ?? 0, radix: 8))")
        }
    }
}

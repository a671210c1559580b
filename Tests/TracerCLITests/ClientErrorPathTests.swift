import Foundation
import Testing
import TracerTesting

/// Each command that makes an HTTP client, then meets a mistake: a one-line error and a non-zero
/// exit. Before the clients were scoped (`withShutdown`), the client made first was dropped
/// unshut when the next step threw, and the debug build (the one `Tools/demo` and the tests run)
/// trapped with AsyncHTTPClient's "Client not shut down before the deinit" and a backtrace.
@Suite struct ClientErrorPathTests {
    let dir = TemporaryDirectory("tracer-client-errors")
    static let map = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("BeaconMap/example-campus.yaml").path

    var token: String {
        let file = dir.file("token")
        try? "tracer_abc_def\n".write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    func oneLine(_ args: [String], _ words: String) async throws {
        let r = try await TracerProcess.running(args)
        #expect(r.status != 0 && r.status < 128, "exit \(r.status): \(r.stderr)")
        #expect(!r.stderr.contains("Fatal error") && !r.stderr.contains("Backtrace"), "\(r.stderr)")
        #expect(r.stderr.contains(words), "\(args): \(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(args): \(r.stderr)")
    }

    @Test func aWebhookThenAStoreThatIsNotThere() async throws {
        try await oneLine(
            ["notify", "--webhook", "http://127.0.0.1:9/x", "--store", "/no/such/dir/file.sqlite"],
            "/no/such/dir/file.sqlite"
        )
    }

    @Test func anUpstreamThenAMapThatIsNotThere() async throws {
        try await oneLine(
            [
                "daemon", "--upstream", "http://127.0.0.1:9", "--token-file", token, "--map", "/no/such/map.yaml",
                "--anchor", "kiosk-lab", "--source", "replay:/dev/null", "--store", dir.file("k.sqlite"),
            ],
            "/no/such/map.yaml"
        )
    }

    @Test func anUpstreamWithATokenFileThatIsNotThere() async throws {
        try await oneLine(
            [
                "daemon", "--upstream", "http://127.0.0.1:9", "--token-file", "/no/such/token", "--map", Self.map,
                "--anchor", "kiosk-lab", "--source", "replay:/dev/null", "--store", dir.file("k.sqlite"),
            ],
            "/no/such/token"
        )
    }

    @Test func aServerThatDoesNotAnswer() async throws {
        let server = ["--server", "http://127.0.0.1:9", "--token-file", token]
        try await oneLine(["status", "--device", "d1"] + server, "127.0.0.1:9")
        try await oneLine(["report", "pending"] + server, "127.0.0.1:9")
        try await oneLine(["report", "approve", "r1"] + server, "127.0.0.1:9")
        try await oneLine(
            ["self-report", "/no/such/result.png", "--device", "d1", "--yes"] + server,
            "/no/such/result.png"
        )
    }
}

import Foundation
import Testing
import TracerTesting

/// `tracer token` and `tracer serve` as an operator runs them: the built binary, its output, its
/// exit status, and how it stops.
@Suite struct ServeCommandTests {
    let dir = TemporaryDirectory("tracer-serve-cli")
    var store: String { dir.file("s.sqlite") }
    static let map = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("BeaconMap/example-campus.yaml").path

    func tracer(_ args: String...) async throws -> TracerProcess.Result {
        try await TracerProcess.running(args + ["--store", store])
    }

    @Test func tokensAreShownOnceListedWithoutSecretsAndRevoked() async throws {
        let created = try await tracer("token", "create", "--role", "kiosk", "--name", "lab kiosk")
        #expect(created.status == 0, "\(created.stderr)")
        let token = created.stdout.trimmingCharacters(in: .newlines)
        #expect(token.hasPrefix("tracer_") && !token.contains("\n"), "stdout is the token alone: \(created.stdout)")
        #expect(created.stderr.contains("shown once"))
        let parts = token.split(separator: "_")
        let (id, secret) = (String(parts[1]), String(parts[2]))

        let list = try await tracer("token", "list")
        #expect(list.stdout.contains(id) && list.stdout.contains("kiosk") && list.stdout.contains("lab kiosk"))
        #expect(!list.stdout.contains(secret))
        let export = try await tracer("db", "export")
        #expect(!export.stdout.contains(secret), "the secret is in the store")

        let revoked = try await tracer("token", "revoke", id)
        #expect(revoked.status == 0 && revoked.stdout.contains("revoked"))
        #expect(try await tracer("token", "list").stdout.contains("revoked"))
    }

    @Test(arguments: [
        (["token", "create", "--role", "root"], "--role takes admin, kiosk or device, not 'root'"),
        (["token", "create", "--role", "device"], "a device token needs --device ID"),
        (["token", "create", "--role", "admin", "--device", "d1"], "only a device token takes --device"),
        (["token", "revoke", "nope"], "no token with id 'nope'"),
        (["serve", "--bind", "localhost:http"], "--bind takes HOST:PORT"),
        (["serve", "--occupancy-window", "0"], "--occupancy-window takes seconds above 0"),
    ])
    func badInputIsOneLineAndExitOne(_ args: [String], _ words: String) async throws {
        _ = try await tracer("token", "create", "--role", "admin")  // the store exists
        let r = try await TracerProcess.running(args + ["--store", store])
        #expect(r.status == 1)
        #expect(r.stderr.contains(words), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
    }

    /// systemd stops it with SIGTERM: open event streams end, and it exits 0.
    @Test func servesAndStopsCleanlyOnSIGTERMWithAStreamOpen() async throws {
        let token = try await tracer("token", "create", "--role", "admin").stdout.trimmingCharacters(in: .newlines)
        let server = try TracerProcess.start([
            "serve", "--bind", "127.0.0.1:0", "--map", Self.map, "--store", store,
        ])
        defer { server.kill() }
        let line = try #require(await server.line(), "serve printed nothing")
        let port = try #require(
            line.split(separator: ":").last.flatMap { Int($0.prefix { $0.isNumber }) },
            "no port in: \(line)"
        )
        #expect(line.hasPrefix("serving ") && line.contains("http://127.0.0.1:\(port)/"), "\(line)")
        #expect(await httpGet(port: UInt16(port), path: "/health")?.contains(#""status":"ok""#) == true)

        let stream = try SSEClient(
            port: port,
            path: "/v1/watch?path=devices",
            headers: ["Authorization": "Bearer \(token)"]
        )
        defer { stream.stop() }
        #expect(await stream.wait { !$0.isEmpty }, "\(stream.responseHead)")
        // A deadline a loaded machine cannot miss, not a timing: the stream must not hold it up.
        let stopped = try #require(await server.stop(SIGTERM, timeout: 60), "still running 60 s after SIGTERM")
        #expect(stopped.status == 0)
    }
}

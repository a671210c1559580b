import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import TracerAPI
import TracerModel
import TracerReplication
import TracerStore

/// `--server URL --token-file FILE [--ca-file F]`: a person's command against the site server
/// instead of a store on this machine. `TRACER_SERVER` and `TRACER_TOKEN_FILE` stand in for
/// the flags.
struct ServerOptions: ParsableArguments {
    @Option(
        help:
            "The site server's URL (default: $TRACER_SERVER; several, comma-separated, are tried in turn): run this against it, not a local store."
    )
    var server: String?
    @Option(help: "A file holding your token (default: $TRACER_TOKEN_FILE).") var tokenFile: String?
    @Option(help: "A PEM CA certificate to verify the server by (default: the system's trust store).") var caFile:
        String?

    static func environment(_ name: String) -> String? {
        ProcessInfo.processInfo.environment[name].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The server's URL, if this command goes to one.
    var url: String? { server ?? Self.environment("TRACER_SERVER") }

    /// Runs `body` with the client for the server (nil for a local command), shut down on every
    /// path out.
    func withUpstream<Result>(_ body: (Upstream?) async throws -> Result) async throws -> Result {
        try await withShutdown({ try upstream() }, body)
    }

    /// The client for the server, or nil for a local command: through `withUpstream`.
    private func upstream() throws -> Upstream? {
        guard let url else {
            if tokenFile != nil || caFile != nil {
                throw ValidationError("--token-file and --ca-file go with --server URL (or TRACER_SERVER)")
            }
            return nil
        }
        guard let file = tokenFile ?? Self.environment("TRACER_TOKEN_FILE") else {
            throw ValidationError("--server needs --token-file FILE (or TRACER_TOKEN_FILE): your token from the site")
        }
        do {
            return try Upstream(url, tokenFile: file, caFile: caFile, timeout: .seconds(120))
        } catch let e as SyncError {
            throw ValidationError(e.message.replacingOccurrences(of: "--upstream", with: "--server"))
        }
    }
}

/// A `multipart/form-data` body, as `POST /v1/reports` takes it.
struct MultipartForm {
    let boundary = "tracer-" + UUID().uuidString
    var body: [UInt8] = []

    var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    mutating func add(_ name: String, _ value: String) {
        body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n".utf8)
    }

    mutating func add(_ name: String, file: String, data: Data) {
        let filename = (file as NSString).lastPathComponent.replacingOccurrences(of: "\"", with: "")
        body += Array(
            "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"; filename=\"\(filename)\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                .utf8
        )
        body += data
        body += Array("\r\n".utf8)
    }

    func finished() -> [UInt8] { body + Array("--\(boundary)--\r\n".utf8) }
}

/// What the site server answers, read for a command's output.
enum RemoteAnswer {
    /// An answer's body as the contract's type, or an error naming the server.
    static func decode<T: Decodable>(_ type: T.Type, _ answer: Upstream.Answer, from server: String) throws -> T {
        guard let value = Responses.decode(type, from: answer.body) else {
            throw ValidationError("\(server) answered HTTP \(answer.status) with something that is not tracer's JSON")
        }
        return value
    }

    /// A one-line error for an answer that is not a success: whose token, what the server said.
    static func failure(_ answer: Upstream.Answer, _ up: Upstream) -> ValidationError {
        switch answer.status {
        case 401: ValidationError("the site server refused the token in \(up.tokenFile): \(answer.message)")
        case 403: ValidationError("the site server does not let this token do that: \(answer.message)")
        case 503:
            ValidationError(
                "the site server is busy (\(answer.message)); try again in \(answer.headers.first(name: "Retry-After") ?? "a few") s"
            )
        default: ValidationError("\(up.base): \(answer.message)")
        }
    }

    /// A request whose failure to connect is a one-line error.
    static func send(_ body: () async throws -> Upstream.Answer) async throws -> Upstream.Answer {
        do { return try await body() } catch let e as SyncError {
            throw ValidationError("the site server cannot be reached: \(e.message)")
        }
    }
}

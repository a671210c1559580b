import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import TracerAPI
import TracerModel
import TracerReplication
@_spi(Blocking) import TracerStore

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

    /// Runs `body` with the API's generated client for the server (nil for a local command),
    /// its connections closed on every path out.
    func withSite<Result>(_ body: (SiteClient?) async throws -> Result) async throws -> Result {
        try await withUpstream { up in try await body(try up.map(SiteClient.init)) }
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

extension SiteClient {
    /// Calls the API (the generated `Client`); whatever goes wrong is one line for the person:
    /// a refusal says whose token and what the server said, an unreachable server says so.
    func run<Result>(_ body: (Client) async throws -> Result) async throws -> Result {
        do {
            return try await call(body)
        } catch let refusal as Refusal {
            throw Self.failure(refusal, upstream)
        } catch let e as SyncError {
            throw ValidationError(
                e.code == .unavailable ? "the site server cannot be reached: \(e.message)" : e.message
            )
        }
    }

    /// A one-line error for an answer that is not a success: whose token, what the server said.
    static func failure(_ refusal: Refusal, _ up: Upstream) -> ValidationError {
        switch refusal.status {
        case 401: ValidationError("the site server refused the token in \(up.tokenFile): \(refusal.message)")
        case 403: ValidationError("the site server does not let this token do that: \(refusal.message)")
        // What the server said of the thing asked for (no such report, decided already).
        case 404, 409: ValidationError(refusal.message)
        case 503:
            ValidationError(
                "the site server is busy (\(refusal.message)); try again in \(refusal.retryAfter ?? "a few") s"
            )
        default: ValidationError("\(up.base): \(refusal.message)")
        }
    }
}

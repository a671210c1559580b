import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL
import TracerModel

/// A receiver of status changes: JSON POSTed over HTTP or HTTPS (AsyncHTTPClient), verified
/// against the system's trust store or a CA file of the site's own. Call `shutdown()` when done.
public final class Webhook: AsyncShutdown {
    public let url: String
    let client: HTTPClient
    /// Each attempt, connection included, must be answered within this long.
    let timeout: TimeAmount

    public init(_ url: String, caFile: String? = nil, timeout: Duration = .seconds(10)) throws {
        guard let c = URLComponents(string: url), c.scheme == "http" || c.scheme == "https", let host = c.host,
            !host.isEmpty
        else {
            throw ExposureError(
                .badInput,
                "--webhook takes an http:// or https:// URL (like https://hooks.example.org/tracer), not '\(url)'"
            )
        }
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile {
            // Read now, so that a wrong path is a one-line error at start, not a failure per POST.
            do {
                tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile))
            } catch {
                throw ExposureError(.badInput, "--ca-file \(caFile): not a readable PEM certificate (\(error))")
            }
        }
        let milliseconds = Int64(timeout / .milliseconds(1))
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.timeout = .init(connect: .milliseconds(milliseconds), read: .milliseconds(milliseconds))
        configuration.redirectConfiguration = .disallow
        self.url = url
        self.timeout = .milliseconds(milliseconds)
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// Posts `body` as JSON; returns the HTTP status, or throws (`delivery`) when nothing answered.
    public func post(_ body: String) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "tracer-notify")
        request.body = .bytes(ByteBuffer(string: body))
        do {
            let response = try await client.execute(request, timeout: timeout)
            // Read (and drop) what it says, so that the connection can be reused.
            _ = try await response.body.collect(upTo: 1 << 20)
            return Int(response.status.code)
        } catch {
            throw ExposureError(.delivery, "\(url): \(error)")
        }
    }

    /// Closes the client's connections.
    public func shutdown() async throws { try await client.shutdown() }
}

import AsyncHTTPClient
import Foundation
import HTTPTypes
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime
import TracerAPI

/// The site server's API as the `--server` commands call it: the client generated from the
/// API's OpenAPI document (`Client`, `Operations`, `Components`), sent through an `Upstream`'s
/// AsyncHTTPClient (its TLS, its timeout) by swift-openapi-async-http-client, with the token
/// from the token file and the site's servers in turn.
///
/// An answer that is not a success never reaches the caller as a value: it is thrown as a
/// `Refusal` (its status and the server's one-line message), and a server that cannot be
/// reached as `SyncError.unavailable`, so that every command says what went wrong in one line.
package struct SiteClient: Sendable {
    package let upstream: Upstream
    package let client: Client

    /// The answers (operation id, status) a caller reads itself instead of a refusal: a
    /// self-report's check rejected (422) carries the rules it failed.
    static let readByCaller: Set<Answer> = [Answer(operation: "submitReport", status: 422)]

    struct Answer: Hashable {
        let operation: String
        let status: Int
    }

    package init(_ upstream: Upstream) throws {
        guard let url = URL(string: upstream.base) else {
            throw SyncError(.badInput, "not a URL: \(upstream.base)")
        }
        self.upstream = upstream
        client = Client(
            serverURL: url,
            transport: AsyncHTTPClientTransport(
                configuration: .init(client: upstream.client, timeout: upstream.timeout)
            ),
            middlewares: [UpstreamMiddleware(upstream: upstream)]
        )
    }

    /// Calls the API: `body` with the generated client; a refusal, an unreachable server or an
    /// answer that is not the document's comes out as the error it is, not the generator's
    /// wrapping of it.
    package func call<Result>(_ body: (Client) async throws -> Result) async throws -> Result {
        do {
            return try await body(client)
        } catch let e as ClientError {
            if let refusal = e.underlyingError as? Refusal { throw refusal }
            if let sync = e.underlyingError as? SyncError { throw sync }
            if e.underlyingError is DecodingError {
                throw SyncError(
                    .protocolError,
                    "\(upstream.base) answered \(e.operationID) with something that is not tracer's API (\(String(describing: e.underlyingError).prefix(160)))"
                )
            }
            throw SyncError(.unavailable, "\(upstream.base): \(Upstream.describe(e.underlyingError))")
        }
    }

    /// An answer that is not a success: its status, the server's message, and `Retry-After`.
    package struct Refusal: Error, Sendable, CustomStringConvertible {
        package let status: Int
        package let message: String
        package let retryAfter: String?
        package var description: String { message }
    }
}

/// Adds the token (read from its file at each request, so that a replaced token is used at
/// once), sends to the site's servers in turn (`Upstream.inTurn`), and turns an answer that is
/// not a success into a `SiteClient.Refusal`.
struct UpstreamMiddleware: ClientMiddleware {
    let upstream: Upstream
    /// The most a refusal's body, or a request sent to more than one server, may hold.
    static let limit = 16 << 20
    /// The most an answer may hold: a day of a large site's badge ids is the largest (the
    /// runtime itself would read an answer of any size).
    static let answerLimit = 64 << 20

    func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        // The runtime percent-encodes the headers the document declares (an ETag's quotes:
        // apple/swift-openapi-generator#857); the server takes them as they are.
        if let tag = request.headerFields[.ifNoneMatch] {
            request.headerFields[.ifNoneMatch] = tag.removingPercentEncoding
        }
        request.headerFields[.authorization] = "Bearer " + (try upstream.token())
        request.headerFields[.userAgent] = "tracer"
        // A body sent to one server and then another is read twice: a streamed one (a
        // multipart form) is collected first.
        var body = body
        if let streamed = body, upstream.bases.count > 1, streamed.iterationBehavior == .single {
            body = HTTPBody(try await [UInt8](collecting: streamed, upTo: Self.limit))
        }
        let (sent, sentBody) = (request, body)
        let send: (String) async throws -> (HTTPResponse, HTTPBody?) = { base in
            guard let url = URL(string: base) else { throw SyncError(.badInput, "not a URL: \(base)") }
            return try await next(sent, sentBody, url)
        }
        let (response, answer) = try await upstream.inTurn(
            busy: { [502, 503, 504].contains($0.0.status.code) },
            send: send
        )
        let status = response.status.code
        guard status >= 400, !SiteClient.readByCaller.contains(.init(operation: operationID, status: status)) else {
            guard let answer else { return (response, nil) }
            return (response, HTTPBody(try await [UInt8](collecting: answer, upTo: Self.answerLimit)))
        }
        var bytes: [UInt8] = []
        if let answer { bytes = try await [UInt8](collecting: answer, upTo: Self.limit) }
        throw SiteClient.Refusal(
            status: status,
            message: Self.message(bytes) ?? "HTTP \(status)",
            retryAfter: response.headerFields[.retryAfter]
        )
    }

    /// The API's error message: `{"error": {"message": …}}`.
    static func message(_ body: [UInt8]) -> String? {
        APIJSON.decode(Components.Schemas._Error.self, from: body)?.error.message
    }
}

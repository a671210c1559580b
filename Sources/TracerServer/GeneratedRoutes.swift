import Foundation
import HTTPTypes
import Hummingbird
import OpenAPIHummingbird
import OpenAPIRuntime
import TracerAPI
import TracerStore

/// Who is asking, for the routes the generated server calls: their inputs are the document's
/// parameters and bodies only, so the bearer token (for `authorize`), the method and path (for
/// the audit) and the client's address (for the failure limiter) come from here. Set for every
/// request of those routes by `CallerMiddleware`.
struct Caller: Sendable {
    let head: HTTPRequest
    let client: String

    @TaskLocal static var current: Caller?

    /// The path asked for, without its query.
    var path: String { String(target.prefix { $0 != "?" }) }

    /// The query, without the `?`; nil when there is none.
    var query: String? { target.firstIndex(of: "?").map { String(target[target.index(after: $0)...]) } }

    private var target: String { head.path ?? "" }

    /// The request being answered; every generated route runs inside `CallerMiddleware`.
    static var now: Caller {
        get throws(APIError) {
            guard let current else {
                throw APIError(.internalServerError, ._internal, "a route ran without its caller")
            }
            return current
        }
    }
}

/// Puts the request's head and the client's address where the generated routes read them.
struct CallerMiddleware: RouterMiddleware {
    typealias Context = TracerContext

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        try await Caller.$current.withValue(Caller(head: request.head, client: context.client)) {
            try await next(request, context)
        }
    }
}

/// Registers the generated server's routes on the router, but for the operations the API answers
/// by hand (`API.handWritten`, each with its reason), and gives each generated route's handler
/// its body collected up to a limit: the runtime reads a JSON body whole, with no limit of its
/// own, and no route of the document takes more than a few KiB of JSON.
final class GeneratedRoutes: ServerTransport {
    /// The largest JSON body a generated route reads (a decision's note is the largest, 16 KiB).
    static let bodyLimit = 16 * 1024

    let group: RouterGroup<TracerContext>
    let skipped: Set<String>
    /// The skipped operations met while registering (read once registration is over).
    private(set) var met: Set<String> = []

    init(_ group: RouterGroup<TracerContext>, skipping skipped: Set<String>) {
        self.group = group
        self.skipped = skipped
    }

    func register(
        _ handler:
            @escaping @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (
                HTTPResponse, HTTPBody?
            ),
        method: HTTPRequest.Method,
        path: String
    ) throws {
        let route = "\(method.rawValue) \(path)"
        if skipped.contains(route) {
            met.insert(route)
            return
        }
        group.register(
            { request, body, metadata in
                try await handler(request, try await Self.collected(body), metadata)
            },
            method: method,
            path: path
        )
    }

    /// Every skipped operation is one of the document's: a misspelt one would leave a route
    /// answered twice.
    func checkSkipped() throws {
        let unknown = skipped.subtracting(met)
        guard unknown.isEmpty else {
            throw APIError(
                .internalServerError,
                ._internal,
                "hand-written routes not in the API's document: \(unknown.sorted().joined(separator: ", "))"
            )
        }
    }

    /// The body whole, refused past `bodyLimit` (413) without reading further; none when empty
    /// (the transport hands every request a body, and the runtime would read an empty one as
    /// JSON where the document makes the body optional).
    static func collected(_ body: HTTPBody?) async throws -> HTTPBody? {
        guard let body else { return nil }
        if case .known(let length) = body.length, length > bodyLimit { throw tooLarge }
        var bytes: [UInt8] = []
        for try await chunk in body {
            guard bytes.count + chunk.count <= bodyLimit else { throw tooLarge }
            bytes.append(contentsOf: chunk)
        }
        return bytes.isEmpty ? nil : HTTPBody(bytes)
    }

    static var tooLarge: APIError {
        APIError(
            .contentTooLarge,
            .tooLarge,
            "the request body is larger than this route takes (\(bodyLimit >> 10) KiB)"
        )
    }
}

/// The generated server's answers as the document says them. The generated types leave a nil
/// optional out (apple/swift-openapi-generator#934), where the document requires some keys that
/// may be null: those are put in as null, found from the document the server serves
/// (`RequiredNulls`), so the list cannot fall behind it. The runtime percent-encodes the values
/// of the headers the document declares (`"` of an ETag as %22: apple/swift-openapi-generator#857,
/// whose maintainers point to a middleware): they are decoded back. And no answer is cached, as
/// none of the API's is.
struct AnswerMiddleware: ServerMiddleware {
    let nulls: RequiredNulls

    func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        metadata: ServerRequestMetadata,
        operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var (response, answer) = try await next(request, body, metadata)
        for field in response.headerFields where nulls.headers.contains(field.name.canonicalName) {
            if let decoded = field.value.removingPercentEncoding {
                response.headerFields[field.name] = decoded
            }
        }
        if response.headerFields[.cacheControl] == nil { response.headerFields[.cacheControl] = "no-store" }
        guard let places = nulls.places(operationID, response.status.code), let body = answer else {
            return (response, answer)
        }
        // The generated types' answers are the server's own and small (a site's kiosks, its
        // beacons): read whole.
        let bytes = try await [UInt8](collecting: body, upTo: 64 << 20)
        let value = try JSON.parse(String(decoding: bytes, as: UTF8.self))
        let text = JSON.string(places.apply(value))
        answer = HTTPBody(text)
        response.headerFields[.contentLength] = String(text.utf8.count)
        return (response, answer)
    }
}

import Foundation
import Hummingbird
import NIOCore
import OpenAPIRuntime
import TracerAPI
import TracerStore

/// An answer that is not a success: its status and a JSON body
/// `{"error": {"code": "...", "message": "..."}}`. Every 4xx is one of these, never a crash.
public struct APIError: Error, HTTPResponseError, CustomStringConvertible {
    public var status: HTTPResponse.Status
    public var code: ErrorCode
    public var message: String
    public var headers: HTTPFields = [:]
    /// A rejected report's outcome, written beside `error`.
    var outcome: Components.Schemas.ReportOutcome?

    public init(_ status: HTTPResponse.Status, _ code: ErrorCode, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    public var description: String { "\(status.code) \(code.rawValue): \(message)" }

    public static func badRequest(_ message: String) -> APIError { APIError(.badRequest, .badRequest, message) }
    public static func notFound(_ message: String) -> APIError { APIError(.notFound, .notFound, message) }
    public static func forbidden(_ message: String) -> APIError { APIError(.forbidden, .forbidden, message) }

    public static func unauthorized(_ message: String) -> APIError {
        var e = APIError(.unauthorized, .unauthorized, message)
        e.headers[.wwwAuthenticate] = #"Bearer realm="tracer""#
        return e
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let error = Components.Schemas._Error(code, message: message)
        var response =
            if let outcome {
                JSONBody.response(
                    encoding: Components.Schemas.RejectedReport(value1: error, value2: outcome),
                    status: status
                )
            } else {
                JSONBody.response(encoding: error, status: status)
            }
        response.headers.append(contentsOf: headers)
        return response
    }

    /// Any error as an answer: the API's own as they are, the framework's with a JSON body, the
    /// store's refusals of bad input as 400, and anything else as a 500 that is logged (a bug).
    static func from(_ error: any Error) -> APIError {
        switch error {
        case let e as APIError:
            return e
        case let e as HTTPError:
            var mapped = APIError(e.status, Self.code(for: e.status), e.body ?? Self.message(for: e.status))
            mapped.headers = e.headers
            return mapped
        case let e as ServerError:
            // The generated server's: a route's own refusal inside, or a request that is not as
            // the document says (a parameter, a body, its type), which the runtime found.
            if e.httpStatus.code >= 500 || e.underlyingError is APIError || e.underlyingError is StoreError {
                return from(e.underlyingError)
            }
            return APIError(e.httpStatus, Self.code(for: e.httpStatus), Self.notAsDocumented(e))
        case let e as NIOTooManyBytesError:
            // Every route collects its body up to a limit of its own: over it is the client's
            // mistake (413), whichever route it was.
            let limit = e.maxBytes.map { " (\($0 >> 10) KiB)" } ?? ""
            return APIError(.contentTooLarge, .tooLarge, "the request body is larger than this route takes\(limit)")
        case let e as StoreError:
            switch e.code {
            case .notFound: return .notFound(e.message)
            case .invalidPath, .invalidFieldPath, .invalidValue, .invalidQuery, .invalidJSON, .tokenExpired:
                return .badRequest(e.message)
            case .tooLarge:
                return APIError(.contentTooLarge, .tooLarge, e.message)
            case .alreadyExists:
                return APIError(.conflict, .conflict, e.message)
            default:
                return APIError(.serviceUnavailable, .storeUnavailable, "the store could not answer: \(e.message)")
            }
        default:
            return APIError(.internalServerError, ._internal, "an internal error (logged): \(error)")
        }
    }

    /// What the generated server found wrong with a request, in one line that names it.
    static func notAsDocumented(_ e: ServerError) -> String {
        let what: String =
            switch e.underlyingError {
            case DecodingError.keyNotFound(let key, let context):
                "\(Self.path(context.codingPath + [key])) is missing"
            case DecodingError.typeMismatch(let type, let context):
                "\(Self.path(context.codingPath)) is not \(Self.kind(type))"
            case DecodingError.valueNotFound(let type, let context):
                "\(Self.path(context.codingPath)) is null, not \(Self.kind(type))"
            case DecodingError.dataCorrupted(let context) where context.codingPath.isEmpty && e.requestBody == nil:
                // No body: a parameter (a query's value that is none of its enum's).
                "a parameter is none of the values it takes (\(context.debugDescription))"
            case DecodingError.dataCorrupted(let context):
                context.codingPath.isEmpty
                    ? "the body is not JSON" : "\(Self.path(context.codingPath)): \(context.debugDescription)"
            default:
                "\(e.underlyingError)"
            }
        let line = what.split(whereSeparator: \.isNewline).joined(separator: " ")
        return "\(e.request.method) \(e.request.path?.prefix { $0 != "?" } ?? ""): \(line.prefix(200))"
    }

    static func path(_ keys: [any CodingKey]) -> String {
        keys.isEmpty ? "the body" : keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }

    static func kind(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is Int64.Type, is Double.Type: "a number"
        case is Bool.Type: "true or false"
        default: "what the document says (\(type))"
        }
    }

    static func code(for status: HTTPResponse.Status) -> ErrorCode {
        switch status.code {
        case 400: .badRequest
        case 401: .unauthorized
        case 403: .forbidden
        case 404: .notFound
        case 405: .methodNotAllowed
        case 409: .conflict
        case 413: .tooLarge
        case 415: .unsupportedMediaType
        case 422: .rejected
        case 429: .tooManyRequests
        default: status.code < 500 ? .badRequest : .unavailable
        }
    }

    static func message(for status: HTTPResponse.Status) -> String {
        switch status.code {
        case 404: "no such route"
        case 413: "the request body is over the size limit"
        default: status.reasonPhrase
        }
    }
}

/// JSON responses: the API's generated types through `APIJSON`, the store's values through its
/// writer (both end in the store's JSON writer).
enum JSONBody {
    static func response(encoding body: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        // The types are the API's own: encoding them cannot fail.
        let text = (try? APIJSON.string(body)) ?? #"{"error":{"code":"internal","message":"encoding"}}"#
        return response(bytes: Data(text.utf8), status: status)
    }

    /// From the store's values, by its own JSON writer: the hot routes skip Foundation's.
    static func response(_ value: Value, status: HTTPResponse.Status = .ok) -> Response {
        response(bytes: Data(JSON.string(value).utf8), status: status)
    }

    static func response(bytes data: Data, status: HTTPResponse.Status) -> Response {
        Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: data))
        )
    }
}

/// The request context: the framework's storage and the client's address (for rate limiting).
public struct TracerContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public let client: String

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        client = source.channel.remoteAddress?.ipAddress ?? "local"
    }

    /// Uploads up to the image limit, and a little for the form around it.
    public var maxUploadSize: Int { API.maxUpload }
}

/// Turns every error into a JSON answer, and logs the 5xx ones.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = TracerContext

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            let e = APIError.from(error)
            if e.status.code >= 500 {
                context.logger.error("\(request.method) \(request.uri.path) failed: \(error)")
            }
            return try e.response(from: request, context: context)
        }
    }
}

import HTTPTypes
import Hummingbird
import Synchronization

/// 405 with `Allow` for a method a route does not take (HTTP's answer, RFC 9110 §15.5.6), where
/// the router alone says 404 "no such route": `DELETE /v1/beacons` names a route that exists.
/// The table is the router's own routes, so it cannot drift from them.
struct MethodTable: Sendable {
    /// Where the router's table is kept once its routes are added.
    final class Box: Sendable {
        let table = Mutex(MethodTable([]))
    }

    /// Each route's path segments (a capture matches any one segment) and the methods it takes.
    let routes: [(segments: [Substring], methods: [HTTPRequest.Method])]

    init(_ described: [Router<TracerContext>.RouteDescription]) {
        var byPath: [String: [HTTPRequest.Method]] = [:]
        for route in described { byPath["\(route.path)", default: []].append(route.method) }
        routes = byPath.map { path, methods in
            (path.split(separator: "/"), methods.sorted { $0.rawValue < $1.rawValue })
        }
    }

    /// The methods the route at `path` takes, or nil when no route has that path.
    func methods(at path: String) -> [HTTPRequest.Method]? {
        let parts = path.split(separator: "/")
        var found: [HTTPRequest.Method] = []
        for route in routes where route.segments.count == parts.count {
            let matches = zip(route.segments, parts).allSatisfy { pattern, part in
                // A capture reads `{id}` in the router's description (`:id` where it was added).
                pattern.hasPrefix("{") || pattern.hasPrefix(":") || pattern == part
            }
            if matches { found += route.methods }
        }
        return found.isEmpty ? nil : Array(Set(found)).sorted { $0.rawValue < $1.rawValue }
    }
}

struct MethodNotAllowedMiddleware: RouterMiddleware {
    typealias Context = TracerContext
    /// Filled once the routes are added (the middleware goes first, the routes after it).
    let table: @Sendable () -> MethodTable

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            guard let methods = table().methods(at: request.uri.path), !methods.contains(request.method) else {
                throw error
            }
            var e = APIError(
                .methodNotAllowed,
                .methodNotAllowed,
                "\(request.uri.path.prefix(80)) takes \(methods.map(\.rawValue).joined(separator: ", ")), not \(request.method)"
            )
            e.headers[.allow] = methods.map(\.rawValue).joined(separator: ", ")
            throw e
        }
    }
}

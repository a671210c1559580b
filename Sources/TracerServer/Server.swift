import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// `tracer serve`: the API on an address, until SIGINT or SIGTERM.
public enum Server {
    /// `HOST:PORT`, `:PORT` or `[v6]:PORT`; the host defaults to loopback.
    public static func address(_ bind: String, option: String = "--bind") throws -> (host: String, port: Int) {
        var host = "127.0.0.1"
        var portText = bind
        if bind.hasPrefix("["), let close = bind.firstIndex(of: "]") {
            host = String(bind[bind.index(after: bind.startIndex)..<close])
            portText = String(bind[bind.index(after: close)...].dropFirst())
        } else if let colon = bind.lastIndex(of: ":") {
            if colon != bind.startIndex { host = String(bind[..<colon]) }
            portText = String(bind[bind.index(after: colon)...])
        }
        guard let port = Int(portText), (0...65535).contains(port), !host.isEmpty else {
            throw APIError.badRequest("\(option) takes HOST:PORT (127.0.0.1:8080), not '\(bind)'")
        }
        return (host, port)
    }

    /// The API as a Service on an address; `onRunning` gets the bound port (useful with port 0).
    public static func application(
        _ api: API,
        host: String,
        port: Int,
        logger: Logger,
        onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some Service {
        Application(
            router: api.router(),
            configuration: .init(address: .hostname(host, port: port), serverName: "tracer"),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? port) },
            logger: logger
        )
    }
}

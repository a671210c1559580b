import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL
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

    /// How the server faces its clients.
    public struct Options: Sendable {
        /// Serve HTTPS with this certificate chain and key (PEM files), or plain HTTP.
        public var tls: TLSConfiguration?
        /// A connection that sends nothing for this long is closed: an idle keep-alive, a
        /// client that sent half a request and stopped, a TLS handshake never finished. A
        /// response being written (a long watch) is not idle.
        public var idleTimeout: Duration = .seconds(30)
        /// Connections open at once; beyond them, new ones wait in the listen backlog.
        public var maxConnections = 1024
        /// Connections open at once from one client address; beyond them, a new one is closed
        /// (one client cannot take every slot). A site behind one reverse proxy raises it.
        public var maxConnectionsPerClient = 128

        public init() {}

        /// TLS from PEM files: the certificate (chain) and its private key, read now so that a
        /// wrong path is a one-line error at start.
        public static func tls(certificate: String, key: String) throws -> TLSConfiguration {
            let chain: [NIOSSLCertificate]
            do { chain = try NIOSSLCertificate.fromPEMFile(certificate) } catch {
                throw APIError.badRequest("--tls-cert \(certificate): not a readable PEM certificate (\(error))")
            }
            guard !chain.isEmpty else { throw APIError.badRequest("--tls-cert \(certificate): no certificate in it") }
            let privateKey: NIOSSLPrivateKey
            do { privateKey = try NIOSSLPrivateKey(file: key, format: .pem) } catch {
                throw APIError.badRequest("--tls-key \(key): not a readable PEM private key (\(error))")
            }
            return TLSConfiguration.makeServerConfiguration(
                certificateChain: chain.map { .certificate($0) },
                privateKey: .privateKey(privateKey)
            )
        }
    }

    /// The API as a Service on an address; `onRunning` gets the bound port (useful with port 0).
    public static func application(
        _ api: API,
        host: String,
        port: Int,
        options: Options = Options(),
        logger: Logger,
        onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws -> some Service {
        let perClient = ClientConnectionLimit(limit: options.maxConnectionsPerClient)
        let http = HTTPServerBuilder.http1(
            configuration: .init(
                additionalChannelHandlers: [perClient.handler(), ParseErrorAnswer()],
                idleTimeout: .nanoseconds(Int64(options.idleTimeout / .nanoseconds(1)))
            )
        )
        return Application(
            router: try api.router(),
            server: try options.tls.map { try .tls(http, tlsConfiguration: $0) } ?? http,
            configuration: .init(
                address: .hostname(host, port: port),
                serverName: "tracer",
                availableConnectionsDelegate: .maximum(options.maxConnections, logger: logger)
            ),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? port) },
            logger: logger
        )
    }
}

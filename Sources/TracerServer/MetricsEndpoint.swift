import Hummingbird
import Logging
import NIOCore
import Prometheus
import ServiceLifecycle

/// `GET /metrics` in Prometheus's text format, from swift-prometheus's registry, on Hummingbird:
/// the daemon's `--metrics HOST:PORT`. `refresh` brings the metrics up to date first.
public struct MetricsEndpoint: Service {
    public let registry: PrometheusCollectorRegistry
    let host: String
    let port: Int
    let refresh: @Sendable () -> Void
    let onRunning: @Sendable (Int) async -> Void
    let logger: Logger

    public init(
        registry: PrometheusCollectorRegistry,
        bind: String,
        logger: Logger,
        refresh: @escaping @Sendable () -> Void = {},
        onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws {
        (host, port) = try Server.address(bind, option: "--metrics")
        self.registry = registry
        self.refresh = refresh
        self.onRunning = onRunning
        self.logger = logger
    }

    public func run() async throws {
        let router = Router()
        router.get("/metrics") { [registry, refresh] _, _ -> Response in
            refresh()
            var bytes: [UInt8] = []
            registry.emit(into: &bytes)
            return Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: bytes))
            )
        }
        let app = Application(
            router: router,
            configuration: .init(address: .hostname(host, port: port), serverName: "tracer"),
            onServerRunning: { [onRunning, port] channel in await onRunning(channel.localAddress?.port ?? port) },
            logger: logger
        )
        try await app.run()
    }
}

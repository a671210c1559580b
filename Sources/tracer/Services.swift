import Logging
import ServiceLifecycle

/// Long-running commands hand their parts to one `ServiceGroup`: SIGTERM and SIGINT shut every
/// part down gracefully (the last one given first), and a part that fails ends the rest.
enum Services {
    static func run(_ services: [any Service], logger: Logger) async throws {
        try await run(services.map { .init(service: $0) }, logger: logger)
    }

    static func run(_ services: [ServiceGroupConfiguration.ServiceConfiguration], logger: Logger) async throws {
        let group = ServiceGroup(
            configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        )
        try await group.run()
    }

    /// A part whose end (a replay's end of file) ends the group gracefully.
    static func ending(_ service: any Service) -> ServiceGroupConfiguration.ServiceConfiguration {
        .init(
            service: service,
            successTerminationBehavior: .gracefullyShutdownGroup,
            failureTerminationBehavior: .gracefullyShutdownGroup
        )
    }

    /// Runs `body` (a watch) until it ends or SIGTERM/SIGINT comes; either way returns normally,
    /// so an interrupted watch exits 0 once its pending lines are out.
    static func untilSignalled(logger: Logger, _ body: @escaping @Sendable () async throws -> Void) async throws {
        try await run([Following(body: body)], logger: logger)
    }

    struct Following: Service {
        let body: @Sendable () async throws -> Void

        func run() async throws {
            do { try await cancelWhenGracefulShutdown { try await body() } } catch is CancellationError {}
        }
    }
}

import Logging
import ServiceLifecycle

/// Long-running commands hand their parts to one `ServiceGroup`: SIGTERM and SIGINT shut every
/// part down gracefully, in reverse order, and a part that ends or fails ends the rest.
enum Services {
    static func run(_ services: [any Service], logger: Logger) async throws {
        let group = ServiceGroup(
            configuration: .init(
                services: services.map { .init(service: $0) },
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        try await group.run()
    }
}

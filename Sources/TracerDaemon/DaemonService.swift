import ServiceLifecycle

/// The daemon as a Service: ranges until the source ends or the group shuts down, then writes
/// what is buffered and hands over its report.
public struct DaemonService: Service {
    public let daemon: Daemon
    let finished: @Sendable (Daemon.Report) -> Void

    public init(_ daemon: Daemon, finished: @escaping @Sendable (Daemon.Report) -> Void) {
        self.daemon = daemon
        self.finished = finished
    }

    public func run() async throws {
        finished(try await cancelWhenGracefulShutdown { try await daemon.run() })
    }
}

/// systemd's view of a service (`Type=notify`): READY=1 once started, STOPPING=1 when the group
/// begins to shut down.
public struct SystemdService: Service {
    let notifier: SystemdNotifier

    public init(_ notifier: SystemdNotifier) { self.notifier = notifier }

    public func run() async throws {
        notifier.notify("READY=1")
        try? await gracefulShutdown()
        notifier.notify("STOPPING=1")
    }
}

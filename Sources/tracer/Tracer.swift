import ArgumentParser
import Foundation
import Logging

#if PostgreSQL
import TracerStorePostgres
#endif

@main
struct Tracer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tracer",
        abstract: "Institutional contact tracing: iBeacon ranging, exposure flagging, and its document store.",
        subcommands: [
            DaemonCommand.self, SelfReportCommand.self, VerifyCommand.self, StatusCommand.self, ExposureCommand.self,
            ReportCommand.self, SiteCommand.self, NotifyCommand.self, SimulateCommand.self, EvaluateCommand.self,
            Calibrate.self, DB.self,
            ServeCommand.self, TokenCommand.self, BadgeCommand.self, AdvertiseCommand.self, Decode.self, Map.self,
        ]
    )

    /// Runs the command; every failure is one line on stderr. Usage and input errors exit 1
    /// (ArgumentParser's own default for usage is 64), and a command may exit with its own code
    /// by throwing `ExitCode` (a rejected self-report exits 2).
    static func main() async {
        #if PostgreSQL
        PostgresBackend.enable()
        #endif
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            let level = ProcessInfo.processInfo.environment["TRACER_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:))
            handler.logLevel = level ?? .notice
            return handler
        }
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let code as ExitCode {
            exit(withError: code)
        } catch {
            if exitCode(for: error) == .success { exit(withError: error) }  // --help, --version
            let message = message(for: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
            Output.error("Error: " + message)
            exit(withError: ExitCode.failure)
        }
    }
}

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
        pinMallocThresholds()
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

/// glibc's `mallopt` (malloc.h, which Swift's Glibc module does not bring).
@_silgen_name("mallopt") private func mallopt(_ parameter: Int32, _ value: Int32) -> Int32

/// glibc's thresholds for memory given back to the system, pinned at their starting values
/// (128 KiB each: `M_TRIM_THRESHOLD` -1, `M_MMAP_THRESHOLD` -3). Left to themselves they grow
/// with the largest block freed, up to 32 MiB and 64 MiB: after one kiosk's 32 MiB batch the site
/// server kept the freed memory of its threads' arenas for good (`malloc_trim` does not shrink
/// them), 9 MiB of heap before and 14-41 after one to six batches, where pinned it is 8 after
/// each (BENCHMARKS.md, "What a token holder sends"). Flagging and syncing took as long either way.
private func pinMallocThresholds() {
    _ = mallopt(-1, 128 << 10)
    _ = mallopt(-3, 128 << 10)
}

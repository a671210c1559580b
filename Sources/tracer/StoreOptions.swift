import ArgumentParser
import Foundation
import TracerReports
@_spi(Blocking) import TracerStore

/// `--store PATH`, shared by every command that opens the store.
struct StoreOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The store: a SQLite file, or a PostgreSQL database (postgres://USER@HOST:PORT/DB, ?host=/socket/dir). Default: $TRACER_STORE, else $XDG_DATA_HOME/tracer/tracer.sqlite (~/.local/share/…).",
            valueName: "PATH|URI"
        )
    )
    var store: String?

    var resolvedPath: String {
        if let store { return store }
        let env = ProcessInfo.processInfo.environment
        if let path = env["TRACER_STORE"], !path.isEmpty { return path }
        return (Self.dataDirectory as NSString).appendingPathComponent("tracer.sqlite")
    }

    /// $XDG_DATA_HOME/tracer (~/.local/share/tracer).
    static var dataDirectory: String {
        let env = ProcessInfo.processInfo.environment
        let data =
            env["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (NSHomeDirectory() as NSString).appendingPathComponent(".local/share")
        return (data as NSString).appendingPathComponent("tracer")
    }

    /// Where the images of reports held for review wait for the health team: $TRACER_REVIEW_DIR,
    /// else beside a SQLite store (`PATH.review/`), else $XDG_DATA_HOME/tracer/review. Never in
    /// the store: not in its exports, replicas or backups.
    var reviewImages: ReviewImages {
        if let dir = ProcessInfo.processInfo.environment["TRACER_REVIEW_DIR"], !dir.isEmpty {
            return ReviewImages(directory: dir)
        }
        if isPostgres {
            return ReviewImages(directory: (Self.dataDirectory as NSString).appendingPathComponent("review"))
        }
        return ReviewImages(directory: resolvedPath + ".review")
    }

    /// Whether the store is a PostgreSQL database.
    var isPostgres: Bool { DocumentStore.isPostgres(resolvedPath) }

    /// The store as messages name it: the file, or the URI without its password.
    var display: String { isPostgres ? DocumentStore.redacted(resolvedPath) : resolvedPath }

    /// Opens the store. Only the commands that own one (`daemon`, `serve`, `db set`, `db import`,
    /// `token create`, `map publish`) create it (`creating: true`); every other command refuses a
    /// store that is not there, so that a mistyped path, or a command meant for the site server,
    /// is an error rather than an empty answer or a report recorded where nobody will see it.
    /// `remote`: the command also runs against the site server, and the error says so.
    func open(creating: Bool = false, remote: Bool = false) throws -> DocumentStore {
        let path = resolvedPath
        if !creating && !isPostgres && !FileManager.default.fileExists(atPath: path) {
            throw ValidationError(
                "no store at \(path): "
                    + (remote
                        ? "for the site's data give --server URL --token-file FILE (or TRACER_SERVER), or --store PATH on a kiosk or the server"
                        : "give --store PATH or set TRACER_STORE")
            )
        }
        return try DocumentStore(path: path)
    }
}

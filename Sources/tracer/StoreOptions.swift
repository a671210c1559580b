import ArgumentParser
import Foundation
import TracerStore

/// `--store PATH`, shared by every command that opens the store.
struct StoreOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The store file. Default: $TRACER_STORE, else $XDG_DATA_HOME/tracer/tracer.sqlite (~/.local/share/…).",
            valueName: "PATH"
        )
    )
    var store: String?

    var resolvedPath: String {
        if let store { return store }
        let env = ProcessInfo.processInfo.environment
        if let path = env["TRACER_STORE"], !path.isEmpty { return path }
        let data =
            env["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (NSHomeDirectory() as NSString).appendingPathComponent(".local/share")
        return (data as NSString).appendingPathComponent("tracer/tracer.sqlite")
    }

    /// Opens the store; commands that only read refuse to create one, so that a mistyped path
    /// is an error rather than an empty answer.
    func open(mustExist: Bool = false) throws -> DocumentStore {
        let path = resolvedPath
        if mustExist && !FileManager.default.fileExists(atPath: path) {
            throw ValidationError("no store at \(path) (give --store PATH or set TRACER_STORE)")
        }
        return try DocumentStore(path: path)
    }
}

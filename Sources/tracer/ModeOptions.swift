import ArgumentParser
import TracerDaemon

/// `--anchor KEY | --device ID`: which side of an interaction this host is.
struct ModeOptions: ParsableArguments {
    @Option(help: "Gateway mode: this kiosk's anchor key.") var anchor: String?
    @Option(help: "Scanner mode: this host's anonymous device id.") var device: String?

    func validate() throws {
        if (anchor == nil) == (device == nil) {
            throw ValidationError("give exactly one of --anchor KEY and --device ID")
        }
    }

    var mode: DaemonMode {
        if let anchor { return .gateway(anchor: anchor) }
        return .scanner(device: device ?? "")
    }
}

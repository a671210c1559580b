import ArgumentParser

@main
struct Tracer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tracer",
        abstract: "Institutional contact tracing: iBeacon ranging, exposure flagging, and its document store.",
        subcommands: [DB.self]
    )
}

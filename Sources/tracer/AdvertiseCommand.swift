import ArgumentParser
import Foundation
import Logging
import TracerBadges
import TracerDaemon
import TracerRanging
@_spi(Blocking) import TracerStore

/// `tracer advertise`: a Linux machine as a badge or a room's fixed beacon, through BlueZ.
struct AdvertiseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "advertise",
        abstract: "Advertise as a rotating badge or a fixed beacon through BlueZ (until SIGTERM).",
        discussion: """
            A badge: --key-file FILE (its key, 32 hex digits, from tracer badge issue) and --uuid the \
            site's badge UUID; the id changes every 2^K seconds (--bits, the site's badgeEpochBits). A \
            fixed beacon: --uuid, --major and --minor. Each advert registered prints a line. The \
            address it goes out from is BlueZ's choice: for this non-connectable advert, a random \
            private address of the kernel's (docs/badges.md).
            """
    )

    @Option(help: "The adapter to advertise on.") var adapter = "hci0"
    @Option(help: "The proximity UUID: the site's badge UUID (a badge) or the beacon's.") var uuid: String
    @Option(help: ArgumentHelp("A badge's key: a file holding its 32 hex digits.", valueName: "FILE"))
    var keyFile: String?
    @Option(help: "A badge's K: epochs of 2^K seconds (the site's badgeEpochBits).") var bits = RotatingID.defaultBits
    @Option(help: "A fixed beacon's major.") var major: UInt16?
    @Option(help: "A fixed beacon's minor.") var minor: UInt16?
    @Option(help: "The measured power at 1 m it advertises, dBm.") var power = -59

    func validate() throws {
        guard UUIDBytes(uuid) != nil else {
            throw ValidationError("--uuid takes a UUID (like 5a1e0b5c-7e2d-4c1a-9b8e-3f6d2a9c4e71), not '\(uuid)'")
        }
        if keyFile != nil, major != nil || minor != nil {
            throw ValidationError("a badge (--key-file) has rotating ids: leave out --major and --minor")
        }
        if keyFile == nil, major == nil || minor == nil {
            throw ValidationError("give --key-file FILE (a badge) or --major and --minor (a fixed beacon)")
        }
        guard (6...16).contains(bits) else { throw ValidationError("--bits takes 6 to 16, not \(bits)") }
        guard (-127...20).contains(power) else { throw ValidationError("--power takes -127 to 20 dBm, not \(power)") }
    }

    /// A badge's key from its file: 32 hex digits (whitespace around them allowed).
    static func key(_ file: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw ValidationError("--key-file \(file): cannot read it")
        }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.count == 32, let bytes = Hex.decode(text) else {
            throw ValidationError("--key-file \(file): a badge's key is 32 hex digits (tracer badge issue prints it)")
        }
        return bytes
    }

    func run() async throws {
        let uuid = UUIDBytes(uuid)!
        let identity: Advertiser.Identity =
            if let keyFile { .badge(uuid: uuid, key: try Self.key(keyFile), bits: bits) } else {
                .fixed(uuid: uuid, major: major!, minor: minor!)
            }
        let logger = Logger(label: "tracer.advertise")
        let advertiser = Advertiser(identity: identity, adapter: adapter, power: Int8(power)) {
            major,
            minor,
            until in
            Output.line(
                "advertising \(uuid):\(major):\(minor) on \(adapter)"
                    + (until.map { " until \(Timestamp(seconds: $0).iso8601Seconds)" } ?? "")
            )
        }
        do {
            try await Services.run([advertiser], logger: logger)
        } catch let e as AdvertiseError {
            throw ValidationError(e.description)
        }
    }
}

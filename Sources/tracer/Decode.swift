import ArgumentParser
import TracerRanging

/// `tracer decode HEX`: the iBeacon in raw advertising data.
struct Decode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decode the iBeacon in raw advertising data (AD structures, as btmon prints them).",
        discussion: "Example: tracer decode 0201061AFF4C000215E2C56DB5DFFB48D2B060D0F5A71096E000020007C5 --json"
    )

    @Argument(help: "Hex bytes; spaces and colons are allowed (quote them).") var hex: [String]
    @Flag(help: "Print {\"uuid\", \"major\", \"minor\", \"measuredPower\"}.") var json = false

    func run() throws {
        let text = hex.joined(separator: " ")
        guard let bytes = Hex.decode(text) else {
            throw ValidationError(
                "'\(text.prefix(80))' is not hex (pairs of 0-9a-f, optionally separated by spaces or colons)"
            )
        }
        let beacon = bytes.withUnsafeBytes { IBeaconParser.parse(advertisingData: $0) }
        guard let beacon else {
            throw ValidationError("no iBeacon in these \(bytes.count) bytes (no Apple manufacturer data of type 02 15)")
        }
        if json {
            Output.line(
                #"{"uuid": "\#(beacon.uuid)", "major": \#(beacon.major), "minor": \#(beacon.minor), "measuredPower": \#(beacon.measuredPower)}"#
            )
        } else {
            Output.line(
                "iBeacon \(beacon.uuid) major \(beacon.major) minor \(beacon.minor), measured power \(beacon.measuredPower) dBm"
            )
            Output.line("device id \(beacon.deviceID)")
        }
    }
}

import Foundation
import Testing
import TracerDBus
import TracerSimulation

@testable import TracerDaemon

/// The daemon reads a device's `PropertiesChanged` straight from its bytes; every other signal it
/// makes values first. Both readings of the same bytes, written by libdbus, must give the machine
/// the same event, and the same refusal for bytes that are not a message.
@Suite struct BlueZWireEventTests {
    typealias Session = BlueZSource.Session

    /// The same bytes read both ways: the event, or nil for bytes either way refuses.
    static func both(_ bytes: [UInt8]) -> (direct: BlueZStateMachine.Event??, values: BlueZStateMachine.Event??) {
        bytes.withUnsafeBytes { raw in
            guard let signal = try? WireSignal(raw) else { return (nil, nil) }
            let direct = Result { try Session.event(signal) }
            let values = Result { try Session.event(signal.signal()) }
            return (try? direct.get(), try? values.get())
        }
    }

    /// A random device's properties as BlueZ and python3-dbusmock send them, and the odd shapes a
    /// bus could carry (another integer type, a variant in a variant, data that is not bytes).
    static func randomProperties(_ rng: inout some RandomNumberGenerator) -> [DBusValue.DictEntry] {
        var entries: [DBusValue.DictEntry] = []
        func add(_ name: String, _ value: DBusValue) { entries.append(.init(.string(name), .variant(value))) }
        func bytes(_ n: Int) -> DBusValue {
            .array(element: "y", (0..<n).map { _ in .byte(.random(in: 0...255, using: &rng)) })
        }
        func manufacturer() -> DBusValue {
            .dictionary(
                key: "q",
                value: "v",
                (0..<Int.random(in: 0...2, using: &rng)).map { _ in
                    let company = DBusValue.uint16(.random(in: 0...0xffff, using: &rng))
                    switch Int.random(in: 0..<6, using: &rng) {
                    case 0: return .init(company, .variant(.string("not bytes")))
                    case 1: return .init(company, .variant(.variant(bytes(4))))
                    default: return .init(company, .variant(bytes(.random(in: 0...27, using: &rng))))
                    }
                }
            )
        }
        for _ in 0..<Int.random(in: 0...5, using: &rng) {
            switch Int.random(in: 0..<14, using: &rng) {
            case 0, 1, 2: add("RSSI", .int16(.random(in: -100...0, using: &rng)))
            case 3: add("RSSI", .int32(.random(in: -100...0, using: &rng)))
            case 4: add("TxPower", .int16(.random(in: -30...10, using: &rng)))
            case 5, 6: add("ManufacturerData", manufacturer())
            case 7: add("ManufacturerData", .array(element: "a{qv}", [manufacturer(), manufacturer()]))  // dbusmock's
            case 8: add("ManufacturerData", .variant(manufacturer()))
            case 9: add(["Paired", "Trusted", "Connected"].randomElement(using: &rng)!, .bool(.random(using: &rng)))
            case 10: add("Connected", .string("yes"))
            case 11: add("Name", .string("badge \(Int.random(in: 0...99, using: &rng))"))
            case 12: add("UUIDs", .array(element: "s", [.string("0000feaa-0000-1000-8000-00805f9b34fb")]))
            default:
                add("ServiceData", .dictionary(key: "s", value: "v", [.init(.string("feaa"), .variant(bytes(3)))]))
            }
        }
        return entries
    }

    static func propertiesChanged(
        _ interface: String,
        _ entries: [DBusValue.DictEntry],
        invalidated: [String] = []
    ) throws -> [UInt8] {
        try Marshal.signalBytes(
            path: "/org/bluez/hci0/dev_AA_00_00_00_00_01",
            interface: Session.properties,
            member: "PropertiesChanged",
            [
                .string(interface), .dictionary(key: "s", value: "v", entries),
                .array(element: "s", invalidated.map { .string($0) }),
            ]
        )
    }

    @Test func aDevicesChangesReadFromTheBytesAreTheChangesReadFromValues() throws {
        var rng = SeededGenerator(seed: 46)
        var devices = 0
        for i in 0..<2000 {
            let invalidated = i % 7 == 0 ? ["RSSI", "TxPower"] : []
            let interface = i % 10 == 9 ? Session.adapterInterface : Session.deviceInterface
            let bytes = try Self.propertiesChanged(interface, Self.randomProperties(&rng), invalidated: invalidated)
            let (direct, values) = Self.both(bytes)
            #expect(
                direct != nil && direct == values,
                "message \(i): \(String(describing: direct)) / \(String(describing: values))"
            )
            if case .deviceChanged? = direct ?? nil { devices += 1 }
        }
        #expect(devices > 1500)
    }

    @Test func anAdvertsEventIsWhatTheMachineNeeds() throws {
        let bytes = try Self.propertiesChanged(
            Session.deviceInterface,
            [
                .init(.string("RSSI"), .variant(.int16(-61))),
                .init(
                    .string("ManufacturerData"),
                    .variant(
                        .dictionary(
                            key: "q",
                            value: "v",
                            [.init(.uint16(0x004c), .variant(.array(element: "y", [2, 21, 9].map { .byte($0) })))]
                        )
                    )
                ),
                .init(.string("Connected"), .variant(.bool(true))),
            ]
        )
        let event = try bytes.withUnsafeBytes { try Session.event(WireSignal($0)) }
        var expected = BlueZStateMachine.DeviceProperties()
        expected.rssi = -61
        expected.manufacturerData = [.init(company: 0x004c, data: [2, 21, 9])]
        expected.kept = true
        #expect(event == .deviceChanged(path: "/org/bluez/hci0/dev_AA_00_00_00_00_01", expected))
    }

    @Test func otherSignalsAreReadAsValues() throws {
        let added = try Marshal.signalBytes(
            path: "/",
            interface: Session.objectManager,
            member: "InterfacesAdded",
            [
                .objectPath("/org/bluez/hci0/dev_AA_00_00_00_00_02"),
                .dictionary(
                    key: "s",
                    value: "a{sv}",
                    [.init(.string(Session.deviceInterface), .properties(["RSSI": .int16(-70)]))]
                ),
            ]
        )
        let (direct, values) = Self.both(added)
        var device = BlueZStateMachine.DeviceProperties()
        device.rssi = -70
        #expect(direct == values && direct == .deviceAdded(path: "/org/bluez/hci0/dev_AA_00_00_00_00_02", device))
    }

    /// Every truncation and a thousand random corruptions of device signals: refused both ways
    /// or read the same both ways, never crashed on.
    @Test func corruptedSignalsAreRefusedOrReadAlikeBothWays() throws {
        var rng = SeededGenerator(seed: 4646)
        var refused = 0
        for i in 0..<1000 {
            var bytes = try Self.propertiesChanged(Session.deviceInterface, Self.randomProperties(&rng))
            if i < 100 {
                bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &rng)))
            } else {
                for _ in 0..<Int.random(in: 1...3, using: &rng) {
                    // The body's bytes (the header's are Wire.header's, tested in WireTests).
                    let at = Int.random(in: max(0, bytes.count - 120)..<bytes.count, using: &rng)
                    bytes[at] = UInt8.random(in: 0...255, using: &rng)
                }
            }
            let (direct, values) = Self.both(bytes)
            #expect(direct == values, "message \(i): \(String(describing: direct)) / \(String(describing: values))")
            if direct == nil { refused += 1 }
        }
        #expect(refused > 100)
    }
}

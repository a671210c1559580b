import Foundation
import TracerDBus

extension BlueZSource.Session {
    /// A signal as the machine's event, read from the wire. A device's `PropertiesChanged` (two
    /// thousand a second) is read straight from its bytes into the properties tracer keeps;
    /// every other signal is made values first and read as `event(_: DBusSignal)` reads it.
    ///
    /// Why by hand: made values, one signal of an RSSI and a manufacturer's data was a dozen
    /// allocations (the arguments, the dictionary's entries, each variant's box, an array of 25
    /// one-byte values and the bytes made again of them), and allocation and reference counting
    /// were two fifths of the daemon's time per advert. Read from the bytes (with the machine's
    /// actions in one buffer), the daemon's CPU per advert went from 0.78 × bleak's to 0.68 ×
    /// (BENCHMARKS.md, "A device's signal read from its bytes"). The two readings are held equal
    /// by `BlueZWireEventTests`.
    static func event(_ signal: WireSignal) throws -> BlueZStateMachine.Event? {
        let header = signal.header
        if header.member == "PropertiesChanged", header.interface == properties, header.signature == "sa{sv}as" {
            var body = signal.body()
            if try Self.equals(body.stringBytes(), "org.bluez.Device1") {
                return .deviceChanged(path: header.path, try Self.deviceProperties(&body))
            }
        }
        return event(try signal.signal())
    }

    /// `a{sv}` then `as` (the invalidated properties, which tracer does not follow), into what
    /// tracer keeps, as `device(_: [DBusValue.DictEntry])` reads the same entries.
    static func deviceProperties(_ body: inout WireReader) throws -> BlueZStateMachine.DeviceProperties {
        var device = BlueZStateMachine.DeviceProperties()
        let end = try body.arrayEnd(alignment: 8)
        while body.offset < end {
            try body.align(8)
            let name = try body.stringBytes()
            let type = try body.signatureBytes()
            switch PropertyName(name) {
            case .rssi:
                device.rssi = try Self.equals(type, "n") ? Int(body.int16()) : body.value(of: type, depth: 3).integer
            case .txPower:
                device.txPower = try Self.equals(type, "n") ? Int(body.int16()) : body.value(of: type, depth: 3).integer
            case .manufacturerData:
                device.manufacturerData =
                    try Self.equals(type, "a{qv}")
                    ? manufacturerData(&body)
                    : manufacturerData(body.value(of: type, depth: 3).unwrapped).map {
                        .init(company: $0.company, data: $0.data)
                    }
            case .kept:
                let on = try Self.equals(type, "b") ? body.bool() : body.value(of: type, depth: 3).bool == true
                device.kept = device.kept || on
            case nil:
                _ = try body.value(of: type, depth: 3)
            }
        }
        guard body.offset == end else { throw WireError("a dictionary overruns its length") }
        let invalidated = try body.arrayEnd(alignment: 4)
        while body.offset < invalidated { _ = try body.stringBytes() }
        guard body.offset == invalidated, body.atEnd else {
            throw WireError("the body is longer than its signature says")
        }
        return device
    }

    /// `a{qv}`, each company's variant an `ay` (anything else is read, and kept only if it is bytes).
    static func manufacturerData(
        _ body: inout WireReader
    ) throws -> [BlueZStateMachine.DeviceProperties.ManufacturerData] {
        var out: [BlueZStateMachine.DeviceProperties.ManufacturerData] = []
        let end = try body.arrayEnd(alignment: 8)
        while body.offset < end {
            try body.align(8)
            let company = try body.u16()
            let type = try body.signatureBytes()
            if Self.equals(type, "ay") {
                out.append(.init(company: company, data: try body.byteArray()))
            } else if let bytes = try body.value(of: type, depth: 6).unwrapped.bytes {
                out.append(.init(company: company, data: bytes))
            }
        }
        guard body.offset == end else { throw WireError("a dictionary overruns its length") }
        return out
    }

    /// The Device1 properties tracer reads, by their names' bytes.
    enum PropertyName {
        case rssi, txPower, manufacturerData, kept

        init?(_ name: UnsafeRawBufferPointer) {
            let equals = BlueZSource.Session.equals
            if equals(name, "RSSI") {
                self = .rssi
            } else if equals(name, "TxPower") {
                self = .txPower
            } else if equals(name, "ManufacturerData") {
                self = .manufacturerData
            } else if equals(name, "Paired") || equals(name, "Trusted") || equals(name, "Connected") {
                self = .kept
            } else {
                return nil
            }
        }
    }

    static func equals(_ bytes: UnsafeRawBufferPointer, _ text: StaticString) -> Bool {
        guard bytes.count == text.utf8CodeUnitCount else { return false }
        return bytes.isEmpty || memcmp(bytes.baseAddress!, text.utf8Start, bytes.count) == 0
    }
}

import Testing
import TracerTesting

@testable import TracerRanging

@Suite struct IBeaconParserTests {
    static let frame = "0201061AFF4C000215E2C56DB5DFFB48D2B060D0F5A71096E000020007C5"

    func parse(_ hex: String) -> IBeacon? {
        let bytes = Hex.decode(hex)!
        return bytes.withUnsafeBytes { IBeaconParser.parse(advertisingData: $0) }
    }

    @Test func readsAnIBeaconFrame() throws {
        let b = try #require(parse(Self.frame))
        #expect(b.uuid.description == "e2c56db5-dffb-48d2-b060-d0f5a71096e0")
        #expect(b.major == 2 && b.minor == 7 && b.measuredPower == -59)
        #expect(b.deviceID == "e2c56db5-dffb-48d2-b060-d0f5a71096e0:2:7")
    }

    @Test func readsBlueZManufacturerData() throws {
        // docs/design.md's replay example: company 76 (0x004C), then the bytes after the company id.
        let bytes = Hex.decode("0215e2c56db5dffb48d2b060d0f5a71096e0000a0001c5")!
        let b = try #require(bytes.withUnsafeBytes { IBeaconParser.parse(companyID: 76, data: $0) })
        #expect(b.major == 10 && b.minor == 1 && b.measuredPower == -59)
        #expect(bytes.withUnsafeBytes { IBeaconParser.parse(companyID: 0x0059, data: $0) } == nil)
    }

    @Test func parsesPastOtherStructures() throws {
        // Flags, a complete local name, then the iBeacon, then a trailing TX power structure.
        let name = "0909" + "7472616365722d31"  // "tracer-1"
        let b = parse("020106" + name + String(Self.frame.dropFirst(6)) + "020A04")
        #expect(b?.minor == 7)
    }

    @Test(arguments: [
        ("0201061AFF4C000215E2C56DB5DFFB48D2B060D0F5A71096E000020007", "truncated structure"),
        ("0201061AFF4C000210E2C56DB5DFFB48D2B060D0F5A71096E000020007C5", "Apple type other than 02"),
        ("0201061AFF4C000216E2C56DB5DFFB48D2B060D0F5A71096E000020007C5", "wrong inner length"),
        ("0201061AFF59000215E2C56DB5DFFB48D2B060D0F5A71096E000020007C5", "another company"),
        ("0201061BFF1801BEACE2C56DB5DFFB48D2B060D0F5A71096E00002000700C5", "AltBeacon"),
        ("02010600", "padding only"),
        ("", "nothing"),
        ("FF", "a length running past the end"),
        ("0201061BFF4C000215E2C56DB5DFFB48D2B060D0F5A71096E000020007C5AA", "one byte too many inside"),
    ])
    func rejects(_ hex: String, _ why: String) {
        #expect(parse(hex) == nil, "\(why)")
    }

    @Test func hexAcceptsSpacesAndColons() {
        #expect(Hex.decode("02 01:06") == [2, 1, 6])
        #expect(Hex.decode("0x0A0b") == [10, 11])
        #expect(Hex.decode("0 2") == nil)
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
    }

    @Test func uuidTextRoundTrips() {
        let text = "f7826da6-4fa2-4e98-8024-bc5b71e0893e"
        #expect(UUIDBytes(text)?.description == text)
        #expect(UUIDBytes(text.uppercased())?.description == text)
        #expect(UUIDBytes("f7826da64fa24e988024bc5b71e0893e") == nil)
        #expect(UUIDBytes("g7826da6-4fa2-4e98-8024-bc5b71e0893e") == nil)
    }

    /// A million random byte strings (and a million mutated iBeacon frames): no crash, and
    /// whatever is found really is Apple's 02 15 payload.
    @Test func randomBytesNeverCrash() {
        var g = SplitMix64(seed: 2024)
        let frame = Hex.decode(Self.frame)!
        var buffer = [UInt8](repeating: 0, count: 64)
        var found = 0
        for round in 0..<2_000_000 {
            let count: Int
            if round % 2 == 0 {
                count = Int(g.next() % 64)
                for i in 0..<count { buffer[i] = UInt8(truncatingIfNeeded: g.next()) }
            } else {
                count = frame.count
                for i in 0..<count { buffer[i] = frame[i] }
                for _ in 0..<Int(g.next() % 3) {
                    buffer[Int(g.next() % UInt64(count))] = UInt8(truncatingIfNeeded: g.next())
                }
            }
            let result = buffer.withUnsafeBytes {
                IBeaconParser.parse(advertisingData: UnsafeRawBufferPointer(rebasing: $0[0..<count]))
            }
            if result != nil { found += 1 }
        }
        #expect(found > 100_000, "mutated frames that stay valid are still found")
    }
}

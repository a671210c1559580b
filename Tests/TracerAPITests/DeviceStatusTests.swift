import Foundation
import Testing
import TracerAPI
@_spi(Blocking) import TracerStore

/// The hot routes' bodies are written by the store's JSON writer from `value`; clients decode
/// them with Codable. The two spellings of each type must agree, field for field.
@Suite struct DeviceStatusTests {
    static let exposures = [
        Responses.Exposure(
            deviceId: "dev-1",
            reportId: "r-1",
            beaconKey: "kiosk-lab",
            from: "2026-11-24T10:05:00.000Z",
            to: "2026-11-24T10:48:30.250Z",
            separation: .init(min: 0.5, max: 4.25),
            overlapSeconds: 2610
        ),
        Responses.Exposure(
            deviceId: "dev-1",
            reportId: "r-2",
            beaconKey: "kiosk-cafe",
            from: nil,
            to: nil,
            separation: .init(min: 0, max: 6),
            overlapSeconds: 0
        ),
    ]

    static let statuses = [
        Responses.DeviceStatus(deviceId: "dev-1", status: "clear", risk: "low", colocatedMinutes: 0, exposures: []),
        Responses.DeviceStatus(
            deviceId: "dev-1",
            status: "exposed",
            risk: "medium",
            colocatedMinutes: 43.5,
            exposures: exposures,
            report: .init(id: "r-9", status: "denied", note: "the picture is of another person's result")
        ),
        Responses.DeviceStatus(
            deviceId: "dev-2",
            status: "positive",
            risk: "low",
            colocatedMinutes: 0,
            exposures: [],
            report: .init(id: "r-3", status: "pending")
        ),
    ]

    /// The store's writer's bytes, decoded as the type.
    func decoded<T: Decodable>(_ type: T.Type, _ value: Value) throws -> T {
        try JSONDecoder().decode(type, from: Data(JSON.string(value).utf8))
    }

    /// JSONEncoder's bytes, read back as the store's values.
    func encoded(_ value: some Encodable) throws -> Value {
        try JSON.parse(String(decoding: JSONEncoder().encode(value), as: UTF8.self))
    }

    @Test(arguments: statuses)
    func aStatusWrittenByTheStoreDecodesAsItself(_ status: Responses.DeviceStatus) throws {
        #expect(try decoded(Responses.DeviceStatus.self, status.value) == status)
        let byEncoder = try encoded(status)
        // Equivalent, not equal: JSONEncoder writes a whole Double as 0, read back as an integer.
        #expect(byEncoder.isEquivalent(to: status.value), "JSONEncoder: \(byEncoder)")
    }

    @Test func exposuresAtABeaconToo() throws {
        let body = Responses.BeaconExposures(beaconKey: "kiosk-lab", exposures: Self.exposures)
        #expect(try decoded(Responses.BeaconExposures.self, body.value) == body)
        let byEncoder = try encoded(body)
        #expect(byEncoder.isEquivalent(to: body.value), "JSONEncoder: \(byEncoder)")
        // An unknown time is null, not left out: the contract requires the key.
        #expect(body.value["exposures"].map { JSON.string($0) }?.contains(#""from":null"#) == true)
    }
}

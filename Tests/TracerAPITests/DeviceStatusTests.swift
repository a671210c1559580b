import Foundation
import Testing
import TracerAPI
@_spi(Blocking) import TracerStore

/// The hot routes' bodies are written by the store's JSON writer from `value`; every other body
/// from the generated types' own encoding (`APIJSON`), and clients decode them with the generated
/// types. The two spellings of each type must agree, field for field.
@Suite struct DeviceStatusTests {
    static let exposures = [
        Components.Schemas.Exposure(
            deviceId: "dev-1",
            reportId: "r-1",
            beaconKey: "kiosk-lab",
            from: "2026-11-24T10:05:00.000Z",
            to: "2026-11-24T10:48:30.250Z",
            separation: .init(min: 0.5, max: 4.25),
            overlapSeconds: 2610
        ),
        Components.Schemas.Exposure(
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
        Components.Schemas.DeviceStatus(
            deviceId: "dev-1",
            status: .clear,
            risk: .low,
            colocatedMinutes: 0,
            exposures: []
        ),
        Components.Schemas.DeviceStatus(
            deviceId: "dev-1",
            status: .exposed,
            risk: .medium,
            colocatedMinutes: 43.5,
            exposures: exposures,
            report: .init(id: "r-9", status: .denied, note: "the picture is of another person's result")
        ),
        Components.Schemas.DeviceStatus(
            deviceId: "dev-2",
            status: .positive,
            risk: .low,
            colocatedMinutes: 0,
            exposures: [],
            report: .init(id: "r-3", status: .pending, flagging: .failed)
        ),
    ]

    /// The store's writer's bytes, decoded as the type.
    func decoded<T: Decodable>(_ type: T.Type, _ value: Value) throws -> T {
        try JSONDecoder().decode(type, from: Data(JSON.string(value).utf8))
    }

    @Test(arguments: statuses)
    func aStatusWrittenByTheStoreDecodesAsItself(_ status: Components.Schemas.DeviceStatus) throws {
        #expect(try decoded(Components.Schemas.DeviceStatus.self, status.value) == status)
        #expect(try APIJSON.value(status) == status.value)
    }

    @Test func exposuresAtABeaconToo() throws {
        let body = Components.Schemas.BeaconExposures(beaconKey: "kiosk-lab", exposures: Self.exposures)
        #expect(try decoded(Components.Schemas.BeaconExposures.self, body.value) == body)
        #expect(try APIJSON.value(body) == body.value)
        // An unknown time is null, not left out: the contract requires the key.
        #expect(body.value["exposures"].map { JSON.string($0) }?.contains(#""from":null"#) == true)
        #expect(try APIJSON.string(body).contains(#""from":null"#))
    }

    @Test func aReportsExposuresAndVisitsToo() throws {
        let body = Components.Schemas.ReportExposures(
            reportId: "r-1",
            deviceId: "dev-9",
            status: .accepted,
            exposures: Self.exposures,
            visits: [.init(beaconKey: "kiosk-lab", from: "2026-11-24T10:00:00.000Z", to: "2026-11-24T11:00:00.000Z")]
        )
        #expect(try decoded(Components.Schemas.ReportExposures.self, body.value) == body)
        #expect(try APIJSON.value(body) == body.value)
    }
}

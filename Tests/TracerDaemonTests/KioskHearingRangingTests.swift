import Foundation
import Testing

@testable import TracerDaemon
@testable import TracerRanging
@testable import TracerSite

/// A kiosk ranging what the other kiosks advertise: hearings, never people.
@Suite struct KioskHearingRangingTests {
    static let kioskUUID = "0c5e7a1b-9d3f-4b6e-8a2c-5f1d3e7b9a40"
    static let map = """
        site: Two kiosks
        deviceUUIDs: [f7826da6-4fa2-4e98-8024-bc5b71e0893e]
        rooms:
          - {key: a, name: A, outline: [[0, 0], [12, 0], [12, 8], [0, 8]]}
        anchors:
          - {key: k1, kind: kiosk, room: a, position: [0.3, 1], uuid: \(kioskUUID), major: 1, minor: 1}
          - {key: k2, kind: kiosk, room: a, position: [11.7, 2], uuid: \(kioskUUID), major: 1, minor: 2}
        """

    @Test func anotherKiosksAdvertsAreHearingsClosedAsTimePasses() throws {
        let site = try Site.parse(Self.map, file: "map.yaml")
        var ranger = try Ranger(site: site, mode: .gateway(anchor: "k1"))
        let uuid = UUIDBytes(Self.kioskUUID)!
        func advert(_ t: Double, minor: UInt16, rssi: Int) -> Advert {
            var data: [UInt8] = [0x02, 0x15]
            withUnsafeBytes(of: uuid.high.bigEndian) { data += $0 }
            withUnsafeBytes(of: uuid.low.bigEndian) { data += $0 }
            data += [0, 1, UInt8(minor >> 8), UInt8(minor & 0xFF), 0xC5]
            return Advert(time: t, rssi: rssi, manufacturerData: [(company: 0x004C, data: data)])
        }
        var out: [InteractionSummary] = []
        for t in stride(from: 600.0, to: 900, by: 2) {
            ranger.add(advert(t, minor: 2, rssi: -80), into: &out)
            ranger.add(advert(t + 1, minor: 1, rssi: -40), into: &out)  // its own: not heard by BlueZ, never kept
        }
        #expect(out.isEmpty && ranger.counts.references == 300 && ranger.counts.attributed == 0)
        #expect(!ranger.hasClosedHearings, "the slot 600–900 is open until time passes it")
        ranger.expire(now: 901, into: &out)
        #expect(ranger.hasClosedHearings)
        let heard = ranger.drainHearings()
        #expect(heard.count == 1 && heard[0].receiver == "k1" && heard[0].emitter == "k2")
        #expect(heard[0].count == 150 && heard[0].rssi == -80 && heard[0].start == 600 && heard[0].end == 900)
        #expect(!ranger.hasClosedHearings && ranger.drainHearings().isEmpty)
    }
}

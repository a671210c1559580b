import Foundation
import Synchronization
import Testing
import TracerBadges
import TracerDBus
import TracerTesting

@testable import TracerDaemon
@testable import TracerRanging

/// `tracer advertise`'s advertiser on the BlueZ stand-in, on a clock the test moves across an
/// epoch's start: it registers the next epoch's id when the epoch starts, each the design's, and
/// leaves nothing registered when cancelled.
@Suite struct AdvertiserTests {
    @Test func aBadgeRegistersItsNextIDWhenTheEpochStarts() async throws {
        let bluez = try BlueZMock(bus: PrivateBus(), template: .standIn)
        try bluez.control("AddAdapter", [.string("hci0"), .string("kiosk")])
        try bluez.control("AddAdapter", [.string("hci1"), .string("badge")])
        let key = (0..<16).map { UInt8($0 * 11) }
        let boundary = Double(RotatingID.epochStart(Date().timeIntervalSince1970)) + 1024
        // The advertiser's clock, moved by the test: in the epoch before `boundary`, then past it.
        let now = Mutex(boundary - 100)
        let clock: @Sendable () -> Double = { now.withLock { $0 } }
        let seen = Mutex<[(major: UInt16, minor: UInt16, until: Double?)]>([])
        let advertiser = Advertiser(
            identity: .badge(uuid: UUIDBytes("5a1e0b5c-7e2d-4c1a-9b8e-3f6d2a9c4e71")!, key: key, bits: 10),
            adapter: "hci1",
            busAddress: bluez.bus.address,
            clock: clock,
            started: { major, minor, until in seen.withLock { $0.append((major, minor, until)) } }
        )
        let running = Task { try await advertiser.run() }
        #expect(await until(60) { seen.withLock { $0.count } >= 1 })
        now.withLock { $0 = boundary + 1 }
        #expect(await until(60) { seen.withLock { $0.count } >= 2 })
        running.cancel()
        _ = try? await running.value

        let adverts = seen.withLock { $0 }
        let expected = [boundary - 1024, boundary].map {
            RotatingID.id(key: .init(data: key), epochStart: UInt32($0), bits: 10)
        }
        #expect(adverts.count == 2)
        for (advert, id) in zip(adverts, expected) {
            #expect(advert.major == id.major && advert.minor == id.minor)
        }
        #expect(adverts.first?.until == boundary && adverts.last?.until == boundary + 1024)
        // Registered, replaced at the epoch's start, and unregistered when cancelled.
        let calls = try bluez.calls(on: "/org/bluez/hci1").filter { $0.hasSuffix("Advertisement") }
        #expect(
            calls == [
                "RegisterAdvertisement", "UnregisterAdvertisement", "RegisterAdvertisement", "UnregisterAdvertisement",
            ],
            "\(calls)"
        )
    }
}

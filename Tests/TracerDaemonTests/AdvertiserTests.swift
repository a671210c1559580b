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

/// The advertiser's steps on a manual clock, with no bus: every path `Advertiser.advertise` takes.
@Suite struct AdvertiserMachineTests {
    typealias M = AdvertiserMachine

    /// Ids that change every 100 s: major = the epoch's number, minor 7.
    static func rotating(_ t: Double) -> (major: UInt16, minor: UInt16, until: Double?) {
        let epoch = (t / 100).rounded(.down)
        return (UInt16(epoch), 7, (epoch + 1) * 100)
    }

    @Test func aFixedBeaconRegistersOnceWaitsAndIsTakenDownAtTheStop() {
        var m = M(adapter: "hci0") { _ in (1, 2, nil) }
        let advert = M.Advert(path: "/org/tracer/advertisement1", major: 1, minor: 2, until: nil)
        #expect(m.start(now: 1000) == .register(advert, replacing: nil))
        #expect(m.handle(.registered) == .wait(until: nil, announce: advert))
        #expect(m.handle(.tick(now: 5000)) == .wait(until: nil, announce: nil))
        #expect(m.handle(.stop) == .unregister(advert))
        #expect(m.handle(.tick(now: 5001)) == .finish(nil))
        #expect(m.state == .finished)
    }

    @Test func aBadgeReplacesItsAdvertWhenTheEpochEnds() {
        var m = M(adapter: "hci1", id: Self.rotating)
        let first = M.Advert(path: "/org/tracer/advertisement1", major: 10, minor: 7, until: 1100)
        let second = M.Advert(path: "/org/tracer/advertisement2", major: 11, minor: 7, until: 1200)
        #expect(m.start(now: 1050) == .register(first, replacing: nil))
        #expect(m.handle(.registered) == .wait(until: 1100, announce: first))
        #expect(m.handle(.tick(now: 1099.8)) == .wait(until: 1100, announce: nil))
        #expect(m.handle(.tick(now: 1100)) == .register(second, replacing: first))
        #expect(m.handle(.registered) == .wait(until: 1200, announce: second))
        // Stopped while a new advert was being registered: the one BlueZ took is taken down.
        #expect(
            m.handle(.tick(now: 1200.1))
                == .register(
                    M.Advert(path: "/org/tracer/advertisement3", major: 12, minor: 7, until: 1300),
                    replacing: second
                )
        )
        #expect(
            m.handle(.stop)
                == .unregister(M.Advert(path: "/org/tracer/advertisement3", major: 12, minor: 7, until: 1300))
        )
        #expect(m.handle(.tick(now: 1201)) == .finish(nil))
    }

    @Test func aRefusalOrTheBusGoingAwayEndsItWithTheReason() {
        let notReady = AdvertiseError(DBusError(name: "org.bluez.Error.NotReady", message: "off"), adapter: "hci1")
        var refused = M(adapter: "hci1", id: Self.rotating)
        _ = refused.start(now: 1000)
        #expect(refused.handle(.refused(notReady)) == .finish(notReady))
        #expect(notReady.code == .poweredOff)
        // Refused at an epoch's change: the old advert was taken down before, nothing is left.
        var rotating = M(adapter: "hci1", id: Self.rotating)
        _ = rotating.start(now: 1000)
        _ = rotating.handle(.registered)
        guard case .register(_, replacing: .some) = rotating.handle(.tick(now: 1100)) else {
            Issue.record("the epoch's end replaces the advert")
            return
        }
        #expect(rotating.handle(.refused(notReady)) == .finish(notReady))
        var gone = M(adapter: "hci0") { _ in (1, 2, nil) }
        _ = gone.start(now: 1000)
        _ = gone.handle(.registered)
        guard case .finish(let error?) = gone.handle(.busGone) else {
            Issue.record("the bus going away ends the advertiser with an error")
            return
        }
        #expect(error.code == .noBus && error.context == "hci0: org.freedesktop.DBus.Error.Disconnected")
        #expect(gone.state == .finished)
    }
}

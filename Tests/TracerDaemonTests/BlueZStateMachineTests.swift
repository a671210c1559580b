import Testing

@testable import TracerDaemon

/// The BlueZ session's state machine on a manual clock, with no bus: every timing is exact.
@Suite struct BlueZStateMachineTests {
    typealias Machine = BlueZStateMachine
    static let hci0 = "/org/bluez/hci0"
    static let apple = [Machine.DeviceProperties.ManufacturerData(company: 0x004C, data: [2, 0x15])]

    /// A machine scanning on hci0 at time 0, and the clock.
    struct Scanning {
        var machine: Machine
        var now = 0.0

        init(stall: Double = 60, forget: Double = 60) {
            machine = Machine(adapter: nil, timing: .init(stallTimeout: stall, forgetAfter: forget))
            #expect(machine.handle(.connected(bluezIsUp: true), now: 0) == [.readObjects])
            let actions = machine.handle(
                .objects(adapters: [.init(path: hci0, powered: true, discovering: false)], devices: [:]),
                now: 0
            )
            #expect(actions == [.arm(adapter: hci0)])
            _ = machine.handle(.armed, now: 0)
            _ = machine.handle(.adapterChanged(path: hci0, powered: nil, discovering: true), now: 0)
            #expect(machine.state == .scanning("hci0"))
        }

        mutating func at(_ t: Double, _ event: Machine.Event = .tick) -> [Machine.Action] {
            now = t
            return machine.handle(event, now: t)
        }
    }

    static func logs(_ actions: [Machine.Action]) -> [String] {
        actions.compactMap { if case .log(_, let text) = $0 { text } else { nil } }
    }

    @Test func theWatchdogRestartsAStalledScanAfterExactlyItsTimeout() {
        var s = Scanning(stall: 60)
        // Activity keeps it quiet.
        _ = s.at(59, .deviceChanged(path: "\(Self.hci0)/dev_1", .init(rssi: -60)))
        #expect(!s.at(119).contains(.stopDiscovery(adapter: Self.hci0)))
        // 60 s after the last activity: not yet; a moment past it: stopped and armed again at once.
        let restart = s.at(119.001)
        #expect(restart.contains(.stopDiscovery(adapter: Self.hci0)))
        #expect(s.at(119.002) == [.arm(adapter: Self.hci0)])
        #expect(s.machine.counters.watchdogRestarts == 1)
        #expect(Self.logs(s.at(119.002, .armed)) == ["scanning on hci0"])
        #expect(s.machine.counters.discoveryStarts == 2)
        // And quiet again for another stall timeout.
        #expect(!s.at(179).contains(.stopDiscovery(adapter: Self.hci0)))
    }

    @Test func advertsCarryTheKeptDataWithTheNewestRSSI() {
        var s = Scanning()
        let path = "\(Self.hci0)/dev_C3"
        let added = s.at(1, .deviceAdded(path: path, .init(rssi: -61, txPower: -4, manufacturerData: Self.apple)))
        #expect(added == [.advert(rssi: -61, manufacturerData: Self.apple, txPower: -4)])
        #expect(
            s.at(2, .deviceChanged(path: path, .init(rssi: -70))) == [
                .advert(rssi: -70, manufacturerData: Self.apple, txPower: -4)
            ]
        )
        // Not Apple's, or another adapter's: nothing.
        let other = [Machine.DeviceProperties.ManufacturerData(company: 6, data: [1])]
        #expect(s.at(3, .deviceAdded(path: "\(Self.hci0)/dev_X", .init(rssi: -50, manufacturerData: other))).isEmpty)
        #expect(
            s.at(3, .deviceAdded(path: "/org/bluez/hci1/dev_Y", .init(rssi: -50, manufacturerData: Self.apple))).isEmpty
        )
        #expect(s.machine.counters.deviceSignals == 1)
    }

    @Test func unseenDevicesAreForgottenButKeptOnesStay() {
        var s = Scanning(stall: 1000, forget: 10)
        _ = s.at(0, .deviceAdded(path: "\(Self.hci0)/dev_A", .init(rssi: -60)))
        _ = s.at(0, .deviceAdded(path: "\(Self.hci0)/dev_K", .init(rssi: -60, kept: true)))
        _ = s.at(4, .deviceAdded(path: "\(Self.hci0)/dev_B", .init(rssi: -60)))
        // Sweeps at most every min(5, forget / 2) s: at 0, then 8 (B heard again), 15, 20 …
        #expect(s.at(8, .deviceChanged(path: "\(Self.hci0)/dev_B", .init(rssi: -61))).isEmpty)
        #expect(s.at(10).isEmpty)
        #expect(s.at(15) == [.removeDevice(adapter: Self.hci0, device: "\(Self.hci0)/dev_A")])
        _ = s.at(15, .deviceForgotten(path: "\(Self.hci0)/dev_A"))
        #expect(s.at(20) == [.removeDevice(adapter: Self.hci0, device: "\(Self.hci0)/dev_B")])
        #expect(s.at(60).isEmpty)
        #expect(s.machine.devices.keys.sorted() == ["\(Self.hci0)/dev_K"])
        #expect(s.machine.counters.devicesRemoved == 1)
    }

    @Test func rearmsAtOnceWhenPoweredBackOnOrWhenBluetoothdReturns() {
        var s = Scanning()
        let off = s.at(10, .adapterChanged(path: Self.hci0, powered: false, discovering: nil))
        #expect(s.machine.state == .poweredOff("hci0"))
        #expect(Self.logs(off) == ["hci0 is powered off; waiting for it to be powered on"])
        #expect(s.at(11).isEmpty)
        // Powered on: armed in the same step, no wait.
        #expect(
            s.at(20, .adapterChanged(path: Self.hci0, powered: true, discovering: nil)).contains(
                .arm(adapter: Self.hci0)
            )
        )
        _ = s.at(20, .armed)
        #expect(s.machine.state == .scanning("hci0"))

        let left = s.at(30, .bluezLeft)
        #expect(s.machine.state == .bluetoothdLeft && s.machine.adapterPath == nil)
        #expect(Self.logs(left) == ["bluetoothd left the system bus; waiting for it to come back"])
        #expect(s.at(31, .bluezAppeared).contains(.readObjects))
        let back = s.at(
            31,
            .objects(adapters: [.init(path: Self.hci0, powered: true, discovering: false)], devices: [:])
        )
        #expect(back == [.arm(adapter: Self.hci0)])
    }

    /// BlueZ ended discovery under us (another client): armed again once it has settled.
    @Test func discoveryEndedUnderUsIsArmedAgain() {
        var s = Scanning()
        #expect(s.at(5, .adapterChanged(path: Self.hci0, powered: nil, discovering: false)).isEmpty)
        #expect(s.at(5.02) == [.arm(adapter: Self.hci0)])
        // Within a second of arming, BlueZ may not have said Discovering yet: left alone.
        _ = s.at(5.02, .armed)
        #expect(s.at(5.9).isEmpty)
    }

    /// Discovery asked for is not asked again until BlueZ answers, however long that takes; the
    /// machine's state says where it is (due, requested, armed), and the adapter it holds.
    @Test func discoveryIsAskedForOnceUntilAnswered() {
        var m = Machine(adapter: "hci0", timing: .init())
        _ = m.handle(.connected(bluezIsUp: true), now: 0)
        let actions = m.handle(
            .objects(adapters: [.init(path: Self.hci0, powered: true, discovering: false)], devices: [:]),
            now: 0
        )
        #expect(actions == [.arm(adapter: Self.hci0)])
        #expect(m.current?.discovery == .requested && m.current?.name == "hci0")
        for t in stride(from: 1.0, through: 600, by: 7) { #expect(m.handle(.tick, now: t).isEmpty) }
        _ = m.handle(.armed, now: 601)
        #expect(m.current?.discovery == .armed(since: 601, lastHeard: 601) && m.armed)
        _ = m.handle(.interfacesRemoved(path: Self.hci0, adapter: true, device: false), now: 602)
        #expect(m.current == nil && !m.armed && m.state == .adapterRemoved("hci0"))
        // An answer that comes after the adapter went is not taken for scanning.
        _ = m.handle(.armed, now: 603)
        #expect(m.state == .adapterRemoved("hci0"))
    }

    @Test func aFailedStartIsRetriedEverySecondAndSaidOnce() {
        var s = Scanning()
        _ = s.at(1, .adapterChanged(path: Self.hci0, powered: false, discovering: false))
        #expect(
            s.at(2, .adapterChanged(path: Self.hci0, powered: true, discovering: nil)).contains(
                .arm(adapter: Self.hci0)
            )
        )
        let failed = s.at(2, .armFailed(reason: "org.bluez.Error.NotReady"))
        #expect(s.machine.state == .discoveryFailed("hci0", reason: "org.bluez.Error.NotReady"))
        #expect(Self.logs(failed).count == 1)
        #expect(s.at(2.9).isEmpty)
        #expect(s.at(3) == [.arm(adapter: Self.hci0)])
        // The same failure again is not logged again.
        #expect(Self.logs(s.at(3, .armFailed(reason: "org.bluez.Error.NotReady"))).isEmpty)
        #expect(s.at(4) == [.arm(adapter: Self.hci0)])
        _ = s.at(4, .armed)
        #expect(s.machine.state == .scanning("hci0"))
    }

    @Test func aNamedAdapterIsWaitedForAndOthersLeftAlone() {
        var m = Machine(adapter: "hci1", timing: .init())
        _ = m.handle(.connected(bluezIsUp: true), now: 0)
        let none = m.handle(
            .objects(adapters: [.init(path: Self.hci0, powered: true, discovering: false)], devices: [:]),
            now: 0
        )
        #expect(m.state == .noAdapter(named: "hci1"))
        #expect(Self.logs(none) == ["no adapter hci1 yet; waiting for it"])
        #expect(m.handle(.tick, now: 100).isEmpty)
        #expect(m.handle(.adapterAdded(path: "/org/bluez/hci1"), now: 101) == [.readObjects])
        let found = m.handle(
            .objects(
                adapters: [
                    .init(path: Self.hci0, powered: true, discovering: false),
                    .init(path: "/org/bluez/hci1", powered: true, discovering: false),
                ],
                devices: [:]
            ),
            now: 101
        )
        #expect(found == [.arm(adapter: "/org/bluez/hci1")])
    }

    @Test func withoutBluetoothdItWaitsAndSaysSo() {
        var m = Machine(adapter: nil, timing: .init())
        let actions = m.handle(.connected(bluezIsUp: false), now: 0)
        #expect(m.state == .waitingForBluetoothd)
        #expect(Self.logs(actions) == ["waiting for bluetoothd (org.bluez) on the system bus"])
        #expect(m.handle(.tick, now: 1000).isEmpty)
    }
}

import Foundation
import Logging
import Testing
import TracerDBus
import TracerModel
import TracerTesting

@testable import TracerDaemon
@testable import TracerRanging

/// The BlueZ source against tracer's stand-in on a private bus: a real dbus-daemon, real
/// libdbus, BlueZ's D-Bus API as a Python mock (no Bluetooth exists on these machines).
@Suite(.serialized) struct BlueZSourceTests {
    static let badge = "f7826da6-4fa2-4e98-8024-bc5b71e0893e"

    /// A running source and what it has handed over.
    final class Running: @unchecked Sendable {
        let source: BlueZSource
        let lock = NSLock()
        var adverts: [Advert] = []
        var batches = 0
        var task: Task<Void, any Error>?

        init(_ bus: PrivateBus, configure: (inout BlueZSource.Options) -> Void = { _ in }) {
            var options = BlueZSource.Options(adapter: nil, busAddress: bus.address)
            options.reconnectBackoff = Backoff(first: .milliseconds(50), longest: .milliseconds(400))
            configure(&options)
            var logger = Logger(label: "test.bluez")
            logger.logLevel = .warning
            source = BlueZSource(options: options, logger: logger)
            // The source's thread starts here, not when a task gets to run: tests that block
            // can hold every thread of the cooperative pool on a 2-core machine.
            let batches = source.batches()
            task = Task { [self] in
                for try await batch in batches { received(batch) }
            }
        }

        func received(_ batch: [Advert]) {
            lock.lock()
            adverts += batch
            batches += 1
            lock.unlock()
        }

        var count: Int {
            lock.lock()
            defer { lock.unlock() }
            return adverts.count
        }

        func stop() {
            task?.cancel()
            source.stopWaiting()
        }

        deinit { stop() }
    }

    /// Polls `condition` every 10 ms for up to `timeout` seconds; the seconds it took, or nil.
    /// It sleeps without holding a thread, so the consumer task can run meanwhile, and checks once
    /// more after the deadline (a busy machine may resume it late). Timings that matter are taken
    /// from the source's own clock, not from this.
    @discardableResult
    static func wait(_ timeout: Double = 90, _ condition: () throws -> Bool) async throws -> Double? {
        let start = Date()
        while true {
            if try condition() { return Date().timeIntervalSince(start) }
            if Date().timeIntervalSince(start) >= timeout { return nil }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    static func addBeacon(_ bluez: BlueZMock, minor: UInt16, rssi: Int16 = -60, address: String? = nil) throws -> String
    {
        let mac = address ?? String(format: "C3:11:9A:22:%02X:%02X", minor >> 8, minor & 0xFF)
        return try #require(
            bluez.control(
                "AddBeacon",
                [.string("hci0"), .string(mac), .string(badge), .uint16(1), .uint16(minor), .int16(-59), .int16(rssi)]
            ).first?.string
        )
    }

    static func starts(_ bluez: BlueZMock) throws -> Int {
        try bluez.calls(on: "/org/bluez/hci0").filter { $0 == "StartDiscovery" }.count
    }

    @Test func armsDiscoveryAndRangesAdvertsWithoutAddresses() async throws {
        let bluez = try BlueZMock(bus: PrivateBus(), template: .standIn)
        try bluez.control("AddAdapter", [.string("hci0"), .string("kiosk-lab")])
        let running = Running(bluez.bus)
        defer { running.stop() }
        // At least once, not exactly once: a test starved of threads for a minute sees the watchdog's
        // restarts too.
        try #require(
            try await Self.wait { try Self.starts(bluez) >= 1 } != nil,
            "StartDiscovery was not called; the source says \(running.source.status.state)"
        )
        // The filter went first, with LE and every duplicate.
        let calls = try bluez.calls(on: "/org/bluez/hci0")
        #expect(calls.prefix(2) == ["SetDiscoveryFilter", "StartDiscovery"], "\(calls)")

        let path = try Self.addBeacon(bluez, minor: 42, rssi: -61)
        // Until the test ends, not for one second: the mock emits per tick of its timer, and a busy
        // machine runs fewer ticks in a second than 20 adverts need.
        try bluez.control("Stream", [.array(element: "s", [.string(path)]), .double(20), .double(0)])
        try #require(try await Self.wait { running.count >= 20 } != nil, "\(running.count) adverts")
        let first = running.adverts[0]
        // InterfacesAdded's advert, then RSSI-only changes carrying the kept manufacturer data.
        #expect(first.rssi == -61)
        var beacons: [IBeacon] = []
        for advert in running.adverts.prefix(20) { advert.forEachIBeacon { beacons.append($0) } }
        #expect(beacons.count == 20)
        #expect(beacons.allSatisfy { $0.deviceID == "\(Self.badge):1:42" && $0.measuredPower == -59 })
        #expect(Set(running.adverts.map(\.rssi)).isSubset(of: [-61, -60]))
        #expect(running.source.status.state == .scanning("hci0"))
        #expect(running.source.status.adapter == "hci0")
    }

    @Test func readsManufacturerDataInBothShapes() {
        let bytes: DBusValue = .variant(.array(element: "y", [.byte(2), .byte(0x15)]))
        let proper: DBusValue = .dictionary(key: "q", value: "v", [.init(.uint16(76), bytes)])
        let mock: DBusValue = .array(element: "a{qv}", [proper])
        for value in [proper, mock] {
            let parsed = BlueZSource.Session.manufacturerData(value)
            #expect(parsed.count == 1 && parsed[0].company == 76 && parsed[0].data == [2, 0x15])
        }
        #expect(BlueZSource.Session.manufacturerData(.string("x")).isEmpty)
    }

    @Test func waitsForBluetoothdAndAnAdapterThenScans() async throws {
        let bus = try PrivateBus()
        let running = Running(bus)
        defer { running.stop() }
        try #require(try await Self.wait { running.source.status.state == .waitingForBluetoothd } != nil)
        let bluez = try BlueZMock(bus: bus, template: .standIn)
        try #require(try await Self.wait { running.source.status.state == .noAdapter(named: nil) } != nil)
        try bluez.control("AddAdapter", [.string("hci0"), .string("kiosk-lab")])
        // How soon is the state machine's to answer (BlueZStateMachineTests, on a manual clock).
        #expect(try await Self.wait { running.source.status.state == .scanning("hci0") } != nil)
    }

    @Test func aNamedAdapterIsWaitedForAndOthersAreLeftAlone() async throws {
        let bluez = try BlueZMock(bus: PrivateBus(), template: .standIn)
        try bluez.control("AddAdapter", [.string("hci0"), .string("kiosk-lab")])
        let running = Running(bluez.bus) { $0.adapter = "hci1" }
        defer { running.stop() }
        try #require(
            try await Self.wait { running.source.status.state == .noAdapter(named: "hci1") } != nil
        )
        try bluez.control("AddAdapter", [.string("hci1"), .string("usb dongle")])
        #expect(try await Self.wait { running.source.status.state == .scanning("hci1") } != nil)
        #expect(try Self.starts(bluez) == 0)
    }

    /// bluetoothd crashes and is restarted: discovery is armed again within 2 s of its adapter
    /// coming back.
    @Test func rearmsWithinTwoSecondsWhenBluetoothdComesBack() async throws {
        let bus = try PrivateBus()
        var bluez = try BlueZMock(bus: bus, template: .standIn)
        try bluez.control("AddAdapter", [.string("hci0"), .string("kiosk-lab")])
        let running = Running(bus)
        defer { running.stop() }
        try #require(try await Self.wait { running.source.status.state == .scanning("hci0") } != nil)
        bluez.kill()
        try #require(try await Self.wait { running.source.status.state == .bluetoothdLeft } != nil)
        bluez = try BlueZMock(bus: bus, template: .standIn)
        try bluez.control("AddAdapter", [.string("hci0"), .string("kiosk-lab")])
        try #require(try await Self.wait { try Self.starts(bluez) >= 1 } != nil)
        // And adverts flow again.
        let path = try Self.addBeacon(bluez, minor: 7)
        try bluez.control("Stream", [.array(element: "s", [.string(path)]), .double(20), .double(1)])
        #expect(try await Self.wait { running.count >= 5 } != nil)
    }

    @Test func rearmsWhenTheAdapterIsPoweredBackOnOrReplaced() async throws {
        let bluez = try BlueZMock(bus: PrivateBus(), template: .standIn)
        try bluez.control("AddAdapter", [.string("hci0"), .string("kiosk-lab")])
        let running = Running(bluez.bus)
        defer { running.stop() }
        try #require(try await Self.wait { try Self.starts(bluez) >= 1 } != nil)

        try bluez.control("SetPowered", [.string("hci0"), .bool(false)])
        try #require(try await Self.wait { running.source.status.state == .poweredOff("hci0") } != nil)
        try bluez.control("SetPowered", [.string("hci0"), .bool(true)])
        try #require(try await Self.wait { try Self.starts(bluez) >= 2 } != nil)

        try bluez.control("RemoveAdapter", [.string("hci0")])
        try #require(try await Self.wait { running.source.status.state == .adapterRemoved("hci0") } != nil)
        try bluez.control("AddAdapter", [.string("hci0"), .string("kiosk-lab")])
        // A new adapter object: its own call log.
        try #require(try await Self.wait { try Self.starts(bluez) >= 1 } != nil)
        // The stand-in logs StartDiscovery before its reply reaches the daemon, which counts the
        // start only then: wait for the count too.
        #expect(try await Self.wait { running.source.status.discoveryStarts >= 3 } != nil)
    }

    /// Discovery claims to be on but nothing arrives: the watchdog restarts it, and adverts flow.
    @Test func theWatchdogRestartsAStalledScan() async throws {
        let bluez = try BlueZMock(bus: PrivateBus(), template: .standIn)
        try bluez.control("AddAdapter", [.string("hci0"), .string("kiosk-lab")])
        let running = Running(bluez.bus) { $0.stallTimeout = .milliseconds(800) }
        defer { running.stop() }
        try #require(try await Self.wait { try Self.starts(bluez) >= 1 } != nil)
        let path = try Self.addBeacon(bluez, minor: 9)
        try bluez.control("Stream", [.array(element: "s", [.string(path)]), .double(20), .double(0)])
        try #require(try await Self.wait { running.count >= 5 } != nil)
        try bluez.control("Stall", [.string("hci0")])
        let before = running.count
        // Restarting calls StopDiscovery then StartDiscovery, which clears the stall.
        #expect(try await Self.wait { try Self.starts(bluez) >= 2 } != nil)
        #expect(try bluez.calls(on: "/org/bluez/hci0").contains("StopDiscovery"))
        // The daemon publishes its counters after the round that made the calls: wait for them.
        #expect(try await Self.wait { running.source.status.watchdogRestarts >= 1 } != nil)
        #expect(try await Self.wait { running.count >= before + 5 } != nil)
    }

    @Test func devicesUnseenForAWhileAreRemovedFromBlueZButPairedOnesAreKept() async throws {
        let bluez = try BlueZMock(bus: PrivateBus(), template: .standIn)
        try bluez.control("AddAdapter", [.string("hci0"), .string("kiosk-lab")])
        try bluez.control("AddDevice", [.string("hci0"), .string("11:22:33:44:55:66"), .string("keyboard")])
        try bluez.control("PairDevice", [.string("hci0"), .string("11:22:33:44:55:66"), .int32(0)])
        // Forgotten after 2 s unseen: the stayer streams ten adverts a second, and under a full
        // suite on two cores the stand-in's stream stalled for more than 0.6 s (the bound this
        // test had), so the stayer went too.
        let running = Running(bluez.bus) {
            $0.forgetAfter = .seconds(2)
            $0.stallTimeout = .seconds(30)
        }
        defer { running.stop() }
        try #require(try await Self.wait { try Self.starts(bluez) >= 1 } != nil)
        let passerBy = try Self.addBeacon(bluez, minor: 1)
        let stayer = try Self.addBeacon(bluez, minor: 2)
        try bluez.control("Stream", [.array(element: "s", [.string(stayer)]), .double(10), .double(0)])
        let removed = try await Self.wait { try !bluez.objectPaths().contains(passerBy) }
        #expect(removed != nil, "the passer-by is still in BlueZ's cache")
        let paths = try bluez.objectPaths()
        #expect(paths.contains(stayer))
        #expect(paths.contains("/org/bluez/hci0/dev_11_22_33_44_55_66"), "a paired device was removed")
        // Counted when RemoveDevice's reply reaches the daemon, after the stand-in dropped the
        // object: wait for it, then check it is the only one.
        #expect(try await Self.wait { running.source.status.devicesRemoved >= 1 } != nil)
        #expect(running.source.status.devicesRemoved == 1)
    }

    /// The bus itself goes away (dbus-daemon restarted): the source reconnects with backoff,
    /// waits for bluetoothd, and scans again.
    @Test func reconnectsWhenTheBusIsLost() async throws {
        let bus = try PrivateBus()
        var bluez = try BlueZMock(bus: bus, template: .standIn)
        try bluez.control("AddAdapter", [.string("hci0"), .string("kiosk-lab")])
        let running = Running(bus)
        defer { running.stop() }
        try #require(try await Self.wait { running.source.status.state == .scanning("hci0") } != nil)
        bluez.kill()
        try bus.restart(after: 0.3)
        bluez = try BlueZMock(bus: bus, template: .standIn)
        try bluez.control("AddAdapter", [.string("hci0"), .string("kiosk-lab")])
        #expect(try await Self.wait { try Self.starts(bluez) >= 1 } != nil)
        #expect(running.source.status.reconnects == 1)
    }

    @Test func stoppingEndsTheStreamAndStopsDiscovery() async throws {
        let bluez = try BlueZMock(bus: PrivateBus(), template: .standIn)
        try bluez.control("AddAdapter", [.string("hci0"), .string("kiosk-lab")])
        let running = Running(bluez.bus)
        try #require(try await Self.wait { try Self.starts(bluez) >= 1 } != nil)
        running.stop()
        _ = try await running.task?.value
        #expect(try bluez.calls(on: "/org/bluez/hci0").last == "StopDiscovery")
    }
}

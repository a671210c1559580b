import Foundation
import Testing
import TracerDBus
import TracerTesting

@Suite(.serialized) struct DBusConnectionTests {
    @Test func callsTheBusItself() throws {
        let bus = try PrivateBus()
        let connection = try bus.connect()
        #expect(connection.uniqueName.hasPrefix(":"))
        let reply = try connection.call(
            destination: "org.freedesktop.DBus",
            path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus",
            method: "ListNames"
        )
        guard case .array("s", let names)? = reply.first else {
            Issue.record("ListNames returned \(reply)")
            return
        }
        #expect(names.contains(.string("org.freedesktop.DBus")))
        #expect(names.contains(.string(connection.uniqueName)))
    }

    @Test func errorsCarryTheDBusNameAndTheCall() throws {
        let bus = try PrivateBus()
        #expect {
            try bus.connect().call(
                destination: "org.bluez",
                path: "/",
                interface: "org.freedesktop.DBus.ObjectManager",
                method: "GetManagedObjects"
            )
        } throws: { error in
            guard let e = error as? DBusError else { return false }
            return e.name == "org.freedesktop.DBus.Error.ServiceUnknown"
                && e.description.contains("org.bluez / org.freedesktop.DBus.ObjectManager.GetManagedObjects")
        }
        #expect(throws: DBusError.self) {
            try bus.connect().call(
                destination: "org.freedesktop.DBus",
                path: "not a path",
                interface: "x.y",
                method: "Z"
            )
        }
        #expect(throws: DBusError.self) { try DBusConnection(address: "unix:path=/nonexistent/bus") }
    }

    /// GetManagedObjects' `a{oa{sa{sv}}}`, with the adapter and device properties tracer reads.
    @Test func readsBlueZManagedObjects() throws {
        let bluez = try BlueZMock(bus: PrivateBus())
        let adapter = try bluez.control("AddAdapter", [.string("hci0"), .string("kiosk-lab")])
        #expect(adapter.first?.string == "/org/bluez/hci0")
        try bluez.control("AddDevice", [.string("hci0"), .string("C3:11:9A:22:07:5E"), .string("badge")])
        let reply = try bluez.bus.connect().call(
            destination: "org.bluez",
            path: "/",
            interface: "org.freedesktop.DBus.ObjectManager",
            method: "GetManagedObjects"
        )
        let objects = try #require(reply.first?.dictionary)
        let adapterInterfaces = try #require(objects["/org/bluez/hci0"]?.dictionary)
        let adapterProperties = try #require(adapterInterfaces["org.bluez.Adapter1"]?.dictionary)
        #expect(adapterProperties["Powered"]?.bool != nil)
        #expect(adapterProperties["Address"]?.string?.count == 17)
        let device = try #require(
            objects["/org/bluez/hci0/dev_C3_11_9A_22_07_5E"]?.dictionary?["org.bluez.Device1"]?.dictionary
        )
        #expect(device["RSSI"]?.unwrapped == .int16(-79))
        // The template declares dbus.Array(signature='a{qv}'), whose *elements* are a{qv}: it
        // sends aa{qv} where BlueZ sends a{qv}. What came is read as it is; a{qv} itself
        // round-trips in everyTypeRoundTrips.
        #expect(device["ManufacturerData"]?.unwrapped.signature == "aa{qv}")
        #expect(device["Adapter"]?.unwrapped == .objectPath("/org/bluez/hci0"))
    }

    /// Every type, through a method that returns its argument (added to the mock at run time).
    @Test func everyTypeRoundTrips() throws {
        let bluez = try BlueZMock(bus: PrivateBus())
        let bus = try bluez.bus.connect()
        _ = try bus.call(
            destination: "org.bluez",
            path: "/",
            interface: "org.freedesktop.DBus.Mock",
            method: "AddMethod",
            [.string("org.tracer.Echo"), .string("Echo"), .string("a{sv}"), .string("a{sv}"), .string("ret = args[0]")]
        )
        let sent: DBusValue = .properties([
            "y": .byte(255), "b": .bool(true), "n": .int16(-79), "q": .uint16(0x004C), "i": .int32(-2),
            "u": .uint32(4_000_000_000), "x": .int64(Int64.min), "t": .uint64(UInt64.max), "d": .double(-0.5),
            "s": .string("kiosk-lab é"), "o": .objectPath("/org/bluez/hci0"), "g": .signature("a{sv}"),
            "ay": .array(element: "y", [.byte(2), .byte(0x15)]),
            "as": .array(element: "s", [.string("a"), .string("b")]),
            "empty": .array(element: "s", []),
            "a{qv}": .dictionary(
                key: "q",
                value: "v",
                [.init(.uint16(76), .variant(.array(element: "y", [.byte(2)])))]
            ),
            "struct": .structure([.int32(1), .string("two")]),
            "nested": .dictionary(
                key: "o",
                value: "a{sv}",
                [.init(.objectPath("/org/bluez/hci0/dev_X"), .properties(["RSSI": .int16(-60)]))]
            ),
        ])
        let reply = try bus.call(
            destination: "org.bluez",
            path: "/",
            interface: "org.tracer.Echo",
            method: "Echo",
            [sent]
        )
        #expect(reply == [sent])
    }

    @Test func refusesValuesThatDoNotMatchTheirSignature() throws {
        let bus = try PrivateBus()
        #expect(throws: DBusError.self) {
            try bus.connect().call(
                destination: "org.freedesktop.DBus",
                path: "/org/freedesktop/DBus",
                interface: "org.freedesktop.DBus",
                method: "NameHasOwner",
                [.array(element: "s", [.int32(1)])]
            )
        }
        #expect(throws: DBusError.self) {
            try bus.connect().call(
                destination: "org.freedesktop.DBus",
                path: "/org/freedesktop/DBus",
                interface: "org.freedesktop.DBus",
                method: "NameHasOwner",
                [.objectPath("no")]
            )
        }
    }

    /// Signals arrive on the connection's own thread and come out as an AsyncStream, while calls
    /// from other threads on the same connection still get their replies.
    @Test func signalsAreHandedToSwiftConcurrency() async throws {
        let bus = try PrivateBus()
        let connection = try bus.connect()
        let signals = try connection.signals(matching: [
            "type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged',arg0='org.tracer.Probe'"
        ])
        let other = try bus.connect()
        _ = try other.call(
            destination: "org.freedesktop.DBus",
            path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus",
            method: "RequestName",
            [.string("org.tracer.Probe"), .uint32(0)]
        )
        // A call on the receiving connection, from this task's thread, while its thread reads.
        for _ in 0..<20 {
            let reply = try connection.call(
                destination: "org.freedesktop.DBus",
                path: "/org/freedesktop/DBus",
                interface: "org.freedesktop.DBus",
                method: "NameHasOwner",
                [.string("org.tracer.Probe")]
            )
            #expect(reply == [.bool(true)])
        }
        // The bus also sends this connection its own NameAcquired, directed to it: skipped.
        var iterator = signals.makeAsyncIterator()
        var next = await iterator.next()
        while let s = next, s.member == "NameAcquired" { next = await iterator.next() }
        let signal = try #require(next)
        #expect(signal.member == "NameOwnerChanged" && signal.interface == "org.freedesktop.DBus")
        #expect(signal.arguments.first == .string("org.tracer.Probe"))
        #expect(signal.arguments.last == .string(other.uniqueName))
    }
}

import Foundation
import Testing
import TracerDBus
import TracerTesting

/// `tracer daemon` on its default source, BlueZ, through tracer's stand-in on a private bus.
@Suite(.serialized) struct BlueZDaemonTests {
    let dir = TemporaryDirectory("tracer-bluez-daemon")
    static let map = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("BeaconMap/example-campus.yaml").path
    static let badge = "f7826da6-4fa2-4e98-8024-bc5b71e0893e"

    /// Three badges heard at 10 Hz; status lines and metrics while it runs; SIGTERM stops
    /// discovery, writes the three open windows, and exits 0 within 2 s; no address is stored.
    @Test func rangesBlueZAdvertsAndFlushesOnSIGTERM() throws {
        let bluez = try BlueZMock(bus: PrivateBus(), template: .standIn)
        try bluez.control("AddAdapter", [.string("hci0"), .string("kiosk-lab")])
        let store = dir.file("s.sqlite")
        // One interaction past the 14-day retention and one inside it: the daemon purges the first.
        let old = ISO8601DateFormatter().string(from: Date(timeIntervalSinceNow: -15 * 86_400))
        let recent = ISO8601DateFormatter().string(from: Date(timeIntervalSinceNow: -13 * 86_400))
        for (id, time) in [("old", old), ("recent", recent)] {
            let set = try TracerProcess.run([
                "db", "set", "beacons/kiosk-lab/interactions/\(id)", #"{"start": {"__time__": "\#(time)"}}"#,
                "--store", store,
            ])
            try #require(set.status == 0, "\(set.stderr)")
        }
        let daemon = try TracerProcess.start(
            [
                "daemon", "--map", Self.map, "--anchor", "kiosk-lab", "--store", store, "--status-interval", "0.5",
                "--metrics", "127.0.0.1:0",
            ],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": bluez.bus.address]
        )
        let metricsLine = daemon.nextLine() ?? ""
        let port = try #require(UInt16(metricsLine.split(separator: ":").last?.split(separator: "/").first ?? ""))
        var paths: [DBusValue] = []
        for minor in [1, 2, 3] as [UInt16] {
            let reply = try bluez.control(
                "AddBeacon",
                [
                    .string("hci0"), .string("C3:11:9A:22:07:0\(minor)"), .string(Self.badge), .uint16(1),
                    .uint16(minor), .int16(-59), .int16(-55 - Int16(minor) * 5),
                ]
            )
            paths.append(reply[0])
        }
        try bluez.control("Stream", [.array(element: "s", paths), .double(10), .double(0)])

        var status = ""
        while let line = daemon.nextLine(timeout: 15), !line.contains("3 in range") { status = line }
        status = daemon.nextLine(timeout: 5) ?? status
        #expect(status.hasPrefix("status: scanning on hci0; "), "\(status)")
        let metrics = httpGet(port: port) ?? ""
        #expect(metrics.contains("tracer_bluez_scanning 1.0"), "\(metrics)")
        #expect(metrics.contains("tracer_devices_in_range 3.0"), "\(metrics)")
        #expect(metrics.contains("# TYPE tracer_adverts_total counter"))

        let signalled = Date()
        daemon.kill(SIGTERM)
        #expect(Date().timeIntervalSince(signalled) < 2)
        #expect(daemon.process.terminationStatus == 0 && daemon.process.terminationReason == .exit)
        var last = ""
        while let line = daemon.nextLine(timeout: 1) { last = line }
        #expect(last.hasPrefix("stopped after") && last.hasSuffix("wrote 3 interaction documents"), "\(last)")
        #expect(try bluez.calls(on: "/org/bluez/hci0").last == "StopDiscovery")

        let export = try TracerProcess.run(["db", "export", "--store", store])
        #expect(export.status == 0)
        #expect(!export.stdout.contains("interactions/old") && export.stdout.contains("interactions/recent"))
        #expect(export.stdout.contains("\(Self.badge):1:3"))
        #expect(!export.stdout.uppercased().contains("C3:11:9A") && !export.stdout.contains("C3_11_9A"))
    }

    /// No bluetoothd on the bus: the daemon says so, keeps running, and starts scanning when it
    /// appears. Under systemd (`Type=notify`) it reports READY, its status, and STOPPING.
    @Test func waitsForBluetoothdInsteadOfExiting() throws {
        let bus = try PrivateBus()
        let notify = try NotifySocket()
        let daemon = try TracerProcess.start(
            [
                "daemon", "--map", Self.map, "--anchor", "kiosk-lab", "--store", dir.file("s.sqlite"),
                "--status-interval", "0.3",
            ],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address, "NOTIFY_SOCKET": notify.path]
        )
        #expect(notify.receive() == "READY=1")
        #expect(daemon.nextLine()?.hasPrefix("status: waiting for bluetoothd") == true)
        #expect(notify.receive()?.hasPrefix("STATUS=waiting for bluetoothd") == true)
        #expect(daemon.process.isRunning)
        let bluez = try BlueZMock(bus: bus, template: .standIn)
        try bluez.control("AddAdapter", [.string("hci0"), .string("kiosk-lab")])
        var scanning = false
        while let line = daemon.nextLine(timeout: 15) {
            if line.hasPrefix("status: scanning on hci0") {
                scanning = true
                break
            }
        }
        #expect(scanning)
        daemon.kill(SIGTERM)
        #expect(daemon.process.terminationStatus == 0)
        var messages: [String] = []
        while let message = notify.receive(timeout: 1) { messages.append(message) }
        #expect(messages.contains("STOPPING=1"), "\(messages)")
    }
}

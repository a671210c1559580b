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
    /// discovery, writes the open windows, and exits 0; no address is stored.
    @Test func rangesBlueZAdvertsAndFlushesOnSIGTERM() async throws {
        let bluez = try BlueZMock(bus: PrivateBus(), template: .standIn)
        try bluez.control("AddAdapter", [.string("hci0"), .string("kiosk-lab")])
        let store = dir.file("s.sqlite")
        // One interaction past the 14-day retention and one inside it: the daemon purges the first.
        let old = ISO8601DateFormatter().string(from: Date(timeIntervalSinceNow: -15 * 86_400))
        let recent = ISO8601DateFormatter().string(from: Date(timeIntervalSinceNow: -13 * 86_400))
        for (id, time) in [("old", old), ("recent", recent)] {
            let set = try await TracerProcess.running([
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
        let metricsLine = await daemon.line() ?? ""
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
        while let line = await daemon.line(timeout: 15), !line.contains("3 in range") { status = line }
        status = await daemon.line(timeout: 5) ?? status
        #expect(status.hasPrefix("status: scanning on hci0; "), "\(status)")
        let metrics = await httpGet(port: port, path: "/metrics") ?? ""
        #expect(metrics.contains("tracer_bluez_scanning 1.0"), "\(metrics)")
        #expect(metrics.contains("tracer_devices_in_range 3.0"), "\(metrics)")
        #expect(metrics.contains("# TYPE tracer_adverts_total counter"))

        let signalled = Date()
        daemon.kill(SIGTERM)
        // Promptly: a deadline a loaded machine cannot miss, not a timing (the product's is < 2 s).
        #expect(Date().timeIntervalSince(signalled) < 30)
        #expect(daemon.process.terminationStatus == 0 && daemon.process.terminationReason == .exit)
        var last = ""
        while let line = await daemon.line(timeout: 1) { last = line }
        // One window per badge, or two when the run crossed a 30-second boundary (windows are
        // aligned to the clock).
        #expect(last.hasPrefix("stopped after"), "\(last)")
        let written = Int(last.split(separator: " ").dropLast(2).last ?? "") ?? 0
        #expect((3...6).contains(written), "\(last)")
        #expect(try bluez.calls(on: "/org/bluez/hci0").last == "StopDiscovery")

        let export = try await TracerProcess.running(["db", "export", "--store", store])
        #expect(export.status == 0)
        #expect(!export.stdout.contains("interactions/old") && export.stdout.contains("interactions/recent"))
        #expect(export.stdout.contains("\(Self.badge):1:3"))
        let windows = export.stdout.split(separator: "\n").filter { $0.contains("\"deviceId\":\"\(Self.badge):1:") }
        #expect(windows.count == written, "the store holds \(windows.count) windows, the daemon said \(written)")
        for minor in 1...3 { #expect(windows.contains { $0.contains("\(Self.badge):1:\(minor)\"") }) }
        #expect(!export.stdout.uppercased().contains("C3:11:9A") && !export.stdout.contains("C3_11_9A"))
    }

    /// No bluetoothd on the bus: the daemon says so, keeps running, and starts scanning when it
    /// appears. Under systemd (`Type=notify`) it reports READY, its status, and STOPPING.
    @Test func waitsForBluetoothdInsteadOfExiting() async throws {
        let bus = try PrivateBus()
        let notify = try NotifySocket()
        let daemon = try TracerProcess.start(
            [
                "daemon", "--map", Self.map, "--anchor", "kiosk-lab", "--store", dir.file("s.sqlite"),
                "--status-interval", "1",
            ],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address, "NOTIFY_SOCKET": notify.path]
        )
        #expect(notify.receive() == "READY=1")
        #expect(await daemon.line()?.hasPrefix("status: waiting for bluetoothd") == true)
        #expect(notify.receive()?.hasPrefix("STATUS=waiting for bluetoothd") == true)
        #expect(daemon.process.isRunning)
        let bluez = try BlueZMock(bus: bus, template: .standIn)
        try bluez.control("AddAdapter", [.string("hci0"), .string("kiosk-lab")])
        var scanning = false
        while let line = await daemon.line(timeout: 15) {
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

    /// A simulated kiosk's replay played through the stand-in as BlueZ signals: the live daemon
    /// writes a window for exactly the badges heard in that slice.
    @Test func aSimulatedReplayThroughTheStandInReachesTheStore() async throws {
        let sim = try await TracerProcess.running([
            "simulate", "--map", Self.map, "--people", "12", "--hours", "1", "--seed", "3",
            "--start", "2026-11-23T11:30:00Z", "--out", dir.file("sim"),
        ])
        try #require(sim.status == 0, "\(sim.stderr)")
        let replay = dir.file("sim/replays/kiosk-lab.jsonl")
        let lines = try String(contentsOfFile: replay, encoding: .utf8).split(separator: "\n")
        // The busiest four seconds' start: the first advert of the replay's middle line.
        let middle = try JSONSerialization.jsonObject(with: Data(lines[lines.count / 2].utf8)) as! [String: Any]
        let from = (middle["t"] as! NSNumber).doubleValue
        var badges = Set<String>()
        for line in lines {
            let o = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            let t = (o["t"] as! NSNumber).doubleValue
            guard t >= from, t < from + 4 else { continue }
            let hex = (o["manufacturerData"] as! [String: String])["76"]!
            let u = Array(hex.dropFirst(4).prefix(32))
            let uuid = [u[0..<8], u[8..<12], u[12..<16], u[16..<20], u[20..<32]].map { String($0) }.joined(
                separator: "-"
            )
            guard uuid == Self.badge || uuid == "2f234454-cf6d-4a0f-adf2-f4911ba9ffa6" else { continue }
            let major = Int(String(hex.dropFirst(36).prefix(4)), radix: 16)!
            let minor = Int(String(hex.dropFirst(40).prefix(4)), radix: 16)!
            badges.insert("\(uuid):\(major):\(minor)")
        }
        try #require(!badges.isEmpty, "the slice has badges in it")

        let bluez = try BlueZMock(bus: PrivateBus(), template: .standIn)
        try bluez.control("AddAdapter", [.string("hci0"), .string("kiosk-lab")])
        let store = dir.file("live.sqlite")
        let daemon = try TracerProcess.start(
            ["daemon", "--map", Self.map, "--anchor", "kiosk-lab", "--store", store, "--status-interval", "0.5"],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": bluez.bus.address]
        )
        while let line = await daemon.line(timeout: 15), !line.hasPrefix("status: scanning on hci0") {}
        let count = try bluez.control("Replay", [.string("hci0"), .string(replay), .double(from), .double(4)])
        #expect(count.first.map { "\($0)" }?.isEmpty == false)
        var status = ""
        while let line = await daemon.line(timeout: 15), !line.contains("\(badges.count) in range") { status = line }
        daemon.kill(SIGTERM)
        #expect(daemon.process.terminationStatus == 0, "\(status)")
        let query = try await TracerProcess.running([
            "db", "query", "beacons/kiosk-lab/interactions", "--json", "--store", store,
        ])
        let docs = try JSONSerialization.jsonObject(with: Data(query.stdout.utf8)) as? [[String: Any]] ?? []
        let written = Set(docs.compactMap { ($0["data"] as? [String: Any])?["deviceId"] as? String })
        #expect(written == badges)
    }
}

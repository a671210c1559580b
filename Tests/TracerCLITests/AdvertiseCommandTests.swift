import Foundation
import Testing
import TracerBadges
import TracerDBus
import TracerTesting

/// `tracer advertise` through BlueZ's advertising manager on the stand-in: one adapter advertises
/// a rotating badge and a fixed id, the other is a kiosk's, and `tracer daemon` there records the
/// badge as badge:SERIAL. Mistakes are one line.
@Suite(.serialized) struct AdvertiseCommandTests {
    let dir = TemporaryDirectory("tracer-advertise")
    static let device = "f7826da6-4fa2-4e98-8024-bc5b71e0893e"

    @Test func aMachineAdvertisesABadgeThatAKioskResolves() async throws {
        let bluez = try BlueZMock(bus: PrivateBus(), template: .standIn)
        try bluez.control("AddAdapter", [.string("hci0"), .string("kiosk-lab")])
        try bluez.control("AddAdapter", [.string("hci1"), .string("a laptop")])
        let environment = ["DBUS_SYSTEM_BUS_ADDRESS": bluez.bus.address]
        let badgeTests = BadgeCommandTests()
        let site = dir.file("site.sqlite")
        let map = try badgeTests.badgeMap()
        #expect(try await TracerProcess.running(["map", "publish", map, "--store", site]).status == 0)
        let issue = try await TracerProcess.running(["badge", "issue", "--count", "1", "--json", "--store", site])
        let badge = try #require(try badgeTests.issued(issue.stdout).first)
        let serial = try #require(badge["serial"])
        let keyFile = dir.file("badge.key")
        try (badge["key"]! + "\n").write(toFile: keyFile, atomically: true, encoding: .utf8)

        // Mistakes first: each one line, exit 1.
        for (args, saying) in [
            (["--adapter", "hci7", "--key-file", keyFile], "no Bluetooth adapter hci7"),
            (["--key-file", dir.file("none.key")], "cannot read it"),
            (["--major", "1"], "give --key-file FILE (a badge) or --major and --minor"),
        ] {
            let r = try await TracerProcess.running(
                ["advertise", "--uuid", BadgeCommandTests.uuid] + args,
                environment: environment
            )
            #expect(r.status == 1 && r.stderr.split(separator: "\n").count == 1, "\(args): \(r.stderr)")
            #expect(r.stderr.contains(saying), "\(args): \(r.stderr)")
        }

        let advertise = try TracerProcess.start(
            ["advertise", "--adapter", "hci1", "--uuid", BadgeCommandTests.uuid, "--key-file", keyFile],
            environment: environment
        )
        defer { advertise.kill() }
        let fixed = try TracerProcess.start(
            ["advertise", "--adapter", "hci1", "--uuid", Self.device, "--major", "1", "--minor", "42"],
            environment: environment
        )
        defer { fixed.kill() }
        // The line names this epoch's id, as the design computes it.
        let line = await advertise.line() ?? ""
        let hex = Array(badge["key"]!.utf8)
        let key = stride(from: 0, to: hex.count, by: 2).map {
            UInt8(String(decoding: hex[$0..<$0 + 2], as: UTF8.self), radix: 16)!
        }
        let now = Date().timeIntervalSince1970
        let ids = [now - 5, now].map {
            RotatingID.id(key: .init(data: key), epochStart: RotatingID.epochStart($0))
        }
        #expect(
            ids.contains {
                line.hasPrefix("advertising \(BadgeCommandTests.uuid):\($0.major):\($0.minor) on hci1 until ")
            },
            "\(line) \(advertise.stderr)"
        )
        #expect(await fixed.line() == "advertising \(Self.device):1:42 on hci1", "\(fixed.stderr)")

        let daemon = try TracerProcess.start(
            ["daemon", "--anchor", "kiosk-lab", "--store", site, "--status-interval", "0.5"],
            environment: environment
        )
        defer { daemon.kill() }
        var status = ""
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline, !status.contains("2 in range"), let l = await daemon.line(timeout: 30) { status = l }
        #expect(status.contains("2 in range"), "\(status) | advertise: \(advertise.stderr) | \(fixed.stderr)")
        // Stopped without leaving its pipes: its last lines are read below.
        let stopped = await daemon.stop(timeout: 60)
        #expect(stopped?.status == 0, "\(daemon.stderr)")
        var last = status
        while let l = await daemon.line(timeout: 5) { last = l }
        #expect(last.hasPrefix("stopped after"), "\(last) \(daemon.stderr)")
        let export = try await TracerProcess.running(["db", "export", "--store", site])
        #expect(export.stdout.contains("\"deviceId\":\"badge:\(serial)\""), "\(last)")
        #expect(export.stdout.contains("\"deviceId\":\"\(Self.device):1:42\""))

        // SIGTERM unregisters the advertisement.
        #expect(await advertise.stop()?.status == 0, "\(advertise.stderr)")
        #expect(try bluez.calls(on: "/org/bluez/hci1").contains("UnregisterAdvertisement"))
    }
}

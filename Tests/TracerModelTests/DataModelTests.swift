import Testing
import TracerModel
import TracerSite
@_spi(Blocking) import TracerStore

/// The data model's table (docs/design.md, docs/store.md) is held to what the code does: every
/// path `Collections` builds has one entry and every entry is built, and every field the models
/// write is listed.
@Suite struct DataModelTests {
    /// Every path the code builds, one of each kind.
    static func built() throws -> [String] {
        [
            try Collections.beacon("k1"),
            try Collections.interactions(at: "k1").document("w1"),
            try Collections.hearings(at: "k1").document("k2-1795168800"),
            try Collections.report("r1"),
            try Collections.flagging("r1"),
            try Collections.device("d1"),
            try Collections.exposures(of: "d1").document("x1"),
            try Collections.pushSubscriptions(of: "d1").document("p1"),
            try Collections.token("t1"),
            try Collections.audit.document("a1"),
            try Collections.kiosk("k1"),
            Collections.site,
            Collections.badgeKeys,
            Collections.pushKey,
            Collections.watchKey,
            try Collections.badges.document("ab12"),
            try Collections.badgeIDs.document("2026-11-27"),
        ].map(\.description)
    }

    @Test func everyPathTheCodeBuildsHasOneEntryAndEveryEntryIsBuilt() throws {
        let built = try Self.built()
        for path in built {
            let entries = DataModel.entries.filter { $0.matches(path) }
            #expect(entries.count == 1, "\(path): \(entries.map(\.path))")
        }
        for entry in DataModel.entries {
            #expect(built.contains { entry.matches($0) }, "\(entry.path) is listed but nothing builds it")
        }
        // The top-level collections, each reached from an entry.
        for collection in [
            Collections.beacons, Collections.reports, Collections.devices, Collections.tokens, Collections.audit,
            Collections.kiosks, Collections.config, Collections.badges, Collections.badgeIDs, Collections.flaggings,
        ] {
            #expect(DataModel.entries.contains { $0.path.hasPrefix(collection.description + "/") }, "\(collection)")
        }
    }

    /// The fields each model writes are in its entry (the first segment of a dotted update).
    @Test func everyFieldTheModelsWriteIsListed() throws {
        func check(_ path: DocumentPath, _ fields: some Sequence<String>, _ line: Int = #line) {
            guard let entry = DataModel.entry(for: path) else {
                Issue.record("no entry for \(path)")
                return
            }
            for field in fields {
                let top = String(field.prefix { $0 != "." })
                #expect(entry.names.contains(top), "\(path): \(top) is written but not in the table (line \(line))")
            }
        }
        let t = Timestamp(seconds: 1_795_168_800)
        let interaction = Interaction(
            deviceID: "u:1:2",
            anchor: "k1",
            beacon: .init(uuid: "e2c56db5-dffb-48d2-b060-d0f5a71096e0", major: 2, minor: 7),
            proximity: .near,
            distance: 1.25,
            minDistance: 0.9,
            rssi: -63.4,
            measuredPower: -59,
            start: t,
            end: t,
            samples: 12
        )
        check(try Collections.interactions(at: "k1").document("w1"), interaction.data.keys)
        let hearing = KioskHearing(
            receiver: "k1",
            emitter: "k2",
            rssi: -70,
            count: 40,
            spread: 3,
            measuredPower: -59,
            start: 0,
            end: 300
        )
        check(try Collections.hearings(at: "k1").document(Hearing.id(hearing)), Hearing.data(hearing).keys)
        let exposure = Exposure(
            deviceID: "d1",
            reportID: "r1",
            beaconKey: "k1",
            from: t,
            to: t,
            separationMin: 1,
            separationMax: 3,
            overlapSeconds: 30,
            rule: "geometric",
            chance: 0.8
        )
        let exposurePath = try Collections.exposures(of: "d1").document("x1")
        check(exposurePath, exposure.data.keys)
        check(exposurePath, [Exposure.Field.flaggedAt])
        let devicePath = try Collections.device("d1")
        check(devicePath, DeviceStatus.summary(exposures: [exposure], keepsStatus: false).keys)
        check(devicePath, DeviceStatus.positive.keys)
        check(devicePath, Report.flaggingFailure("x").device.keys.map(\.description))
        var report = Report(
            id: "r1",
            deviceID: "d1",
            status: .pending,
            collectedAt: t,
            imageSHA256: "ab",
            answers: ["covid": true]
        )
        report.doubts = ["blurred"]
        let reportPath = try Collections.report("r1")
        check(reportPath, report.data.keys)
        check(reportPath, Report.decision(.accepted, by: "health", note: "ok").keys.map(\.description))
        check(reportPath, Report.flaggingFailure("x").report.keys.map(\.description))
        check(try Collections.flagging("r1"), Flagging.Field.all)
        check(reportPath, Report.revocation.keys.map(\.description))
        let token = TokenRecord(id: "t1", role: .device, deviceID: "d1", anchor: "k1", name: "n", hash: "h")
        check(try Collections.token("t1"), token.data.keys)
        check(try Collections.token("t1"), TokenRecord.revocation.keys.map(\.description))
        let audit = AuditEntry(tokenID: "t1", tokenName: "n", role: .admin, method: "GET", path: "/", outcome: "ok")
        check(try Collections.audit.document("a1"), audit.data.keys)
        let sync = KioskSync.batch(
            acknowledged: 1,
            backlog: 0,
            backlogOldest: nil,
            clockOffset: 0.2,
            applied: 1,
            refused: 0,
            tokenID: "t1"
        )
        check(try Collections.kiosk("k1"), sync.keys)
        let site = try Site.parse(
            """
            site: S
            deviceUUIDs: [f7826da6-4fa2-4e98-8024-bc5b71e0893e]
            rooms:
              - {key: r, name: R, building: A, floor: 0, outline: [[0, 0], [5, 0], [5, 5], [0, 5]]}
            anchors:
              - {key: k1, kind: kiosk, room: r, position: [1, 1], uuid: 0c5e7a1b-9d3f-4b6e-8a2c-5f1d3e7b9a40, major: 1, minor: 1, measuredPower: -59}
            """,
            file: "s.yaml"
        )
        check(try Collections.beacon("k1"), Beacon(site.anchors[0], of: site).data.keys)
        check(try Collections.beacon("k1"), ["calibration"])
    }

    @Test func theTableHasEveryEntryOnce() {
        let rows = DataModel.markdown.split(separator: "\n").dropFirst(2)
        #expect(rows.count == DataModel.entries.count)
        #expect(Set(DataModel.entries.map(\.path)).count == DataModel.entries.count)
    }
}

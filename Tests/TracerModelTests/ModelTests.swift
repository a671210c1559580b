import Testing
import TracerRanging
@_spi(Blocking) import TracerStore
import TracerTesting

@testable import TracerModel

@Suite struct ModelTests {
    @Test func pathBuildersKeepIdsToOneSegment() throws {
        #expect(
            try Collections.device("f7826da6-4fa2-4e98-8024-bc5b71e0893e:1:42").description
                == "devices/f7826da6-4fa2-4e98-8024-bc5b71e0893e:1:42"
        )
        #expect(try Collections.interactions(at: "kiosk-lab").description == "beacons/kiosk-lab/interactions")
        #expect(try Collections.exposures(of: "d1").description == "devices/d1/exposures")
        // An id with a slash would name a deeper path: refused, not followed.
        for bad in ["a/b", "..", "", "__x__"] {
            #expect(throws: StoreError.self) { try Collections.device(bad) }
            #expect(throws: StoreError.self) { try Collections.interactions(at: bad) }
        }
        let path = try DocumentPath("beacons/k1/interactions/x")
        #expect(Collections.anchor(ofInteraction: path) == "k1")
        #expect(Collections.anchor(ofInteraction: try DocumentPath("devices/k1/exposures/x")) == nil)
        #expect(Collections.device(ofExposure: try DocumentPath("devices/d9/exposures/e")) == "d9")
    }

    /// RFC 4231 test case 2, and FIPS 180-2's "abc".
    @Test func digestsMatchPublishedVectors() {
        #expect(
            Digest.sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        )
        #expect(
            Digest.hmacSHA256Hex(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        )
    }

    @Test func anInteractionRoundTripsThroughTheStore() throws {
        let (store, dir) = try DocumentStore.temporary()
        defer { withExtendedLifetime(dir) {} }
        let i = Interaction(
            deviceID: "u:1:2",
            anchor: "k1",
            beacon: .init(uuid: "e2c56db5-dffb-48d2-b060-d0f5a71096e0", major: 2, minor: 7),
            proximity: .near,
            distance: 1.25,
            minDistance: 0.9,
            rssi: -63.4,
            measuredPower: -59,
            start: Timestamp(seconds: 1_795_168_800),
            end: Timestamp(seconds: 1_795_168_830),
            samples: 12
        )
        let path = try Collections.interactions(at: "k1").document("w1")
        try store.set(path, i.data)
        let doc = try store.get(path)
        #expect(try Interaction(doc) == i)
        #expect(doc["proximityCode"] == .integer(2) && doc["ts"]?.timestampValue != nil)
        // A document that is not an interaction says which field and where.
        try store.set(path, ["deviceId": "u:1:2"])
        let error = #expect(throws: ModelError.self) { try Interaction(store.get(path)) }
        #expect(error?.path == "beacons/k1/interactions/w1" && error?.field == "start")
    }

    @Test func statusesAndRiskReadSafely() throws {
        let doc = DocumentSnapshot(
            path: try Collections.device("d"),
            data: ["status": "exposed", "risk": "high", "exposureCount": 4, "colocatedMinutes": 2.5]
        )
        #expect(
            DeviceStatus(doc)
                == DeviceStatus(deviceID: "d", status: .exposed, risk: .high, exposureCount: 4, colocatedMinutes: 2.5)
        )
        #expect(DeviceStatus(DocumentSnapshot(path: try Collections.device("d"), data: nil)).status == .clear)
        #expect([0, 1, 2, 3, 9].map { DeviceStatus.Risk(reports: $0) } == [.low, .medium, .medium, .high, .high])
        let report = DocumentSnapshot(path: try Collections.report("r"), data: ["deviceId": "d", "status": "maybe"])
        let error = #expect(throws: ModelError.self) { try Report(report) }
        #expect(error?.code == .badValue && error?.field == "status")
    }

    /// The covering indexes decode by field name: the values come back as the fields they are,
    /// and an entry of another shape is no window.
    @Test func coveringIndexesDecodeTheirEntriesByName() throws {
        #expect(PresenceIndex.definition.fields.first?.path == Interaction.Field.start)
        #expect(WhereaboutsIndex.definition.fields.first?.path == Interaction.Field.deviceID)
        #expect(Indexes.all.contains(PresenceIndex.definition) && Indexes.all.contains(WhereaboutsIndex.definition))
        let (store, dir) = try DocumentStore.temporary()
        defer { withExtendedLifetime(dir) {} }
        try store.write { try Indexes.declare(in: $0) }
        let i = Interaction(
            deviceID: "u:1:2",
            anchor: "k1",
            distance: 2.5,
            start: Timestamp(seconds: 100),
            end: Timestamp(seconds: 130)
        )
        try store.set(try Collections.interactions(at: "k1").document("w"), i.data)
        let presence = try store.indexEntries(
            PresenceIndex.definition,
            in: Collections.interactions(at: "k1"),
            from: .timestamp(Timestamp(seconds: 0)),
            through: .timestamp(Timestamp(seconds: 200)),
            paths: false
        )
        #expect(presence.compactMap { PresenceIndex.decode($0, anchor: "k1") } == [Presence(i)!])
        let whereabouts = try store.groupIndexEntries(
            WhereaboutsIndex.definition,
            equal: "u:1:2",
            from: .timestamp(Timestamp(seconds: 0)),
            through: .timestamp(Timestamp(seconds: 200))
        )
        #expect(whereabouts.compactMap(WhereaboutsIndex.decode) == [Presence(i)!])
        // Another order of the same fields decodes to the same window: fields are read by name.
        let reordered: [FieldPath] = ["end", "distance", "deviceId", "start"]
        let other = IndexDefinition(collectionID: "interactions", fields: reordered.map { .init($0) })
        try store.declareIndex(other)
        let entries = try store.indexEntries(
            other,
            in: Collections.interactions(at: "k1"),
            from: .timestamp(Timestamp(seconds: 0)),
            through: .timestamp(Timestamp(seconds: 200)),
            paths: false
        )
        let layout = try #require(Presence.Layout(reordered))
        #expect(entries.compactMap { Presence($0, layout: layout, anchor: "k1") } == [Presence(i)!])
        // A field list without one of the four is no covering index.
        #expect(Presence.Layout(Array(reordered.prefix(3))) == nil)
    }

    @Test func anExposureIdDependsOnItsEpisodeOnly() throws {
        let e = Exposure(
            deviceID: "d",
            reportID: "r",
            beaconKey: "k",
            from: Timestamp(seconds: 10),
            to: Timestamp(seconds: 40),
            separationMin: 1,
            separationMax: 3,
            overlapSeconds: 30,
            rule: "sum"
        )
        var later = e
        later.to = Timestamp(seconds: 90)
        #expect(e.id == later.id && e.id.count == 20)
        var other = e
        other.from = Timestamp(seconds: 11)
        #expect(e.id != other.id)
        #expect(try e.path().description == "devices/d/exposures/\(e.id)")
        #expect(Exposure.same(e.data.merging(["flaggedAt": .integer(1)]) { a, _ in a }, e.data))
    }
}

import Foundation
import Logging
import Testing
import TracerModel
import TracerTesting

@testable import TracerDaemon
@testable import TracerSite
@_spi(Blocking) @testable import TracerStore

/// A kiosk with no fixed beacon in its room following the site server's fit of its receiver
/// (`SiteFit`, `Daemon.follow`): which fits it takes, that it ranges with the one it took, and
/// that a restart keeps it.
@Suite struct SiteFitTests {
    static let badgeUUID = DaemonReplayTests.badgeUUID
    static let t0 = DaemonReplayTests.t0

    static func daemon(_ site: Site, _ kiosk: String, replay: String, store: DocumentStore) throws -> Daemon {
        Daemon(
            site: site,
            mode: .gateway(anchor: kiosk),
            store: store,
            source: try ReplaySource(path: replay),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        )
    }

    /// A badge 2 m from a receiver that reads 6 dB low, for a minute from `from`.
    static func replay(_ file: String, from: Double) throws {
        var f = ReplayFixture()
        f.receiverBias = -6
        f.clutter = false
        f.badges = [
            .init(
                uuid: badgeUUID,
                major: 1,
                minor: 7,
                address: "D4:22:8B:33:18:6F",
                distance: 2,
                from: from,
                to: from + 60
            )
        ]
        try f.write(to: file)
    }

    static func lastDistance(_ store: DocumentStore, _ kiosk: String) async throws -> Double {
        let docs = try await store.reading { db in
            try db.getDocuments(
                Query(collection: try CollectionPath("beacons/\(kiosk)/interactions"))
                    .order(by: "start", descending: true).limit(1)
            )
        }
        return try #require(docs.first?["distance"]?.doubleValue)
    }

    /// A daemon started afresh under `site` (a restart) ranging a minute of `replay` from `from`:
    /// the distance it last ranged.
    static func restarted(
        _ site: Site,
        from: Double,
        _ name: String,
        in dir: TemporaryDirectory,
        store: DocumentStore
    ) async throws -> Double {
        try replay(dir.file(name), from: from)
        _ = try await daemon(site, "kiosk-office", replay: dir.file(name), store: store).run()
        return try await lastDistance(store, "kiosk-office")
    }

    /// The example campus, its exponent given as the site's fit would write it.
    static func fitted() throws -> Site {
        var site = try Site.load(file: DaemonReplayTests.mapPath)
        site.exposure.exponentGiven = true
        return site
    }

    @Test func aKioskWithNoBeaconRangesWithTheSitesFitAndKeepsItAfterARestart() async throws {
        let site = try Self.fitted()
        let (store, dir) = try DocumentStore.temporary()
        try Self.replay(dir.file("first.jsonl"), from: Self.t0)
        let daemon = try Self.daemon(site, "kiosk-office", replay: dir.file("first.jsonl"), store: store)
        #expect(await daemon.follow(SiteFit(offset: 6, uncertainty: 0.4, siteMoved: false, at: Self.t0)) == .follow(6))
        let stored = try #require(
            Beacon.Calibration(try await store.reading { db in try db.get("beacons/kiosk-office") })
        )
        #expect(stored.receiverOffset == 6 && stored.source == "kiosks", "\(stored)")
        _ = try await daemon.run()
        // The site's +3 dB is for worn badges; this badge has no body, so at 2 m with +6 + 3 dB
        // it reads 2 × 10^(−3/20) = 1.42 m; without the fit it would read 2.83 m.
        let first = try await Self.lastDistance(store, "kiosk-office")
        #expect(abs(first - 1.42) < 0.3, "\(first)")

        // Restarted with no server to ask: the stored fit.
        let second = try await Self.restarted(site, from: Self.t0 + 600, "second.jsonl", in: dir, store: store)
        #expect(abs(second - 1.42) < 0.3, "\(second)")
    }

    /// An operator who publishes a new `receiverOffset` for a kiosk (after `tracer site
    /// calibration --write`, or by hand) is obeyed: the calibration the kiosk stored under the
    /// old offset is set aside and removed, whether the map arrives while it runs or at a restart;
    /// one stored under the map as it is stays.
    @Test func aNewOffsetPublishedForAKioskSetsItsOwnCalibrationAside() async throws {
        let site = try Self.fitted()
        var given = site
        given.anchors[try #require(site.anchors.firstIndex { $0.key == "kiosk-office" })].receiverOffset = 3
        let (store, dir) = try DocumentStore.temporary()
        func calibration() async throws -> Beacon.Calibration? {
            Beacon.Calibration(try await store.reading { db in try db.get("beacons/kiosk-office") })
        }
        // The site's +3 dB and the kiosk's 6 dB low receiver (`replay`): with the fit's +6 the
        // badge 2 m away reads 1.42 m; with the map's +3 instead, 2 m; with none, 2.83 m.
        try Self.replay(dir.file("live.jsonl"), from: Self.t0)
        let live = try Self.daemon(site, "kiosk-office", replay: dir.file("live.jsonl"), store: store)
        #expect(await live.follow(SiteFit(offset: 6, uncertainty: 0.4, siteMoved: false, at: Self.t0)) == .follow(6))
        #expect(try await calibration()?.mapOffset == 0)
        #expect(await live.replaceSite(given))
        _ = try await live.run()
        let published = try await Self.lastDistance(store, "kiosk-office")
        #expect(abs(published - 2) < 0.3, "\(published)")
        #expect(try await calibration() == nil)

        // Followed again under the new map, and restarted under it: kept.
        let again = try Self.daemon(given, "kiosk-office", replay: dir.file("live.jsonl"), store: store)
        #expect(await again.follow(SiteFit(offset: 6, uncertainty: 0.4, siteMoved: false, at: Self.t0)) == .follow(6))
        #expect(try await calibration()?.mapOffset == 3)
        let same = try await Self.restarted(given, from: Self.t0 + 600, "kept.jsonl", in: dir, store: store)
        #expect(abs(same - 1.42) < 0.3, "\(same)")

        // Restarted under a map that no longer gives it an offset: set aside again.
        let restarted = try await Self.restarted(site, from: Self.t0 + 1200, "restart.jsonl", in: dir, store: store)
        #expect(abs(restarted - 2.83) < 0.4, "\(restarted)")
        #expect(try await calibration() == nil)
    }

    @Test func whichFitsAKioskTakes() async throws {
        let site = try Self.fitted()
        let (store, dir) = try DocumentStore.temporary()
        try Self.replay(dir.file("r.jsonl"), from: Self.t0)
        func daemon(_ site: Site, _ kiosk: String = "kiosk-office") throws -> Daemon {
            try Self.daemon(site, kiosk, replay: dir.file("r.jsonl"), store: store)
        }
        func fit(
            _ offset: Double,
            _ sd: Double = 0.4,
            shift: Double? = nil,
            siteMoved: Bool = false,
            at minutes: Double = 0
        ) -> SiteFit {
            SiteFit(
                offset: offset,
                uncertainty: sd,
                shift: shift.map { ($0, 0.3) },
                siteMoved: siteMoved,
                at: Self.t0 + minutes * 60
            )
        }
        func stored() async throws -> Beacon.Calibration? {
            Beacon.Calibration(try await store.reading { db in try db.get("beacons/kiosk-office") })
        }
        let office = try daemon(site)
        // Known to ±2 dB, or while another kiosk is named as moved: kept as the map has it (0).
        #expect(await office.follow(fit(5, 2)) == .loose)
        #expect(await office.follow(fit(5, siteMoved: true)) == .anotherMoved)
        #expect(await office.follow(fit(5)) == .follow(5))
        // Within half a decibel, or two standard errors, of what it ranges with: no change.
        #expect(await office.follow(fit(5.4)) == .unchanged)
        #expect(await office.follow(fit(5.7)) == .unchanged)
        #expect(await office.follow(fit(6.2, 1.4)) == .unchanged)
        #expect(await office.follow(fit(5.9)) == .follow(5.9))
        #expect(try await stored()?.receiverOffset == 5.9)

        // Named as moved: the shift on what it had, the largest seen (the first naming sees
        // part of the move, later ones less as the server's hours before fill with it), kept
        // across a restart and across a check that does not name it (not added twice), and let
        // go three and a half hours after it was first named.
        #expect(await office.follow(fit(2, 6, shift: 4, at: 20)) == .follow(9.9))
        #expect(await office.follow(fit(2, 6, shift: 6, at: 30)) == .follow(11.9))
        #expect(await office.follow(fit(2, 6, shift: 5, at: 40)) == .unchanged)
        let moving = try #require(try await stored())
        #expect(moving.receiverOffset == 11.9 && moving.movedFrom == 5.9 && moving.shift == 6, "\(moving)")
        #expect(moving.movedAt == Self.t0 + 20 * 60)
        #expect(try await daemon(site).follow(fit(2, 6, shift: 5, at: 50)) == .unchanged)
        #expect(try await daemon(site).follow(fit(9, 1, at: 60)) == .unchanged)
        #expect(try await daemon(site).follow(fit(2, 6, shift: 5, at: 70)) == .unchanged)
        #expect(try await stored()?.movedFrom == 5.9)
        #expect(try await daemon(site).follow(fit(12.1, at: 20 + 211)) == .unchanged)
        let settled = try #require(try await stored())
        #expect(
            settled.receiverOffset == 11.9 && settled.movedFrom == nil && settled.shift == nil
                && settled.movedAt == nil,
            "\(settled)"
        )

        // A map that gives no exponent: the fit itself is not followed, a move is.
        let drawn = try daemon(try Site.load(file: DaemonReplayTests.mapPath))
        guard case .notFollowed(let guessed) = await drawn.follow(fit(5)) else {
            Issue.record("a kiosk followed offsets fitted at a guessed exponent")
            return
        }
        #expect(guessed.contains("the map gives no pathLossExponent, so only a move is followed"))
        #expect(await drawn.follow(fit(5, 6, shift: -6)) == .follow(5.9))

        // The lab's kiosk fits itself from its fixed beacons; a map with calibration: map, none.
        guard case .notFollowed(let why) = try await daemon(site, "kiosk-lab").follow(fit(5, shift: 6)) else {
            Issue.record("the lab's kiosk followed the site's fit")
            return
        }
        #expect(why.contains("fixed beacons"))
        var fixed = site
        fixed.exposure.runningCalibration = false
        #expect(try await daemon(fixed, "kiosk-staff").follow(fit(5)) == .notFollowed("the map says calibration: map"))
    }
}

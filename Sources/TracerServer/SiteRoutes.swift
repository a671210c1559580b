import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization
import TracerAPI
import TracerCertificate
import TracerExposure
import TracerModel
import TracerOCR
import TracerReports
import TracerSite
import TracerStore
import TracerVerification

/// The site's own read routes: health, features, the beacons with live occupancy, the kiosks,
/// the published site and the public responses.
extension API {
    /// Whether the store answers (and what the server is): false with the store's error when not.
    func health() async -> (Components.Schemas.Health, up: Bool) {
        do {
            let store = self.store
            let token = try await store.reading { db in try db.currentToken() }
            return (
                Components.Schemas.Health(
                    status: .ok,
                    storeToken: token,
                    uptimeSeconds: Int(Date().timeIntervalSince(started)),
                    site: site?.name
                ),
                true
            )
        } catch {
            return (
                Components.Schemas.Health(
                    status: .unavailable,
                    site: site?.name,
                    error: .init(.storeUnavailable, message: "\(error)")
                ),
                false
            )
        }
    }

    /// What this site has on, so that kiosks and apps can adapt their interface.
    func features() -> Components.Schemas.Features {
        let policy = engine.policy
        return Components.Schemas.Features(
            selfReport: true,
            verification: "ocr",
            questionnaire: ["symptoms", "tested"],
            exposureNotifications: true,
            responses: true,
            watch: true,
            dashboard: true,
            kioskDeviceLookup: true,
            site: site?.name,
            exposure: .init(
                radiusMetres: policy.radius,
                windowMinutes: policy.window / 60,
                lookbackDays: policy.lookback / 86_400,
                separation: .init(rawValue: policy.separation.rawValue) ?? .sum
            ),
            retentionDays: Int((retention / 86_400).rounded()),
            maxUploadBytes: ImageLimits().maxBytes
        )
    }

    /// The site and its anchors with live occupancy (devices heard within `occupancyWindow`) and
    /// exposure counts (from the last 14 days).
    func beacons(in db: StoreReader) throws -> Components.Schemas.Beacons {
        let now = clock().timeIntervalSince1970
        let recent = Timestamp(seconds: now - occupancyWindow)
        let fortnight = Timestamp(seconds: now - 14 * 86_400)
        var stored: [String: DocumentSnapshot] = [:]
        for doc in try db.getDocuments(Query(collection: Collections.beacons)) { stored[doc.id] = doc }
        var keys = site?.anchors.map(\.key) ?? []
        for key in stored.keys.sorted() where !keys.contains(key) { keys.append(key) }
        // Every anchor's recent windows in one read of the group index on start (a window lasts a
        // minute or so), then kept by end and sorted to their anchors.
        var present: [String: [Interaction]] = [:]
        for doc in try db.getDocuments(
            Query.interactions
                .where(
                    Interaction.Field.start,
                    .greaterThanOrEqual,
                    .timestamp(Timestamp(seconds: now - occupancyWindow - 300))
                )
        ) {
            guard let i = try? Interaction(doc), i.end >= recent else { continue }
            present[i.anchor, default: []].append(i)
        }
        var anchors: Components.Schemas.Beacons.BeaconsPayload = []
        for key in keys {
            let present = present[key] ?? []
            let exposures = try ExposureViews.atBeacon(key, since: fortnight, in: db)
            // When it last heard anyone: its latest window (by the per-anchor index on start),
            // not only within the occupancy window.
            var lastHeard = present.map(\.end).max()
            if lastHeard == nil, let path = try? Collections.interactions(at: key) {
                let latest = try db.getDocuments(
                    Query(collection: path).order(by: Interaction.Field.start, descending: true).limit(1)
                )
                lastHeard = latest.first.flatMap { try? Interaction($0) }?.end
            }
            var entry = Components.Schemas.Beacons.BeaconsPayloadPayload(
                key: key,
                occupancy: Set(present.map(\.deviceID)).count,
                exposures: exposures.count,
                exposedDevices: Set(exposures.map { Collections.device(ofExposure: $0.path) }).count,
                lastHeard: lastHeard?.iso8601Milliseconds
            )
            if let a = site?.anchor(key) {
                entry.kind = a.kind.rawValue
                entry.room = a.room
                entry.position = [a.position.x, a.position.y]
            } else if let doc = stored[key] {
                let beacon = Beacon.Stored(doc)
                entry.room = beacon.room
                entry.name = beacon.name
            }
            anchors.append(entry)
        }
        return Components.Schemas.Beacons(
            beacons: anchors,
            occupancyWindowSeconds: occupancyWindow,
            generatedAt: Timestamp(seconds: now).iso8601Milliseconds,
            site: site.map { site in
                .init(
                    name: site.name,
                    rooms: site.rooms.map { r in
                        .init(
                            key: r.key,
                            name: r.name,
                            building: r.building,
                            floor: r.floor,
                            use: r.use.rawValue,
                            outline: r.outline.map { [$0.x, $0.y] }
                        )
                    }
                )
            }
        )
    }

    /// The exposure engine's refusals as the API's: no report 404, one not accepted 409.
    static func exposureErrors<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch let e as ExposureError {
            switch e.code {
            case .noReport: throw APIError(.notFound, .notFound, e.message)
            case .notAccepted: throw APIError(.conflict, .notAccepted, e.message)
            default: throw APIError(.unprocessableContent, .refused, e.message)
            }
        }
    }

    /// Every replicating kiosk: when it was last heard, its backlog, its clock, and whether it
    /// has gone silent.
    func kiosks(in db: StoreReader) throws -> Components.Schemas.Kiosks {
        let now = Date().timeIntervalSince1970
        var out: Components.Schemas.Kiosks.KiosksPayload = []
        for doc in try db.getDocuments(Query(collection: Collections.kiosks)) {
            guard let k = try? KioskSync(doc) else { continue }
            let silence = k.lastSeen.map { now - $0.seconds }
            out.append(
                .init(
                    anchor: k.anchor,
                    room: site?.anchor(k.anchor)?.room,
                    lastSeen: k.lastSeen?.iso8601Milliseconds,
                    secondsSinceSeen: silence,
                    silent: (silence ?? .infinity) > Self.silentAfter,
                    backlog: Int(k.backlog),
                    backlogOldest: k.backlogOldest?.iso8601Milliseconds,
                    lagSeconds: k.backlog > 0 ? k.backlogOldest.map { max(0, now - $0.seconds) } ?? 0 : 0,
                    clockOffsetSeconds: k.clockOffset,
                    clockWarning: abs(k.clockOffset ?? 0) > SyncEndpoint.offsetWarning,
                    documents: Int(k.documents),
                    refused: Int(k.refused),
                    refusedBatches: Int(k.refusedBatches),
                    lastRefusal: k.lastRefusal
                )
            )
        }
        return Components.Schemas.Kiosks(
            kiosks: out,
            silentAfterSeconds: Self.silentAfter,
            generatedAt: Timestamp(seconds: now).iso8601Milliseconds
        )
    }

    /// `config/site` as published now (not as this server started): the BeaconMap's source, its
    /// file and digest. The digest is the ETag, so a kiosk polling with `If-None-Match` gets
    /// 304 until a new map is published.
    func publishedSite(in db: StoreReader) throws -> Components.Schemas.PublishedSite {
        guard let published = try PublishedSite.Stored(db.get(PublishedSite.path)) else {
            throw APIError(.notFound, .noSite, "no site is published on this server (tracer map publish FILE)")
        }
        return Components.Schemas.PublishedSite(
            site: published.name,
            file: published.file,
            digest: published.digest,
            publishedAt: published.publishedAt?.iso8601Milliseconds,
            source: published.source,
            trustList: published.trustList
        )
    }

    /// Accepted reports of the last 14 days as the public list: each with an id that is an HMAC
    /// of the report id under this server's key and the day, so lists of different days (or
    /// servers) cannot be joined, and with the collection day only.
    func responses(in db: StoreReader) throws -> Components.Schemas.PublicResponses {
        let now = Date()
        let fortnight = Timestamp(seconds: now.timeIntervalSince1970 - 14 * 86_400)
        let today = String(Timestamp(seconds: now.timeIntervalSince1970).iso8601.prefix(10))
        var out: Components.Schemas.PublicResponses.ResponsesPayload = []
        for doc in try db.getDocuments(Query(collection: Collections.reports)) {
            guard let report = try? Report(doc), report.status == .accepted, let created = report.createdAt,
                created >= fortnight
            else { continue }
            out.append(
                .init(
                    id: Self.rotatedID(report.id, on: today, key: rotationKey),
                    reportedOn: String(created.iso8601.prefix(10)),
                    collectedOn: report.collectedAt.map { String($0.iso8601.prefix(10)) },
                    answers: report.answers.isEmpty ? nil : .init(additionalProperties: report.answers)
                )
            )
        }
        // Sorted by the rotated id: the order says nothing of when each came in.
        out.sort { $0.id < $1.id }
        return Components.Schemas.PublicResponses(days: 14, rotatedOn: today, responses: out)
    }

    /// A report's id in the public list of one day: 24 hex digits of an HMAC-SHA256 of the day
    /// and the id under this server's key, so that lists of different days cannot be joined.
    static func rotatedID(_ reportID: String, on day: String, key: [UInt8]) -> String {
        String(Digest.hmacSHA256Hex(key: key, message: Array("\(day)\n\(reportID)".utf8)).prefix(24))
    }
}

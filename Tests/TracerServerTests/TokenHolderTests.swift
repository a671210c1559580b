import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing
import TracerAPI
import TracerExposure
import TracerModel
@_spi(Blocking) import TracerStore
import TracerTesting

@testable import TracerServer

/// What a token holder sends cannot stop the site, and reads no more than its role needs: each
/// test is one finding of an attack on the server with every role's token.
@Suite struct TokenHolderTests {
    /// P-256's generator point, uncompressed: a valid public key for a subscription's p256dh.
    static let p256dh = WebPush.base64url(
        hex(
            "046B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296"
                + "4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5"
        )
    )

    static func hex(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = s.startIndex
        while i < s.endIndex {
            let j = s.index(i, offsetBy: 2)
            out.append(UInt8(s[i..<j], radix: 16)!)
            i = j
        }
        return out
    }

    static func subscription(_ endpoint: String) -> String {
        #"{"endpoint": "\#(endpoint)", "keys": {"p256dh": "\#(p256dh)", "auth": "AAAAAAAAAAAAAAAAAAAAAA"}}"#
    }

    /// Ports that trapped the sender, userinfo, control characters, another port on a listed
    /// host: refused where a subscription is stored, and again where it is used.
    @Test func pushEndpointsAreCheckedWhereStoredAndWhereUsed() throws {
        let services: Set<String> = ["fcm.googleapis.com", "127.0.0.1"]
        for endpoint in [
            "https://fcm.googleapis.com/fcm/send/abc", "https://FCM.googleapis.com/x",
            "https://fcm.googleapis.com:443/x", "http://127.0.0.1:8123/push/a",
        ] {
            #expect(throws: Never.self, "\(endpoint)") { try PushEndpoint.check(endpoint, services: services) }
        }
        for endpoint in [
            "http://127.0.0.1:0/x", "http://127.0.0.1:65536/x", "http://127.0.0.1:99999999999/x",
            "http://127.0.0.1:-1/x", "http://127.0.0.1:/x", "https://fcm.googleapis.com:22/x",
            "https://user:pw@fcm.googleapis.com/x", "https://fcm.googleapis.com@127.0.0.1/x",
            "https://fcm.googleapis.com/x\r\nHost: evil", "https://fcm.googleapis.com/x\u{0}",
            "http://fcm.googleapis.com/x", "https://evil.example/x", "https://fcm.googleapis.com.evil.example/x",
            "ftp://fcm.googleapis.com/x", "https://fcm.googleapis.com\\@evil/x", "https:///x", "",
            "https://" + String(repeating: "a", count: 3000),
        ] {
            #expect(throws: PushError.self, "\(endpoint.debugDescription)") {
                try PushEndpoint.check(endpoint, services: services)
            }
        }
    }

    /// `POST /v1/sync`: interactions whose device id breaks the API's own rule for ids (or whose
    /// times or distance are not a window's), and a kiosk's calibration no map could give, are
    /// refused, per document, for a kiosk and an admin alike; an interaction already past the
    /// site's retention is acknowledged and not stored.
    @Test func syncTakesOnlyInteractionsTheSiteCanUse() async throws {
        let f = try await ServerFixture()
        let lab = try await f.store.writing { db in
            try TokenStore.create(role: .kiosk, deviceID: nil, anchor: "kiosk-lab", name: nil, in: db)
        }
        let now = Date().timeIntervalSince1970
        func window(_ device: String, ago: Double = 60, distance: String = "1.5") -> [UInt8] {
            let start = Timestamp(seconds: now - ago).iso8601Milliseconds
            let end = Timestamp(seconds: now - ago + 30).iso8601Milliseconds
            return Array(
                #"{"deviceId":\#(device),"start":{"__time__":"\#(start)"},"end":{"__time__":"\#(end)"},"distance":\#(distance)}"#
                    .utf8
            )
        }
        let hostile = [#"{"x":1}"#, #""""#, #"".""#, #""..""#, #""a/b""#, #""a\u0001b""#, #""=cmd|' /C calc'!A0""#]
        var entries: [Outbox.Entry] = [
            .init(path: try DocumentPath("beacons/kiosk-lab/interactions/good"), json: window(#""badge:K7QX2M4P""#)),
            .init(path: try DocumentPath("beacons/kiosk-lab/interactions/nan"), json: window(#""d1""#, distance: "-1")),
            .init(
                path: try DocumentPath("beacons/kiosk-lab/interactions/old"),
                json: window(#""d2""#, ago: 15 * 86_400)
            ),
            // A calibration no map could give: flagging would place people with it.
            .init(
                path: try DocumentPath("beacons/kiosk-lab"),
                json: Array(#"{"kind":"kiosk","calibration":{"receiverOffset":1e300,"windows":1,"references":0}}"#.utf8)
            ),
        ]
        for (i, device) in hostile.enumerated() {
            entries.append(.init(path: try DocumentPath("beacons/kiosk-lab/interactions/h\(i)"), json: window(device)))
        }
        let sent = entries
        try await f.app().test(.router) { client in
            for (through, token) in [(5, lab.token), (6, f.admin)] {
                let body = SyncBatch.body(
                    kiosk: "kiosk-lab",
                    through: Int64(through),
                    sentAt: now,
                    clock: nil,
                    backlog: 0,
                    backlogOldest: nil,
                    documents: SyncBatch.documents(sent)
                )
                try await client.execute(
                    uri: "/v1/sync",
                    method: .post,
                    headers: ServerFixture.bearer(token),
                    body: ByteBuffer(bytes: body)
                ) { r in
                    #expect(r.status == .ok, "\(String(buffer: r.body))")
                    let answer = try SyncAnswer(json: Array(r.body.readableBytesView))
                    #expect(answer.applied + answer.unchanged == 1, "\(answer)")
                    #expect(answer.refused.count == hostile.count + 3, "\(answer.refused)")
                    #expect(answer.refused.contains { $0.reason.contains("retention") })
                    #expect(
                        answer.refused.contains {
                            $0.path == "beacons/kiosk-lab" && $0.reason.contains("receiverOffset from -40 to 40 dB")
                        }
                    )
                }
            }
        }
        let stored = try await f.store.reading { db in
            try db.getDocuments(Query(collection: CollectionPath("beacons/kiosk-lab/interactions")))
        }
        #expect(stored.map(\.id) == ["good"])
        #expect(try await f.store.reading { db in try db.get(DocumentPath("beacons/kiosk-lab"))["calibration"] } == nil)
    }

    /// A stolen kiosk token reads a kiosk's days of badge ids (yesterday to 3 days ahead), never a
    /// fortnight back, and nobody's status.
    @Test func aKioskTokenReadsWhatAKioskNeedsAndNoStatus() async throws {
        let f = try await ServerFixture()
        let day = { @Sendable (offset: Int) in
            String(Timestamp(seconds: Date().timeIntervalSince1970 + Double(offset) * 86_400).iso8601.prefix(10))
        }
        try await f.app().test(.router) { client in
            try await client.execute(uri: "/v1/devices/dev-1", method: .get, headers: ServerFixture.bearer(f.kiosk)) {
                #expect($0.status == .forbidden)
            }
            for (offset, status) in [
                (-14, HTTPResponse.Status.forbidden), (-5, .forbidden), (-2, .forbidden), (4, .notFound),
            ] {
                try await client.execute(
                    uri: "/v1/badges/ids?day=\(day(offset))",
                    method: .get,
                    headers: ServerFixture.bearer(f.kiosk)
                ) { r in
                    #expect(r.status == status, "\(offset): \(String(buffer: r.body))")
                }
            }
            // Within a kiosk's days, or an admin's fortnight: past the range check (no badge is
            // issued at this site, hence 404).
            for (offset, token) in [(-1, f.kiosk), (0, f.kiosk), (3, f.kiosk), (-14, f.admin)] {
                try await client.execute(
                    uri: "/v1/badges/ids?day=\(day(offset))",
                    method: .get,
                    headers: ServerFixture.bearer(token)
                ) { r in
                    #expect(
                        r.status == .notFound && errorCode(r) == "no_badges",
                        "\(offset): \(String(buffer: r.body))"
                    )
                }
            }
        }
    }

    /// The badges' master key, the VAPID key, the tickets' key, token hashes and push
    /// subscriptions never leave the server over the watch, an admin's included.
    @Test func secretsNeverLeaveOverTheWatch() async throws {
        let f = try await ServerFixture()
        try await f.app().test(.router) { client in
            for path in [
                "config/badgeKeys", "config/push", "config/watchKey", "config", "*/config", "tokens", "*/tokens",
                "tokens/abcdefghijkl", "devices/dev-1/push", "*/push", "devices/dev-1/push/x",
            ] {
                for route in ["/v1/watch?path=\(path)", "/v1/watch/ticket?path=\(path)"] {
                    try await client.execute(
                        uri: route,
                        method: route.contains("ticket") ? .post : .get,
                        headers: ServerFixture.bearer(f.admin)
                    ) { r in
                        #expect(r.status == .forbidden, "\(route): \(r.status) \(String(buffer: r.body))")
                    }
                }
            }
        }
    }

    /// The published map is no secret: `config/site` may still be watched, with a ticket too.
    @Test func thePublishedMapMayBeWatched() async throws {
        let f = try await ServerFixture()
        try await f.app().test(.router) { client in
            try await client.execute(
                uri: "/v1/watch/ticket?path=config/site",
                method: .post,
                headers: ServerFixture.bearer(f.admin)
            ) { r in
                #expect(r.status == .created, "\(String(buffer: r.body))")
            }
        }
    }

    /// Forgetting a phone (`DELETE /v1/tokens/self`) or revoking its token ends the push
    /// subscriptions that token made; another token's stay.
    @Test func revocationEndsTheTokensPushSubscriptions() async throws {
        let f = try await ServerFixture()
        let tokens = Tokens(store: f.store)
        let second = try tokens.create(role: .device, deviceID: "dev-1", name: "second phone")
        let third = try tokens.create(role: .device, deviceID: "dev-1", name: "third phone")
        let push = try Collections.pushSubscriptions(of: "dev-1")
        try await f.app().test(.router) { client in
            for (token, name) in [(f.device, "a"), (second.token, "b"), (third.token, "c")] {
                try await client.execute(
                    uri: "/v1/devices/dev-1/push",
                    method: .post,
                    headers: ServerFixture.bearer(token),
                    body: ByteBuffer(string: Self.subscription("https://fcm.googleapis.com/fcm/send/\(name)"))
                ) { r in #expect(r.status == .created, "\(String(buffer: r.body))") }
            }
            #expect(try await f.store.reading { db in try db.getDocuments(Query(collection: push)) }.count == 3)
            try await client.execute(uri: "/v1/tokens/self", method: .delete, headers: ServerFixture.bearer(f.device)) {
                #expect($0.status == .ok)
            }
        }
        #expect(try tokens.revoke(second.id))
        let left = try await f.store.reading { db in try db.getDocuments(Query(collection: push)) }.compactMap {
            $0["endpoint"]?.stringValue
        }
        #expect(left == ["https://fcm.googleapis.com/fcm/send/c"])
    }

    /// The site server forgets on time: interactions, exposures (the devices' status with them)
    /// and push subscriptions nobody renewed, past the retention; the rest kept.
    @Test func theSiteForgetsWhatIsPastItsRetention() async throws {
        let f = try await ServerFixture()
        let now = Date().timeIntervalSince1970
        try f.interaction("old", at: "kiosk-lab", device: "dev-1", ago: 15 * 86_400)
        try f.interaction("new", at: "kiosk-lab", device: "dev-1", ago: 13 * 86_400)
        try f.exposure("dev-2", at: "kiosk-lab", report: "r-old", daysAgo: 15)
        try f.exposure("dev-3", at: "kiosk-lab", report: "r-old", daysAgo: 15)
        try f.exposure("dev-3", at: "kiosk-lab", report: "r-new", daysAgo: 2)
        for device in ["dev-2", "dev-3"] {
            try await f.store.writing { db in
                try db.set(DocumentPath("devices/\(device)"), ["status": "exposed", "exposureCount": .integer(1)])
            }
        }
        let push = try Collections.pushSubscriptions(of: "dev-1")
        for (id, days) in [("stale", 15.0), ("renewed", 1.0)] {
            try await f.store.writing { db in
                try db.set(
                    push.document(id),
                    [
                        "endpoint": .string("https://fcm.googleapis.com/x/\(id)"),
                        "createdAt": .timestamp(Timestamp(seconds: now - days * 86_400)),
                    ]
                )
            }
        }
        let purge = SitePurge(
            store: f.store,
            engine: f.api.engine,
            retention: 14 * 86_400,
            logger: .init(label: "test")
        )
        let purged = try await purge.purgeOnce()
        #expect(purged == .init(interactions: 1, exposures: 2, subscriptions: 1), "\(purged)")
        #expect(try await f.store.reading { db in try db.getDocuments(Query.interactions) }.map(\.id) == ["new"])
        #expect(
            try await f.store.reading { db in try db.getDocuments(Query.exposures) }.map(\.path.description) == [
                "devices/dev-3/exposures/r-new-kiosk-lab"
            ]
        )
        #expect(try await f.store.reading { db in try db.get(DocumentPath("devices/dev-2")) }["status"] == "clear")
        #expect(try await f.store.reading { db in try db.get(DocumentPath("devices/dev-3")) }["status"] == "exposed")
        #expect(
            try await f.store.reading { db in try db.getDocuments(Query(collection: push)) }.map(\.id) == ["renewed"]
        )
        #expect(try await purge.purgeOnce().total == 0)
    }

    /// Purged at the first round after its expiry, whichever round that is: on a clock the test
    /// moves (`tracer serve` runs a round every 30 s, so an interaction outlives its expiry by
    /// 30 s at most, plus one round's time).
    @Test func anExpiredInteractionIsGoneAtTheFirstRoundAfterItsExpiry() async throws {
        let f = try await ServerFixture()
        let retention = 3600.0
        let start = Date()
        try f.interaction("soon", at: "kiosk-lab", device: "dev-1", ago: retention - 60)
        // The interaction began retention - 30 s ago (`ago` is its end, 30 s after its start):
        // it expires 30 s after `start`.
        let clock = Mutex(start)
        let purge = SitePurge(
            store: f.store,
            engine: f.api.engine,
            retention: retention,
            clock: { clock.withLock { $0 } },
            logger: .init(label: "test")
        )
        let interactions = { (try? f.store.read { db in try db.getDocuments(Query.interactions) }.count) ?? -1 }
        // A round a second before the expiry keeps it.
        clock.withLock { $0 = start.addingTimeInterval(29) }
        #expect(try await purge.purgeOnce().interactions == 0)
        #expect(interactions() == 1, "purged before it expired")
        // A round a second after it deletes it.
        clock.withLock { $0 = start.addingTimeInterval(31) }
        #expect(try await purge.purgeOnce().interactions == 1)
        #expect(interactions() == 0, "not purged after its expiry")
    }

    /// A method a route does not take is 405 with `Allow` (HTTP's answer), not 404; a path no
    /// route has is still 404.
    @Test func aMethodARouteDoesNotTakeIs405WithAllow() async throws {
        let f = try await ServerFixture()
        try await f.app().test(.router) { client in
            for (uri, method, allow) in [
                ("/v1/beacons", HTTPRequest.Method.delete, "GET"), ("/v1/devices/dev-1/push", .put, "DELETE, POST"),
                ("/health", .post, "GET"), ("/v1/watch", .patch, "GET"),
            ] {
                try await client.execute(uri: uri, method: method, headers: ServerFixture.bearer(f.admin)) { r in
                    #expect(r.status == .methodNotAllowed, "\(method) \(uri): \(r.status)")
                    #expect(r.headers[.allow] == allow, "\(method) \(uri)")
                    #expect(errorCode(r) == "method_not_allowed")
                }
            }
            try await client.execute(uri: "/v1/nothing", method: .get, headers: ServerFixture.bearer(f.admin)) {
                #expect($0.status == .notFound)
            }
        }
    }
}

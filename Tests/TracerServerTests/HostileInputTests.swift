import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import TracerAPI
import TracerModel
import TracerReplication
@_spi(Blocking) import TracerStore
import TracerTesting

@testable import TracerServer

/// What a token holder might send to hurt the server: each answered 4xx with a JSON error,
/// never a crash, a 500 or a roll-back. Each case here crashed the server or was answered wrongly
/// before the values crossing the boundary were range-checked where they are decoded.
@Suite struct HostileInputTests {
    static func sync(
        _ kiosk: String = "kiosk-lab",
        through: Int64,
        oldest: String = "null",
        documents: String
    ) -> ByteBuffer {
        ByteBuffer(
            string:
                #"{"kiosk": "\#(kiosk)", "through": \#(through), "sentAt": 1795341600, "backlog": {"changes": 0, "oldest": \#(oldest)}, "documents": \#(documents)}"#
        )
    }

    /// A batch whose document path holds invalid UTF-8 (C3 28).
    static var invalidUTF8: ByteBuffer {
        var bytes = Array(
            #"{"kiosk": "kiosk-lab", "through": 1, "sentAt": 1795341600, "documents": [{"path": "beacons/kiosk-lab/interactions/a"#
                .utf8
        )
        bytes += [0xC3, 0x28] + Array(#"", "data": {}}]}"#.utf8)
        return ByteBuffer(bytes: bytes)
    }

    @Test func timesOutOfRangeAreA400ForEveryRole() async throws {
        let f = try await ServerFixture()
        let lab = try await f.store.writing { db in
            try TokenStore.create(role: .kiosk, deviceID: nil, anchor: "kiosk-lab", name: nil, in: db)
        }
        let device = ServerFixture.bearer(f.device)
        let admin = ServerFixture.bearer(f.admin)
        let gets: [(String, HTTPFields)] = [
            ("/v1/watch?path=devices/dev-1/exposures&since=9999999999999", device),
            ("/v1/watch?path=devices/dev-1/exposures&since=1e300", device),
            ("/v1/beacons/kiosk-lab/exposures?since=9999999999999", admin),
            ("/v1/beacons/kiosk-lab/exposures?since=-9999999999999", admin),
            ("/v1/beacons/kiosk-lab/exposures?since=2026-02-30", admin),
            ("/v1/beacons/kiosk-lab/exposures?since=2025-02-29T10:00:00Z", admin),
            ("/v1/beacons/kiosk-lab/exposures?since=0000-01-01", admin),
        ]
        let kiosk = ServerFixture.bearer(lab.token)
        let doc = "beacons/kiosk-lab/interactions/x"
        let posts: [(String, HTTPFields, ByteBuffer)] = [
            (
                "/v1/sync", kiosk,
                Self.sync(through: 1, documents: #"[{"path": "\#(doc)", "data": {"t": {"__time__": 1e300}}}]"#)
            ),
            (
                "/v1/sync", kiosk,
                Self.sync(
                    through: 1,
                    documents: #"[{"path": "\#(doc)", "data": {"t": {"__time__": "99999-01-01T00:00:00Z"}}}]"#
                )
            ),
            ("/v1/sync", kiosk, Self.sync(through: 1, oldest: "1e300", documents: "[]")),
            (
                "/v1/sync", kiosk,
                Self.sync(through: 1, documents: #"[{"path": "beacons/kiosk-lab/interactions/a\u0000b", "data": {}}]"#)
            ),
            ("/v1/reports/r1/approve", admin, ByteBuffer(string: #"{"note": {"__time__": -1e300}}"#)),
            ("/v1/reports/r1/deny", admin, ByteBuffer(string: #"{"note": {"__time__": 1e300}}"#)),
        ]
        await ResultImages.ready()
        let (h, b) = try f.upload(
            "lab-pcr-positive.png",
            device: "dev-1",
            [("answers", nil, Array(#"{"symptoms": {"__time__": 1e300}}"#.utf8))]
        )
        try await f.app().test(.router) { client in
            for (uri, headers) in gets {
                try await client.execute(uri: uri, method: .get, headers: headers) { r in
                    #expect(r.status == .badRequest, "\(uri): \(r.status) \(String(buffer: r.body))")
                    #expect(errorCode(r) == "bad_request", "\(uri)")
                }
            }
            for (uri, headers, body) in posts {
                try await client.execute(uri: uri, method: .post, headers: headers, body: body) { r in
                    #expect(r.status == .badRequest, "\(uri): \(r.status) \(String(buffer: r.body))")
                }
            }
            try await client.execute(uri: "/v1/reports", method: .post, headers: h, body: b) { r in
                #expect(r.status == .badRequest, "answers: \(r.status) \(String(buffer: r.body))")
            }
            // Invalid UTF-8 in an id: refused, not turned into U+FFFD.
            try await client.execute(uri: "/v1/sync", method: .post, headers: kiosk, body: Self.invalidUTF8) { r in
                #expect(r.status == .badRequest, "invalid UTF-8: \(r.status) \(String(buffer: r.body))")
            }
        }
        #expect(try await f.store.reading { db in try db.getDocuments(Query(collection: Collections.reports)) }.isEmpty)
        #expect(try await !f.store.reading { db in try db.get(DocumentPath(doc)) }.exists)
    }

    /// Every body over its route's limit is a 413 with the JSON error, whichever way it came.
    @Test func bodiesOverTheirLimitAre413() async throws {
        let f = try await ServerFixture()
        let admin = ServerFixture.bearer(f.admin)
        let lab = try await f.store.writing { db in
            try TokenStore.create(role: .kiosk, deviceID: nil, anchor: "kiosk-lab", name: nil, in: db)
        }
        let bigSync = ByteBuffer(repeating: UInt8(ascii: " "), count: SyncEndpoint.maxBody + 1)
        let bigNote = ByteBuffer(string: #"{"note": ""# + String(repeating: "x", count: 17 * 1024) + #""}"#)
        try await f.app().test(.router) { client in
            for (uri, headers, body) in [
                ("/v1/sync", ServerFixture.bearer(lab.token), bigSync), ("/v1/reports/r1/deny", admin, bigNote),
            ] {
                try await client.execute(uri: uri, method: .post, headers: headers, body: body) { r in
                    #expect(r.status == .contentTooLarge, "\(uri): \(r.status) \(String(buffer: r.body))")
                    #expect(errorCode(r) == "too_large", "\(uri)")
                }
            }
        }
    }

    /// 200,000 empty parts are refused before MultipartKit parses them: only the count made
    /// before parsing answers "more than 16 parts" (no wall-clock bound: a loaded machine took
    /// 80 s to pass the 11 MB through the test client).
    @Test func aFormOfManyPartsIsRefusedBeforeParsing() async throws {
        let f = try await ServerFixture()
        let body =
            String(repeating: "--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n\r\n", count: 200_000)
            + "--b--\r\n"
        var headers = ServerFixture.bearer(f.kiosk)
        headers[.contentType] = "multipart/form-data; boundary=b"
        let h = headers
        try await f.app().test(.router) { client in
            try await client.execute(uri: "/v1/reports", method: .post, headers: h, body: ByteBuffer(string: body)) {
                r in
                #expect(r.status == .contentTooLarge, "\(r.status) \(String(buffer: r.body))")
                #expect(String(buffer: r.body).contains("more than \(Form.maxParts) parts"))
            }
        }
    }

    /// A part header whose name holds a byte of 0x80 or more: MultipartKit indexes a table of 128
    /// with it and traps (FuzzTests found it); refused before it parses.
    @Test func aHeaderNameOutsideASCIIIsA400NotACrash() async throws {
        let f = try await ServerFixture()
        var bytes = Array("--b\r\nContent-Disposition: form-data; name=\"deviceId\"\r\nX-".utf8)
        bytes += [0xC3, 0xA9] + Array(": v\r\n\r\ndev-1\r\n--b--\r\n".utf8)
        var headers = ServerFixture.bearer(f.kiosk)
        headers[.contentType] = "multipart/form-data; boundary=b"
        let h = headers
        let body = ByteBuffer(bytes: bytes)
        try await f.app().test(.router) { client in
            try await client.execute(uri: "/v1/reports", method: .post, headers: h, body: body) { r in
                #expect(r.status == .badRequest, "\(r.status) \(String(buffer: r.body))")
                #expect(String(buffer: r.body).contains("header name is not ASCII"))
            }
        }
        // A file name in UTF-8 (as phones send it) is a header value: taken.
        let named = try Form(
            ByteBuffer(
                bytes: Array("--b\r\nContent-Disposition: form-data; name=\"image\"; filename=\"r".utf8) + [0xC3, 0xA9]
                    + Array(".png\"\r\n\r\nPNG\r\n--b--\r\n".utf8)
            ),
            boundary: "b"
        )
        #expect(named["image"].flatMap(Form.filename) == "ré.png")
    }

    /// A batch at or below what the server acknowledged for the kiosk changes nothing: not a
    /// stale one arriving late, not a replay of an old one, and the kiosk's token never goes back.
    @Test func staleAndReplayedBatchesChangeNothing() async throws {
        let f = try await ServerFixture()
        let lab = try await f.store.writing { db in
            try TokenStore.create(role: .kiosk, deviceID: nil, anchor: "kiosk-lab", name: nil, in: db)
        }
        let path = "beacons/kiosk-lab/interactions/w"
        let start = Timestamp(seconds: Date().timeIntervalSince1970 - 60).iso8601Milliseconds
        let times = #""start": {"__time__": "\#(start)"}, "end": {"__time__": "\#(start)"}"#
        @Sendable func batch(_ through: Int64, _ distance: Double) -> ByteBuffer {
            Self.sync(
                through: through,
                documents: #"[{"path": "\#(path)", "data": {"deviceId": "d", "distance": \#(distance), \#(times)}}]"#
            )
        }
        let kiosk = ServerFixture.bearer(lab.token)
        try await f.app().test(.router) { client in
            for (through, distance, acknowledged) in [
                (Int64(10), 1.5, Int64(10)), (20, 2.0, 20), (15, 1.0, 20), (10, 1.5, 20), (20, 9.0, 20),
            ] {
                try await client.execute(uri: "/v1/sync", method: .post, headers: kiosk, body: batch(through, distance))
                { r in
                    #expect(r.status == .ok)
                    let answer = try SyncAnswer(json: Array(r.body.readableBytesView))
                    #expect(answer.acknowledged == acknowledged, "batch through \(through)")
                }
                #expect(
                    try await f.store.reading { db in try db.get(DocumentPath("kiosks/kiosk-lab")) }["acknowledged"]
                        == .integer(max(through, acknowledged))
                )
            }
        }
        #expect(try await f.store.reading { db in try db.get(DocumentPath(path)) }["distance"] == .double(2.0))
    }
}

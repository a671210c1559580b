import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import TracerAPI
import TracerColocation
import TracerExposure
import TracerModel
import TracerReplication
import TracerSite
@_spi(Blocking) import TracerStore
import TracerTesting

@testable import TracerServer

/// Replication under every ordering a network and a crashing server can make: kiosks change
/// their documents and send batches from their checkpoints; the network delivers the requests
/// late, twice or never, and loses answers after the commit; the server is killed (its store
/// closed and opened again) between steps. Throughout, no checkpoint moves back, on the kiosk
/// or on the server; at the end, once everything is delivered, the site store holds exactly each
/// kiosk's latest documents.
@Suite struct ReplicationPropertyTests {
    final class Kiosk: @unchecked Sendable {
        let anchor: String
        let store: DocumentStore
        let token: String
        var checkpoint: Int64 = 0
        var next = 0

        init(_ anchor: String, in dir: TemporaryDirectory, token: String) throws {
            self.anchor = anchor
            self.token = token
            store = try DocumentStore(path: dir.file("\(anchor).sqlite"))
        }

        /// An hour ago: within the site's retention.
        static let recent = Timestamp(seconds: Date().timeIntervalSince1970 - 3600)

        /// A random change: a new window, a changed one, or one deleted.
        func change(_ g: inout SplitMix64) throws {
            let existing = try store.getDocuments(Query(collection: CollectionPath("beacons/\(anchor)/interactions")))
            if let doc = existing.randomElement(using: &g), Int.random(in: 0..<4, using: &g) == 0 {
                try store.delete(doc.path)
                return
            }
            let id = existing.isEmpty || Bool.random(using: &g) ? "w\(next)" : existing.randomElement(using: &g)!.id
            next += 1
            try store.set(
                DocumentPath("beacons/\(anchor)/interactions/\(id)"),
                [
                    "deviceId": .string("d\(Int.random(in: 0..<5, using: &g))"), "distance": .double(Double(next) / 4),
                    // A window the site takes (`/v1/sync` refuses one without times in order).
                    "start": .timestamp(Self.recent), "end": .timestamp(Self.recent),
                ]
            )
        }

        /// A batch from the checkpoint, at most `limit` changes.
        func batch(limit: Int) throws -> (through: Int64, body: ByteBuffer) {
            let outbox = try store.outbox(after: checkpoint, limit: limit)
            let body = SyncBatch.body(
                kiosk: anchor,
                through: outbox.through,
                sentAt: Date().timeIntervalSince1970,
                clock: nil,
                backlog: outbox.remaining,
                backlogOldest: nil,
                documents: SyncBatch.documents(outbox.entries)
            )
            return (outbox.through, ByteBuffer(bytes: body))
        }

        var documents: [String: String] {
            get throws {
                let docs = try store.getDocuments(Query(collection: CollectionPath("beacons/\(anchor)/interactions")))
                return Dictionary(uniqueKeysWithValues: docs.map { ($0.path.description, JSON.string($0.data ?? [:])) })
            }
        }
    }

    struct Request: Sendable {
        var kiosk: Int
        var through: Int64
        var body: ByteBuffer
    }

    /// The kiosks, the network between them and the server, and what has been seen so far.
    /// Driven from one task at a time (the router's test closures), never concurrently.
    final class World: @unchecked Sendable {
        var g: SplitMix64
        var kiosks: [Kiosk] = []
        var network: [Request] = []
        var serverAcknowledged: [String: Int64] = [:]
        var delivered = 0
        let serverPath: String

        init(seed: UInt64, dir: TemporaryDirectory) throws {
            g = SplitMix64(seed: seed &* 0x9E37_79B9)
            serverPath = dir.file("site.sqlite")
            let tokens = Tokens(store: try DocumentStore(path: serverPath))
            for anchor in ["kiosk-lab", "kiosk-cafe", "kiosk-library"] {
                let t = try tokens.create(role: .kiosk, deviceID: nil, anchor: anchor, name: nil)
                kiosks.append(try Kiosk(anchor, in: dir, token: t.token))
            }
        }

        func random(_ n: Int) -> Int { Int.random(in: 0..<n, using: &g) }

        /// The server: its store opened afresh (a restart) and the API over it.
        func server() async throws -> (DocumentStore, API) {
            let store = try DocumentStore(path: serverPath)
            let site = try Site.load(file: ServerFixture.map)
            return (
                store,
                try await API(store: store, site: site, engine: ExposureEngine(policy: ExposurePolicy(site: site)))
            )
        }

        /// Delivers one request; the kiosk hears the answer unless it is lost.
        func deliver(_ r: Request, _ client: some TestClientProtocol, store: DocumentStore, heard: Bool) async throws {
            let k = kiosks[r.kiosk]
            let newest = try await k.store.reading { db in try db.currentToken() }
            try await client.execute(
                uri: "/v1/sync",
                method: .post,
                headers: [.authorization: "Bearer \(k.token)"],
                body: r.body
            ) { response in
                #expect(response.status == .ok, "\(String(buffer: response.body))")
                let answer = try SyncAnswer(json: Array(response.body.readableBytesView))
                // The kiosk waits for the answer to its newest batch only; an older one's is gone.
                // As the replicator does, it goes on from the server's token when the server has
                // more of its changes than the batch (an earlier answer was lost).
                if heard, r.through >= k.checkpoint, answer.acknowledged >= r.through, answer.acknowledged <= newest {
                    #expect(answer.acknowledged >= k.checkpoint, "a kiosk's checkpoint moved back")
                    k.checkpoint = answer.acknowledged
                }
            }
            delivered += 1
            let acknowledged = try await store.reading { db in try db.get(DocumentPath("kiosks/\(k.anchor)")) }[
                "acknowledged"
            ]?.doubleValue
            let now = Int64(acknowledged ?? 0)
            #expect(now >= serverAcknowledged[k.anchor, default: 0], "the server's checkpoint moved back")
            serverAcknowledged[k.anchor] = now
        }

        /// One random step: a change at a kiosk, a batch sent (sometimes twice), or a request
        /// delivered (its answer heard two times in three).
        func step(_ client: some TestClientProtocol, store: DocumentStore) async throws {
            let k = random(kiosks.count)
            switch random(10) {
            case 0..<4:
                try kiosks[k].change(&g)
            case 4..<7:
                let (through, body) = try kiosks[k].batch(limit: 1 + random(4))
                network.append(Request(kiosk: k, through: through, body: body))
                // Sometimes sent twice (a retry after a timeout whose first went through).
                if random(4) == 0 { network.append(network.last!) }
            default:
                guard !network.isEmpty else { return }
                let r = network.remove(at: random(network.count))
                try await deliver(r, client, store: store, heard: random(3) > 0)
            }
        }

        /// The network heals: what is in flight arrives, then each kiosk sends until the
        /// server has everything.
        func drain(_ client: some TestClientProtocol, store: DocumentStore) async throws {
            while !network.isEmpty {
                try await deliver(network.remove(at: random(network.count)), client, store: store, heard: false)
            }
            for (i, k) in kiosks.enumerated() {
                for _ in 0..<1000 {
                    let (through, body) = try k.batch(limit: 3)
                    if through == k.checkpoint { break }
                    try await deliver(
                        Request(kiosk: i, through: through, body: body),
                        client,
                        store: store,
                        heard: true
                    )
                }
            }
        }
    }

    @Test(arguments: 1...8 as ClosedRange<UInt64>)
    func theSiteHoldsEachKiosksLatestDocumentsWhateverTheOrder(seed: UInt64) async throws {
        let dir = TemporaryDirectory("tracer-replication-property")
        let world = try World(seed: seed, dir: dir)
        // Epochs of a server's life: each ends with the server killed (its store closed and
        // opened again), the network keeping what it holds.
        for epoch in 0..<4 {
            let (store, api) = try await world.server()
            try await Application(router: try api.router()).test(.router) { client in
                for _ in 0..<(epoch == 3 ? 40 : 60) { try await world.step(client, store: store) }
            }
        }
        let (store, api) = try await world.server()
        try await Application(router: try api.router()).test(.router) { client in
            try await world.drain(client, store: store)
        }
        for k in world.kiosks {
            let docs = try await store.reading { db in
                try db.getDocuments(Query(collection: CollectionPath("beacons/\(k.anchor)/interactions")))
            }
            let site = Dictionary(uniqueKeysWithValues: docs.map { ($0.path.description, JSON.string($0.data ?? [:])) })
            #expect(site == (try k.documents), "seed \(seed), \(k.anchor): the site differs from the kiosk")
            #expect(world.serverAcknowledged[k.anchor] == k.checkpoint)
        }
        #expect(world.delivered > 20)
    }
}

import Testing
import TracerBadges
@_spi(Blocking) import TracerStore
import TracerTesting

@testable import TracerModel

/// The site's badges in the store: keys derived as the design says, versions that move with
/// every change, and a leaked site key gone once its last badge is reprovisioned or revoked.
@Suite struct BadgeRegistryTests {
    func siteKeys(_ store: DocumentStore) throws -> [Int: [UInt8]] {
        BadgeRegistry.Keys(try store.get(BadgeRegistry.keysPath)).keys
    }

    @Test func aRekeyedKeyIsKeptUntilItsLastBadgeIsReprovisioned() throws {
        let (store, dir) = try DocumentStore.temporary()
        _ = dir
        let registry = Registry(store: store)
        #expect(try registry.material() == nil && registry.version() == nil)
        let issued = try registry.issue(count: 3)
        #expect(issued.allSatisfy { BadgeRegistry.isSerial($0.serial) && $0.key.count == 16 })
        // Each key is the design's derivation from the site's key.
        let site = try #require(try siteKeys(store)[1])
        for b in issued {
            let derived = RotatingID.badgeKey(siteKey: site, serial: b.serial).withUnsafeBytes { Array($0) }
            #expect(derived == b.key)
        }
        let v1 = try #require(try registry.version())

        let (generation, outstanding) = try registry.rekey()
        #expect(generation == 2 && outstanding == issued.map(\.serial).sorted())
        #expect(try siteKeys(store).keys.sorted() == [1, 2])
        // Still resolved under the old key: the material has all three, with their old keys.
        let material = try #require(try registry.material())
        #expect(material.version > v1 && material.badges.count == 3)
        for b in material.badges {
            let old = try #require(issued.first { $0.serial == b.serial })
            #expect(b.key.withUnsafeBytes { Array($0) } == old.key)
        }

        let new = try #require(try registry.reprovision(issued[0].serial))
        #expect(new.key != issued[0].key)
        #expect(try siteKeys(store).keys.sorted() == [1, 2])
        _ = try registry.revoke(issued[1].serial)
        _ = try registry.reprovision(issued[2].serial)
        // The old key had no badge left: deleted.
        #expect(try siteKeys(store).keys.sorted() == [2])
        let after = try #require(try registry.material())
        #expect(after.badges.map(\.serial).sorted() == [issued[0].serial, issued[2].serial].sorted())
        #expect(try registry.reprovision(issued[1].serial) == nil)  // revoked
        #expect(try registry.revoke("nosuch") == nil)
        let again = try #require(try registry.revoke(issued[1].serial))
        #expect(again.already)
        // Numbers are unique and stay with their badges.
        #expect(Set(try registry.list().map(\.number)).count == 3)
    }
}

/// The registry's operations on one store, each as the command line runs it.
private struct Registry {
    let store: DocumentStore

    func issue(count: Int) throws -> [BadgeRegistry.Issued] {
        try store.write { try BadgeRegistry.issue(count: count, in: $0) }
    }
    func revoke(_ serial: String) throws -> (record: BadgeRegistry.Record, already: Bool)? {
        try store.write { try BadgeRegistry.revoke(serial, in: $0) }
    }
    func rekey() throws -> (generation: Int, outstanding: [String]) {
        try store.write { try BadgeRegistry.rekey(in: $0) }
    }
    func reprovision(_ serial: String) throws -> BadgeRegistry.Issued? {
        try store.write { try BadgeRegistry.reprovision(serial, in: $0) }
    }
    func list() throws -> [BadgeRegistry.Record] { try store.read { try BadgeRegistry.list(in: $0) } }
    func version() throws -> Int64? { try store.read { try BadgeRegistry.version(in: $0) } }
    func material() throws -> (version: Int64, badges: [BadgeKey])? {
        try store.read { try BadgeRegistry.material(in: $0) }
    }
}

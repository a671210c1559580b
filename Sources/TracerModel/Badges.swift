import Crypto
import TracerBadges
import TracerStore

/// The site's badges: `config/badgeKeys` (the site's badge keys, by generation, and a version
/// that every change moves) and `badges/{serial}` (each badge's number, its key's generation,
/// when it was issued and revoked). Kept in the site server's store, beside the site and never
/// in the BeaconMap file; kiosks receive days of ids (`BadgeIDDay`), not keys.
///
/// A rekey (the site's badge key leaked) makes a new generation: badges not yet given their new
/// key keep resolving under the old one until they are (`reprovision`), and the old key is
/// deleted with its last badge.
public enum BadgeRegistry {
    public static let collectionID = "badges"
    public static var keysPath: DocumentPath { Collections.badgeKeys }

    /// One badge as the registry keeps it.
    public struct Record: Sendable, Equatable {
        public var serial: String
        public var number: UInt32
        public var generation: Int
        public var issuedAt: Timestamp?
        public var revokedAt: Timestamp?
        public var deviceID: String { RotatingID.deviceID(serial: serial) }
    }

    /// A badge made or given a new key: what its firmware needs (its key, 16 bytes).
    public struct Issued: Sendable, Equatable {
        public var serial: String
        public var key: [UInt8]
        public var deviceID: String { RotatingID.deviceID(serial: serial) }
        /// The key as 32 hex digits, the form beacon firmware tools take.
        public var keyHex: String { key.map { String(format: "%02x", $0) }.joined() }
    }

    /// The keys document's fields.
    struct Keys {
        var generation = 0
        var keys: [Int: [UInt8]] = [:]
        var version: Int64 = 0
        var nextNumber: Int64 = 1

        init(_ doc: DocumentSnapshot) {
            guard doc.exists else { return }
            generation = Int(doc["generation"]?.doubleValue ?? 0)
            version = Int64(doc["version"]?.doubleValue ?? 0)
            nextNumber = Int64(doc["nextNumber"]?.doubleValue ?? 1)
            for (g, v) in doc["keys"]?.mapValue ?? [:] {
                if let g = Int(g), case .bytes(let b) = v, b.count == 32 { keys[g] = b }
            }
        }

        var data: DocumentData {
            [
                "generation": .integer(Int64(generation)),
                "keys": .map(Dictionary(uniqueKeysWithValues: keys.map { ("\($0.key)", .bytes($0.value)) })),
                "version": .integer(version),
                "nextNumber": .integer(nextNumber),
                "updatedAt": .serverTimestamp,
            ]
        }
    }

    /// `badges/{serial}`.
    public static func path(_ serial: String) throws(StoreError) -> DocumentPath {
        try Collections.badges.document(serial)
    }

    /// Letters and digits a person reads off a card without confusing them (no 0/o, 1/l/i).
    static let alphabet = Array("23456789abcdefghjkmnpqrstuvwxyz")

    /// A new serial: 8 of `alphabet`'s characters (about 40 bits), random, so that a serial
    /// says nothing about when or to whom a badge was given.
    static func newSerial() -> String {
        var g = SystemRandomNumberGenerator()
        return String((0..<8).map { _ in alphabet[Int(g.next(upperBound: UInt32(alphabet.count)))] })
    }

    /// Whether `text` is a serial this registry could have made.
    public static func isSerial(_ text: String) -> Bool {
        text.count == 8 && text.allSatisfy { alphabet.contains($0) }
    }

    static func newSiteKey() -> [UInt8] {
        var g = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: 0...255, using: &g) }
    }

    /// Makes `count` badges (and the site's badge key, the first time).
    public static func issue(count: Int, in db: StoreWriter) throws -> [Issued] {
        try db.runTransaction { t in
            var keys = Keys(try t.get(Self.keysPath))
            if keys.keys[keys.generation] == nil {
                keys.generation += 1
                keys.keys[keys.generation] = Self.newSiteKey()
            }
            let site = keys.keys[keys.generation]!
            var issued: [Issued] = []
            var serials = Set<String>()
            while issued.count < count {
                let serial = Self.newSerial()
                guard serials.insert(serial).inserted, !(try t.get(Self.path(serial))).exists else { continue }
                issued.append(Issued(serial: serial, key: Self.key(site: site, serial: serial)))
            }
            for badge in issued {
                t.set(
                    try Self.path(badge.serial),
                    [
                        "number": .integer(keys.nextNumber),
                        "generation": .integer(Int64(keys.generation)),
                        "issuedAt": .serverTimestamp,
                        "deviceId": .string(badge.deviceID),
                    ]
                )
                keys.nextNumber += 1
            }
            keys.version += 1
            t.set(Self.keysPath, keys.data)
            return issued
        }
    }

    /// A badge's key from the site's key of its generation.
    static func key(site: [UInt8], serial: String) -> [UInt8] {
        RotatingID.badgeKey(siteKey: site, serial: serial).withUnsafeBytes { Array($0) }
    }

    /// Revokes a badge: its ids resolve to nobody from the next table on. Nil when there is no
    /// such badge; the record as it was when it was already revoked.
    public static func revoke(_ serial: String, in db: StoreWriter) throws -> (record: Record, already: Bool)? {
        try db.runTransaction { t in
            let path = try Self.path(serial)
            let doc = try t.get(path)
            guard doc.exists, var record = Self.record(doc) else { return nil }
            if record.revokedAt != nil { return (record, true) }
            var keys = Keys(try t.get(Self.keysPath))
            let left = try t.getDocuments(Query(collection: Collections.badges))
                .compactMap(Self.record)
            keys.version += 1
            Self.dropUnusedKeys(&keys, badges: left.filter { $0.serial != serial })
            t.update(path, ["revokedAt": .serverTimestamp])
            t.set(Self.keysPath, keys.data)
            record.revokedAt = Timestamp.now()
            return (record, false)
        }
    }

    /// A new site badge key (the old one leaked). Badges keep resolving under their old key until
    /// each is reprovisioned. Returns the new generation and the badges still to reprovision.
    public static func rekey(in db: StoreWriter) throws -> (generation: Int, outstanding: [String]) {
        try db.runTransaction { t in
            var keys = Keys(try t.get(Self.keysPath))
            let badges = try t.getDocuments(Query(collection: Collections.badges)).compactMap(Self.record)
            keys.generation += 1
            keys.keys[keys.generation] = Self.newSiteKey()
            keys.version += 1
            Self.dropUnusedKeys(&keys, badges: badges)
            t.set(Self.keysPath, keys.data)
            return (keys.generation, badges.filter { $0.revokedAt == nil }.map(\.serial).sorted())
        }
    }

    /// A badge's new key under the site's current badge key (after a rekey); its old ids stop
    /// resolving from the next table on. Nil when there is no such badge.
    public static func reprovision(_ serial: String, in db: StoreWriter) throws -> Issued? {
        try db.runTransaction { t in
            let path = try Self.path(serial)
            let doc = try t.get(path)
            guard doc.exists, let record = Self.record(doc), record.revokedAt == nil else { return nil }
            var keys = Keys(try t.get(Self.keysPath))
            guard let site = keys.keys[keys.generation] else { return nil }
            var badges = try t.getDocuments(Query(collection: Collections.badges)).compactMap(Self.record)
            for i in badges.indices where badges[i].serial == serial { badges[i].generation = keys.generation }
            keys.version += 1
            Self.dropUnusedKeys(&keys, badges: badges)
            t.update(path, ["generation": .integer(Int64(keys.generation)), "reprovisionedAt": .serverTimestamp])
            t.set(Self.keysPath, keys.data)
            return Issued(serial: serial, key: Self.key(site: site, serial: serial))
        }
    }

    /// Old generations' keys no badge in use still needs are deleted (a leaked key is gone once
    /// its last badge is reprovisioned or revoked).
    static func dropUnusedKeys(_ keys: inout Keys, badges: [Record]) {
        let used = Set(badges.filter { $0.revokedAt == nil }.map(\.generation))
        keys.keys = keys.keys.filter { $0.key == keys.generation || used.contains($0.key) }
    }

    static func record(_ doc: DocumentSnapshot) -> Record? {
        guard let number = doc["number"]?.doubleValue, let generation = doc["generation"]?.doubleValue else {
            return nil
        }
        return Record(
            serial: doc.id,
            number: UInt32(clamping: Int64(number)),
            generation: Int(generation),
            issuedAt: doc["issuedAt"]?.timestampValue,
            revokedAt: doc["revokedAt"]?.timestampValue
        )
    }

    /// Every badge, revoked or not, by number.
    public static func list(in db: some StoreReads) throws -> [Record] {
        try db.getDocuments(Query(collection: Collections.badges)).compactMap(Self.record)
            .sorted { $0.number < $1.number }
    }

    /// The badges' version (every issue, revocation, rekey and reprovisioning moves it), or nil
    /// when no badge was ever issued here.
    public static func version(in db: some StoreReads) throws -> Int64? {
        let doc = try db.get(Self.keysPath)
        return doc.exists ? Keys(doc).version : nil
    }

    /// The site's badge key's generation (1 until the first rekey), or nil with no key.
    public static func generation(in db: some StoreReads) throws -> Int? {
        let doc = try db.get(Self.keysPath)
        return doc.exists ? Keys(doc).generation : nil
    }

    /// What resolution needs: the badges in use and their keys, and the version. Nil when the
    /// site has no badge key (no badge was ever issued here).
    public static func material(in db: some StoreReads) throws -> (version: Int64, badges: [BadgeKey])? {
        let keysDoc = try db.get(Self.keysPath)
        let docs = try db.getDocuments(Query(collection: Collections.badges))
        guard keysDoc.exists else { return nil }
        let keys = Keys(keysDoc)
        var badges: [BadgeKey] = []
        for doc in docs {
            guard let r = Self.record(doc), r.revokedAt == nil, let site = keys.keys[r.generation] else { continue }
            badges.append(
                BadgeKey(
                    serial: r.serial,
                    number: r.number,
                    key: RotatingID.badgeKey(siteKey: site, serial: r.serial)
                )
            )
        }
        badges.sort { $0.number < $1.number }
        return (keys.version, badges)
    }
}

/// `badgeIDs/{YYYY-MM-DD}`: the days of ids a kiosk holds (from its site server), so that it
/// resolves badges when it starts offline. Kiosks only: they never travel to the server.
public enum BadgeIDDays {
    public static let collectionID = "badgeIDs"

    public static func path(_ day: UInt32) -> DocumentPath {
        // A day's name is digits and dashes: always a valid id.
        do { return try Collections.badgeIDs.document(BadgeIDDay.name(day)) } catch { preconditionFailure("\(error)") }
    }

    public static func data(_ day: BadgeIDDay) -> DocumentData {
        [
            "day": .string(BadgeIDDay.name(day.day)),
            "epochBits": .integer(Int64(day.bits)),
            "version": .integer(day.version),
            "serials": .array(day.serials.map { .string($0) }),
            "numbers": .array(day.numbers.map { .integer(Int64($0)) }),
            "firstEpoch": .integer(Int64(day.firstEpoch)),
            "epochs": .integer(Int64(day.epochs)),
            "ids": .bytes(day.packedIDs),
            "storedAt": .serverTimestamp,
        ]
    }

    public static func day(_ doc: DocumentSnapshot) -> BadgeIDDay? {
        guard doc.exists, let name = doc["day"]?.stringValue, let day = BadgeIDDay.day(named: name),
            let bits = doc["epochBits"]?.doubleValue, let version = doc["version"]?.doubleValue,
            let first = doc["firstEpoch"]?.doubleValue, let epochs = doc["epochs"]?.doubleValue,
            case .bytes(let packed)? = doc["ids"], let ids = BadgeIDDay.unpack(packed),
            let serials = doc["serials"]?.arrayValue?.compactMap(\.stringValue),
            let numbers = doc["numbers"]?.arrayValue?.compactMap({ $0.doubleValue.map { UInt32(clamping: Int64($0)) } })
        else { return nil }
        let d = BadgeIDDay(
            day: day,
            bits: Int(bits),
            version: Int64(version),
            serials: serials,
            numbers: numbers,
            firstEpoch: UInt32(clamping: Int64(first)),
            epochs: Int(epochs),
            ids: ids
        )
        return d.isWhole ? d : nil
    }

    /// The days kept in `store`.
    public static func load(from db: some StoreReads) throws -> [BadgeIDDay] {
        try db.getDocuments(Query(collection: Collections.badgeIDs)).compactMap(day)
    }
}

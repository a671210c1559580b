import Foundation
import Synchronization
import TracerExposure
import TracerModel
import TracerReports
import TracerStore

/// The holder of a valid token.
public struct Principal: Sendable, Equatable {
    public var tokenID: String
    public var role: Role
    /// A device token's device.
    public var deviceID: String?
    /// A kiosk token's anchor.
    public var anchor: String? = nil
    public var name: String
}

/// API tokens, kept in `tokens/{id}` as a SHA-256 of their secret: the token itself is shown once,
/// when created, and is never stored. A token reads `tracer_{id}_{secret}`; its secret has
/// 190 bits from the system's random source, so one hash (not a slow one) is enough.
public enum TokenStore {
    static let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)

    public struct Created: Sendable {
        public var id: String
        /// The whole token, to hand over once.
        public var token: String
    }

    static func random(_ count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return String(decoding: (0..<count).map { _ in alphabet.randomElement(using: &generator)! }, as: UTF8.self)
    }

    /// Creates a token; `deviceID` is required for a device token and refused for others;
    /// `anchor` is taken by kiosk tokens only (the anchor it may replicate).
    public static func create(
        role: Role,
        deviceID: String?,
        anchor: String? = nil,
        name: String?,
        in db: StoreWriter
    ) throws -> Created {
        if role != .kiosk, anchor != nil {
            throw APIError.badRequest("only a kiosk token takes --anchor")
        }
        if role == .device, deviceID?.isEmpty ?? true {
            throw APIError.badRequest("a device token needs --device ID")
        }
        if role != .device, deviceID != nil {
            throw APIError.badRequest("only a device token takes --device")
        }
        let id = Self.random(12)
        let secret = Self.random(32)
        let record = TokenRecord(
            id: id,
            role: role,
            deviceID: deviceID,
            anchor: anchor,
            name: name ?? (anchor.map { "kiosk \($0)" } ?? "\(role.rawValue) token"),
            hash: Digest.sha256Hex(secret)
        )
        try db.create(Collections.token(id), record.data)
        return Created(id: id, token: "tracer_\(id)_\(secret)")
    }

    /// A device's one-time link: the record's id, and the code the link carries (`{id}-{secret}`,
    /// 190 bits of secret), shown once.
    public struct Link: Sendable {
        public var id: String
        public var code: String

        /// The link to the person's page at `base` (the site server's public address): the code
        /// in the fragment, which browsers never send to a server nor in a Referer.
        public func url(base: String) -> String {
            (base.hasSuffix("/") ? String(base.dropLast()) : base) + "/me#c=" + code
        }
    }

    /// Creates a device's one-time link: a token record for the device with no token yet, which
    /// the first browser to open the link gets (`exchange`). The site keeps no name.
    public static func createLink(deviceID: String, name: String?, in db: StoreWriter) throws -> Link {
        guard !deviceID.isEmpty else { throw APIError.badRequest("a link needs --device ID") }
        let id = Self.random(12)
        let secret = Self.random(32)
        var record = TokenRecord(id: id, role: .device, deviceID: deviceID, name: name ?? "device link", hash: "")
        record.link = Digest.sha256Hex(secret)
        try db.create(Collections.token(id), record.data)
        return Link(id: id, code: "\(id)-\(secret)")
    }

    /// What opening a link gave.
    public enum Exchanged: Sendable, Equatable {
        /// The device's token (shown once) and its device.
        case token(String, deviceID: String)
        /// The link was opened before, in some browser: it gives nothing again.
        case used
        /// The whole link, but its access was withdrawn (its token revoked: "Forget this phone",
        /// or the site): only the link's holder learns it, as the secret must match.
        case withdrawn
        /// No such link (mistyped, forged).
        case unknown
    }

    /// How long after a link's exchange the same page's key may exchange it again.
    public static let attemptLife: TimeInterval = 600

    /// Whether `key` is a page's exchange key: 16 to 64 of `A–Z a–z 0–9 - _`.
    public static func isAttemptKey(_ key: String) -> Bool {
        (16...64).contains(key.utf8.count)
            && key.utf8.allSatisfy { Self.alphabet.contains($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
    }

    /// Exchanges a link's code for the device's token, once: the token is made now (its hash
    /// replaces the empty one), and the link is dead after. A code of the wrong shape, an
    /// unknown id and a wrong secret are alike (`unknown`), and cost the same comparison.
    ///
    /// Once, except for the page that exchanged it: a phone whose answer was lost (the network
    /// gone between the commit and the answer) would otherwise hold a used link and no token,
    /// and its person would need a new card. A page sends a key of its own (`attempt`) with
    /// every try; the same code with the same key, within `attemptLife` of the first exchange,
    /// is answered again with a new token, and the one never seen ends. Another browser with
    /// the card's code but not the key still gets `used`.
    public static func exchange(
        _ code: String,
        attempt: String? = nil,
        now: Date = Date(),
        in db: StoreWriter
    ) throws
        -> Exchanged
    {
        let parts = code.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, Self.isID(parts[0]), parts[1].utf8.count == 32,
            parts[1].utf8.allSatisfy(Self.alphabet.contains), let path = try? Collections.token(String(parts[0]))
        else { return .unknown }
        let offered = Array(Digest.sha256Hex(parts[1].utf8).utf8)
        let attemptHash = attempt.map { Digest.sha256Hex($0.utf8) }
        let secret = Self.random(32)
        return try db.runTransaction { t in
            let doc = try t.get(path)
            let record = doc.exists ? try? TokenRecord(doc) : nil
            let hash = record?.link.map { Array($0.utf8) } ?? [UInt8](repeating: 0, count: 64)
            guard Self.constantTimeEqual(offered, hash), let record, record.role == .device,
                let device = record.deviceID
            else { return .unknown }
            guard record.revokedAt == nil else { return .withdrawn }
            let token = "tracer_\(record.id)_\(secret)"
            guard let linkedAt = record.linkedAt else {
                t.update(path, TokenRecord.linked(hash: Digest.sha256Hex(secret), attempt: attemptHash))
                return .token(token, deviceID: device)
            }
            guard let attemptHash, let kept = record.linkAttempt,
                Self.constantTimeEqual(Array(attemptHash.utf8), Array(kept.utf8)),
                now.timeIntervalSince(linkedAt.date) <= Self.attemptLife
            else { return .used }
            t.update(path, TokenRecord.relinked(hash: Digest.sha256Hex(secret)))
            return .token(token, deviceID: device)
        }
    }

    /// Why `id` is not a device this site can give a card to, or nil when it is: a badge's id
    /// (`badge:SERIAL`) must be issued and not revoked; an iBeacon's (`UUID:MAJOR:MINOR`) may not
    /// have been heard yet (cards are printed before the first day); any other id only once this
    /// site has heard it. A typo must not make a card whose page says "Clear" for ever.
    public static func unknownDevice(_ id: String, in db: some StoreReads) throws -> String? {
        if id.hasPrefix(Interaction.badgePrefix) {
            let serial = String(id.dropFirst(Interaction.badgePrefix.count))
            let badge =
                BadgeRegistry.isSerial(serial)
                ? try BadgeRegistry.list(in: db).first { $0.serial == serial } : nil
            guard let badge else {
                return "no badge \(serial.prefix(40)) was issued on this site (tracer badge list shows those that were)"
            }
            if badge.revokedAt != nil { return "badge \(serial) was revoked: a revoked badge gets no card" }
            return nil
        }
        if Self.isBeaconID(id) { return nil }
        let heard = try db.getDocuments(
            Query.interactions.where(Interaction.Field.deviceID, .equal, .string(id))
                .where(Interaction.Field.start, .greaterThanOrEqual, .timestamp(Timestamp(seconds: 0))).limit(1)
        )
        guard heard.isEmpty else { return nil }
        return
            "no device '\(id.prefix(60))' on this site: a card names a badge (badge:SERIAL, from tracer badge list), an iBeacon (UUID:MAJOR:MINOR), or a device this site has heard"
    }

    /// `UUID:MAJOR:MINOR`, as the daemon names an iBeacon.
    static func isBeaconID(_ id: String) -> Bool {
        let parts = id.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, UUID(uuidString: String(parts[0])) != nil else { return false }
        return parts[1...].allSatisfy { UInt16($0) != nil }
    }

    /// Revokes a device's cards (tokens made as links, opened or not) but `keeping`: a new card
    /// replaces the old, so a lost phone, or a browser someone else opened the old card in, has
    /// no access once the person has their new card. Plain device tokens (a program's) stay.
    /// The ids revoked.
    public static func revokeCards(of device: String, keeping: String, in db: StoreWriter) throws -> [String] {
        try revokeCards(of: [device], keeping: [keeping], in: db)
    }

    /// The same for many devices at once (a sheet of cards): the tokens are read once.
    public static func revokeCards(of devices: Set<String>, keeping: Set<String>, in db: StoreWriter) throws -> [String]
    {
        let replaced = try cards(in: db).filter {
            $0.deviceID.map(devices.contains) == true && !keeping.contains($0.id)
        }.map(\.id)
        for id in replaced { _ = try revoke(id, in: db) }
        return replaced
    }

    /// The site's cards still in force: device tokens made as links (opened or not), not revoked.
    public static func cards(in db: some StoreReads) throws -> [TokenRecord] {
        try list(in: db).compactMap { try? TokenRecord($0) }.filter {
            $0.role == .device && $0.link != nil && $0.revokedAt == nil
        }
    }

    /// Every token, without its hash.
    public static func list(in db: some StoreReads) throws -> [DocumentSnapshot] {
        try db.getDocuments(Query(collection: Collections.tokens).order(by: TokenRecord.Field.createdAt))
    }

    /// Revokes a token at once, and ends the push subscriptions it made (a phone forgotten is
    /// told nothing more); false when there is none with this id.
    public static func revoke(_ id: String, in db: StoreWriter) throws -> Bool {
        guard Self.isID(id) else { return false }
        let path = try Collections.token(id)
        return try db.runTransaction { t in
            let doc = try t.get(path)
            guard doc.exists else { return false }
            var ended: [DocumentPath] = []
            if let record = try? TokenRecord(doc), record.role == .device, let device = record.deviceID,
                let subscriptions = try? Collections.pushSubscriptions(of: device)
            {
                ended = try t.getDocuments(Query(collection: subscriptions)).filter {
                    // One stored before subscriptions named their token: any of the device's tokens ends it.
                    guard let by = $0[FieldPath(stringLiteral: PushSubscription.Field.tokenID)]?.stringValue else {
                        return true
                    }
                    return by == id
                }.map(\.path)
            }
            t.update(path, TokenRecord.revocation)
            for subscription in ended { t.delete(subscription) }
            return true
        }
    }

    static func isID(_ s: Substring) -> Bool { s.count == 12 && s.utf8.allSatisfy { alphabet.contains($0) } }
    static func isID(_ s: String) -> Bool { isID(Substring(s)) }

    /// A presented token taken apart: its record's path and the hash of the secret offered.
    public struct Claim: Sendable {
        public let path: DocumentPath
        let offered: [UInt8]

        /// Nil when the text is not a token's shape (`tracer_{id}_{secret}`).
        public init?(_ presented: String) {
            let parts = presented.split(separator: "_", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[0] == "tracer", TokenStore.isID(parts[1]), parts[2].utf8.count == 32,
                let path = try? Collections.token(String(parts[1]))
            else { return nil }
            self.path = path
            self.offered = Array(Digest.sha256Hex(parts[2].utf8).utf8)
        }
    }

    /// The principal of a claim, judged against its record as read from the store (the API reads
    /// it with what the route answers: `API.authorize`), or nil. The hashes (hex) are compared in
    /// constant time, and an unknown id costs the same comparison as a known one.
    public static func principal(_ claim: Claim, stored: DocumentSnapshot) -> Principal? {
        let record = stored.exists ? try? TokenRecord(stored) : nil
        let hash = record.map { Array($0.hash.utf8) } ?? [UInt8](repeating: 0, count: 64)
        guard constantTimeEqual(claim.offered, hash), let record, record.revokedAt == nil else { return nil }
        return Principal(
            tokenID: claim.path.id,
            role: record.role,
            deviceID: record.deviceID,
            anchor: record.anchor,
            name: record.name
        )
    }

    /// The principal of a token known by its id alone (a watch ticket's), judged against its
    /// record: nil when it is unknown or revoked.
    public static func principal(id: String, stored: DocumentSnapshot) -> Principal? {
        guard stored.exists, let record = try? TokenRecord(stored), record.revokedAt == nil else { return nil }
        return Principal(
            tokenID: id,
            role: record.role,
            deviceID: record.deviceID,
            anchor: record.anchor,
            name: record.name
        )
    }

    /// Equal lengths and bytes, in time that depends on the length only.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in a.indices { difference |= a[i] ^ b[i] }
        return difference == 0
    }
}

/// Failed token attempts per client: after `limit` failures within `window` seconds, a client is
/// refused (429) until the window has passed, whatever it presents.
public final class FailureLimiter: Sendable {
    let limit: Int
    let window: Double
    let clock: @Sendable () -> Double
    private let failures = Mutex<[String: (count: Int, since: Double)]>([:])

    public init(
        limit: Int = 10,
        window: Double = 60,
        clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) {
        self.limit = limit
        self.window = window
        self.clock = clock
    }

    /// Throws 429 with `Retry-After` while this client may not try again (`what` failed too
    /// often from it).
    func refuseIfLimited(_ client: String, _ what: String) throws(APIError) {
        guard let wait = retryAfter(client) else { return }
        let seconds = Int(wait.rounded(.up))
        var e = APIError(
            .tooManyRequests,
            .tooManyRequests,
            "too many failed \(what) from \(client); wait \(seconds) s"
        )
        e.headers[.retryAfter] = "\(seconds)"
        throw e
    }

    /// Seconds until this client may try again, or nil when it may now.
    public func retryAfter(_ client: String) -> Double? {
        let now = clock()
        return failures.withLock { failures in
            guard let f = failures[client] else { return nil }
            if now - f.since >= window {
                failures[client] = nil
                return nil
            }
            return f.count >= limit ? window - (now - f.since) : nil
        }
    }

    public func failed(_ client: String) {
        let now = clock()
        failures.withLock { failures in
            if let f = failures[client], now - f.since < window {
                failures[client] = (f.count + 1, f.since)
            } else {
                failures[client] = (1, now)
            }
            // Forget old clients so that a scan from many addresses cannot grow this without bound.
            if failures.count > 10_000 { failures = failures.filter { now - $0.value.since < window } }
        }
    }
}

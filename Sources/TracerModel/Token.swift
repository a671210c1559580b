import TracerStore

/// Who may do what over HTTP: an admin reads everything; a kiosk posts reports, reads status
/// and (with an anchor) replicates its own anchor's documents; a device reads only its own device.
public enum Role: String, Sendable, CaseIterable {
    case admin, kiosk, device
}

/// `tokens/{id}`: an API token, kept as the SHA-256 of its secret (the token itself is shown
/// once and never stored).
public struct TokenRecord: Sendable, Equatable {
    public static let collectionID = "tokens"

    /// The stored field names.
    public enum Field {
        public static let createdAt: FieldPath = "createdAt"
    }

    public var id: String
    public var role: Role
    /// A device token's device.
    public var deviceID: String?
    /// A kiosk token's anchor: the only `beacons/{key}` it may replicate.
    public var anchor: String?
    public var name: String
    /// SHA-256 of the secret, hex.
    public var hash: String
    public var createdAt: Timestamp?
    public var revokedAt: Timestamp?
    /// A device's one-time link (`tracer token create --link`): SHA-256 of the link's code, hex.
    /// Until the link is opened the record has no token (`hash` is empty: nothing matches it).
    public var link: String?
    /// When the link was exchanged for the token (then `hash` is the token's).
    public var linkedAt: Timestamp?
    /// SHA-256 of the key the page sent with its exchange, hex: the same key may exchange the
    /// link again for a while, when its answer was lost (`TokenStore.exchange`).
    public var linkAttempt: String?

    public init(id: String, role: Role, deviceID: String?, anchor: String? = nil, name: String, hash: String) {
        self.id = id
        self.role = role
        self.deviceID = deviceID
        self.anchor = anchor
        self.name = name
        self.hash = hash
    }

    public init(_ doc: DocumentSnapshot) throws(ModelError) {
        let r = try FieldReader(doc)
        self.init(
            id: doc.id,
            role: try r.enum("role", Role.self),
            deviceID: r.optionalString("deviceId"),
            anchor: r.optionalString("anchor"),
            name: r.optionalString("name") ?? "",
            hash: try r.string("hash")
        )
        createdAt = r.optionalTime("createdAt")
        revokedAt = r.optionalTime("revokedAt")
        link = r.optionalString("link")
        linkedAt = r.optionalTime("linkedAt")
        linkAttempt = r.optionalString("linkAttempt")
    }

    /// The document as created; `createdAt` is the commit time.
    public var data: DocumentData {
        var data: DocumentData = [
            "role": .string(role.rawValue), "hash": .string(hash), "name": .string(name),
            "createdAt": .serverTimestamp,
        ]
        if let deviceID { data["deviceId"] = .string(deviceID) }
        if let anchor { data["anchor"] = .string(anchor) }
        if let link { data["link"] = .string(link) }
        return data
    }

    /// The fields a revocation writes.
    public static var revocation: [FieldPath: Value] { ["revokedAt": .serverTimestamp] }

    /// The fields a link's exchange writes: the token's hash, when, and the hash of the key the
    /// page sent with it, if it sent one.
    public static func linked(hash: String, attempt: String?) -> [FieldPath: Value] {
        var fields: [FieldPath: Value] = ["hash": .string(hash), "linkedAt": .serverTimestamp]
        if let attempt { fields["linkAttempt"] = .string(attempt) }
        return fields
    }

    /// The fields an exchange answered again writes: a new token's hash (the lost one's ends).
    public static func relinked(hash: String) -> [FieldPath: Value] { ["hash": .string(hash)] }
}

/// `audit/{id}`: one admin request served: who, what, when.
public struct AuditEntry: Sendable, Equatable {
    public static let collectionID = "audit"

    public var tokenID: String
    public var tokenName: String
    public var role: Role
    public var method: String
    /// The path with its query, without a token.
    public var path: String
    /// What came of it, when it was refused (a replicated document outside a kiosk's anchor).
    public var outcome: String?

    public init(tokenID: String, tokenName: String, role: Role, method: String, path: String, outcome: String? = nil) {
        self.tokenID = tokenID
        self.tokenName = tokenName
        self.role = role
        self.method = method
        self.path = path
        self.outcome = outcome
    }

    /// The document; `at` is the server's commit time.
    public var data: DocumentData {
        var data: DocumentData = [
            "tokenId": .string(tokenID), "tokenName": .string(tokenName), "role": .string(role.rawValue),
            "method": .string(method), "path": .string(path), "at": .serverTimestamp,
        ]
        if let outcome { data["outcome"] = .string(outcome) }
        return data
    }
}

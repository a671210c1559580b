import TracerStore

/// Who may do what over HTTP: an admin reads everything; a kiosk posts reports and reads
/// status; a device reads only its own device.
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
    public var name: String
    /// SHA-256 of the secret, hex.
    public var hash: String
    public var createdAt: Timestamp?
    public var revokedAt: Timestamp?

    public init(id: String, role: Role, deviceID: String?, name: String, hash: String) {
        self.id = id
        self.role = role
        self.deviceID = deviceID
        self.name = name
        self.hash = hash
    }

    public init(_ doc: DocumentSnapshot) throws(ModelError) {
        let r = try FieldReader(doc)
        self.init(
            id: doc.id,
            role: try r.enum("role", Role.self),
            deviceID: r.optionalString("deviceId"),
            name: r.optionalString("name") ?? "",
            hash: try r.string("hash")
        )
        createdAt = r.optionalTime("createdAt")
        revokedAt = r.optionalTime("revokedAt")
    }

    /// The document as created; `createdAt` is the commit time.
    public var data: DocumentData {
        var data: DocumentData = [
            "role": .string(role.rawValue), "hash": .string(hash), "name": .string(name),
            "createdAt": .serverTimestamp,
        ]
        if let deviceID { data["deviceId"] = .string(deviceID) }
        return data
    }

    /// The fields a revocation writes.
    public static var revocation: [FieldPath: Value] { ["revokedAt": .serverTimestamp] }
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

    public init(tokenID: String, tokenName: String, role: Role, method: String, path: String) {
        self.tokenID = tokenID
        self.tokenName = tokenName
        self.role = role
        self.method = method
        self.path = path
    }

    /// The document; `at` is the server's commit time.
    public var data: DocumentData {
        [
            "tokenId": .string(tokenID), "tokenName": .string(tokenName), "role": .string(role.rawValue),
            "method": .string(method), "path": .string(path), "at": .serverTimestamp,
        ]
    }
}

import TracerSite
import TracerStore

/// `config/site`: the site's BeaconMap, published into the store so that every command on the
/// store, and every kiosk replicating into it, uses the same rooms, anchors and settings.
///
/// The document keeps the map's YAML source (parsed with the same loader as a file, so a
/// published site and its file can never be read differently) and, for people and the API, its
/// main fields: the site's name, rooms, anchors and the SHA-256 of the source.
public struct PublishedSite: Sendable {
    public static let collectionID = "config"
    public static let documentID = "site"

    /// The stored field names.
    public enum Field {
        public static let source: FieldPath = "source"
        public static let digest: FieldPath = "digest"
    }

    /// The parsed site.
    public var site: Site
    /// The BeaconMap YAML.
    public var source: String
    /// The file it was published from.
    public var file: String
    /// SHA-256 of `source`, hex.
    public var digest: String
    /// When it was published (the store's commit time), once stored.
    public var publishedAt: Timestamp?

    /// A site from a BeaconMap's text; `file` names it in errors and in the store. The trust
    /// list it names is read from beside `file`, or, for a site taken from the server (`served`),
    /// is the server's copy, `trustList`.
    public init(source: String, file: String, served: Bool = false, trustList: String? = nil) throws {
        self.site = try Site.parse(source, file: file)
        if served {
            site.verification.trustListPEM = trustList
        } else {
            try site.readTrustList(besides: file)
        }
        self.source = source
        self.file = file
        self.digest = Self.digest(source: source, trustList: site.verification.trustListPEM)
    }

    /// The SHA-256 of the map's source, and of its trust list when it names one (a new trust
    /// list is a new site for the kiosks polling it).
    static func digest(source: String, trustList: String?) -> String {
        Digest.sha256Hex(trustList.map { source + "\n" + $0 } ?? source)
    }

    /// The published site in a stored document.
    public init(_ doc: DocumentSnapshot) throws {
        let r = try FieldReader(doc)
        let source = try r.string("source")
        let file = r.optionalString("file") ?? doc.path.description
        // Errors in a published map name the document and the file it came from.
        self.site = try Site.parse(source, file: "\(doc.path) (published from \(file))")
        self.site.file = file
        self.site.verification.trustListPEM = r.optionalString("trustList")
        self.source = source
        self.file = file
        self.digest = Self.digest(source: source, trustList: site.verification.trustListPEM)
        self.publishedAt = r.optionalTime("publishedAt")
    }

    /// The document to write.
    public var data: DocumentData {
        var data: DocumentData = [
            "site": .string(site.name),
            "file": .string(file),
            "source": .string(source),
            "digest": .string(digest),
            "deviceUUIDs": .array(site.deviceUUIDOrder.map { .string($0.description) }),
            "rooms": .array(site.rooms.map { .string($0.key) }),
            "anchors": .array(
                site.anchors.map { a in
                    .map([
                        "key": .string(a.key), "kind": .string(a.kind.rawValue), "room": .string(a.room),
                        "position": [.double(a.position.x), .double(a.position.y)],
                    ])
                }
            ),
            "publishedAt": .serverTimestamp,
        ]
        if let pem = site.verification.trustListPEM { data["trustList"] = .string(pem) }
        return data
    }

    /// `config/site`.
    public static var path: DocumentPath { Collections.site }

    /// The stored document's fields as written, without parsing the map again: what the site
    /// server hands to kiosks that poll `GET /v1/site` (mostly to hear "not modified").
    public struct Stored: Sendable, Equatable {
        public var name: String
        public var file: String
        public var digest: String
        public var source: String
        /// The trust list's PEM text, when the map names one.
        public var trustList: String?
        public var publishedAt: Timestamp?

        /// Nil when there is no such document.
        public init?(_ doc: DocumentSnapshot) throws {
            guard doc.exists else { return nil }
            let r = try FieldReader(doc)
            name = try r.string("site")
            file = try r.string("file")
            digest = try r.string("digest")
            source = try r.string("source")
            trustList = r.optionalString("trustList")
            publishedAt = r.optionalTime("publishedAt")
        }
    }

    /// The site published in the store, or nil when none is.
    public static func load(from db: some StoreReads) throws -> PublishedSite? {
        let doc = try db.get(path)
        guard doc.exists else { return nil }
        return try PublishedSite(doc)
    }

    /// Writes this site to `config/site`; unchanged (and no change logged) when the same source
    /// is already there. Returns whether anything was written.
    @discardableResult
    public func publish(to db: StoreWriter) throws -> Bool {
        try db.runTransaction { t in
            let old = try t.get(Self.path)
            if old["digest"]?.stringValue == digest { return false }
            t.set(Self.path, data)
            return true
        }
    }
}

extension Site {
    /// How this site's anchors differ from another's, one line each (empty when they agree):
    /// anchors added or removed, and anchors moved to another room, position or identity.
    public func anchorDifferences(from other: Site) -> [String] {
        var out: [String] = []
        let mine = Dictionary(anchors.map { ($0.key, $0) }, uniquingKeysWith: { a, _ in a })
        let theirs = Dictionary(other.anchors.map { ($0.key, $0) }, uniquingKeysWith: { a, _ in a })
        for a in anchors where theirs[a.key] == nil { out.append("\(a.key) only in \(file)") }
        for a in other.anchors where mine[a.key] == nil { out.append("\(a.key) only in \(other.file)") }
        for a in anchors {
            guard let b = theirs[a.key] else { continue }
            if a.kind != b.kind || a.room != b.room {
                out.append("\(a.key): \(a.kind.rawValue) in \(a.room) here, \(b.kind.rawValue) in \(b.room) there")
            } else if abs(a.position.x - b.position.x) > 1e-6 || abs(a.position.y - b.position.y) > 1e-6 {
                out.append(
                    "\(a.key): at [\(a.position.x), \(a.position.y)] here, [\(b.position.x), \(b.position.y)] there"
                )
            } else if a.identity?.uuid != b.identity?.uuid || a.identity?.major != b.identity?.major
                || a.identity?.minor != b.identity?.minor || a.measuredPower != b.measuredPower
            {
                out.append("\(a.key): advertises differently")
            }
        }
        return out
    }
}

import Foundation
import TracerVerification

/// The API's JSON bodies as types (encoded with sorted keys; a nil marked `@Null` is written as
/// null, as clients expect the key). The hot routes' bodies (a device's status, exposures) are
/// types too (`DeviceStatus.swift`), written by the store's own writer through their `value`.
///
/// The server's side of the contract; the clients' is generated from the OpenAPI document
/// (`TracerAPIClient`). The server does not answer with the generated types: they leave out a
/// required property that is nil instead of writing null (apple/swift-openapi-generator#934),
/// which the document forbids for `site`, `collectedAt`, `createdAt`, `from` and `to`.
public enum Responses {
    /// `GET /health`.
    public struct Health: Codable, Sendable {
        public var status: String
        public var storeToken: Int64?
        public var uptimeSeconds: Int?
        @Null public var site: String?
        public var error: ErrorBody.Detail?

        public init(
            status: String,
            storeToken: Int64? = nil,
            uptimeSeconds: Int? = nil,
            site: String? = nil,
            error: ErrorBody.Detail? = nil
        ) {
            self.status = status
            self.storeToken = storeToken
            self.uptimeSeconds = uptimeSeconds
            self.site = site
            self.error = error
        }
    }

    /// `GET /v1/features`: what this site has on.
    public struct Features: Codable, Sendable {
        public struct Exposure: Codable, Sendable {
            public var radiusMetres: Double
            public var windowMinutes: Double
            public var lookbackDays: Double
            public var separation: String

            public init(
                radiusMetres: Double,
                windowMinutes: Double,
                lookbackDays: Double,
                separation: String
            ) {
                self.radiusMetres = radiusMetres
                self.windowMinutes = windowMinutes
                self.lookbackDays = lookbackDays
                self.separation = separation
            }
        }

        public var selfReport = true
        public var verification = "ocr"
        public var questionnaire = ["symptoms", "tested"]
        public var exposureNotifications = true
        public var responses = true
        public var watch = true
        public var dashboard = true
        public var kioskDeviceLookup = true
        @Null public var site: String?
        public var exposure: Exposure
        public var retentionDays = 14
        public var maxUploadBytes: Int

        public init(
            selfReport: Bool = true,
            verification: String = "ocr",
            questionnaire: [String] = ["symptoms", "tested"],
            exposureNotifications: Bool = true,
            responses: Bool = true,
            watch: Bool = true,
            dashboard: Bool = true,
            kioskDeviceLookup: Bool = true,
            site: String? = nil,
            exposure: Exposure,
            retentionDays: Int = 14,
            maxUploadBytes: Int
        ) {
            self.selfReport = selfReport
            self.verification = verification
            self.questionnaire = questionnaire
            self.exposureNotifications = exposureNotifications
            self.responses = responses
            self.watch = watch
            self.dashboard = dashboard
            self.kioskDeviceLookup = kioskDeviceLookup
            self.site = site
            self.exposure = exposure
            self.retentionDays = retentionDays
            self.maxUploadBytes = maxUploadBytes
        }
    }

    /// `GET /v1/beacons`: the site and every anchor with its occupancy and exposures.
    public struct Beacons: Codable, Sendable {
        public struct Beacon: Codable, Sendable {
            public var key: String
            public var occupancy: Int
            public var exposures: Int
            public var exposedDevices: Int
            public var lastHeard: String?
            public var kind: String?
            public var room: String?
            public var name: String?
            public var position: [Double]?

            public init(
                key: String,
                occupancy: Int,
                exposures: Int,
                exposedDevices: Int,
                lastHeard: String? = nil,
                kind: String? = nil,
                room: String? = nil,
                name: String? = nil,
                position: [Double]? = nil
            ) {
                self.key = key
                self.occupancy = occupancy
                self.exposures = exposures
                self.exposedDevices = exposedDevices
                self.lastHeard = lastHeard
                self.kind = kind
                self.room = room
                self.name = name
                self.position = position
            }
        }

        public struct Site: Codable, Sendable {
            public var name: String
            public var rooms: [Room]

            public init(
                name: String,
                rooms: [Room]
            ) {
                self.name = name
                self.rooms = rooms
            }
        }

        public struct Room: Codable, Sendable {
            public var key: String
            public var name: String
            @Null public var building: String?
            @Null public var floor: Int?
            public var use: String
            public var outline: [[Double]]

            public init(
                key: String,
                name: String,
                building: String? = nil,
                floor: Int? = nil,
                use: String,
                outline: [[Double]]
            ) {
                self.key = key
                self.name = name
                self.building = building
                self.floor = floor
                self.use = use
                self.outline = outline
            }
        }

        public var beacons: [Beacon]
        public var occupancyWindowSeconds: Double
        public var generatedAt: String
        public var site: Site?

        public init(
            beacons: [Beacon],
            occupancyWindowSeconds: Double,
            generatedAt: String,
            site: Site? = nil
        ) {
            self.beacons = beacons
            self.occupancyWindowSeconds = occupancyWindowSeconds
            self.generatedAt = generatedAt
            self.site = site
        }
    }

    /// `GET /v1/responses`: accepted reports of 14 days under rotated ids.
    /// `POST /v1/links`: a one-time link's token, for the person's page.
    public struct Linked: Codable, Sendable, Equatable {
        public var token: String
        public var deviceId: String

        public init(token: String, deviceId: String) {
            self.token = token
            self.deviceId = deviceId
        }
    }

    /// `GET /v1/tokens/self`: who the token presented is (a device token's device, a kiosk
    /// token's anchor), so that a person's command needs no `--device`.
    public struct TokenSelf: Codable, Sendable, Equatable {
        public var id: String
        public var role: String
        public var name: String
        @Null public var deviceId: String?
        @Null public var anchor: String?

        public init(id: String, role: String, name: String, deviceId: String?, anchor: String?) {
            (self.id, self.role, self.name, self.deviceId, self.anchor) = (id, role, name, deviceId, anchor)
        }
    }

    /// `POST /v1/reports/{id}/flag` and `/revoke`: what the exposure engine did, in the line the
    /// command prints.
    public struct Flagged: Codable, Sendable, Equatable {
        public var reportId: String
        /// Devices exposed by the report now (0 once revoked).
        public var devices: Int
        /// Exposure documents the report has now, and those written or removed by this call.
        public var exposures: Int
        public var changed: Int
        public var line: String

        public init(reportId: String, devices: Int, exposures: Int, changed: Int, line: String) {
            (self.reportId, self.devices, self.exposures, self.changed, self.line) =
                (reportId, devices, exposures, changed, line)
        }
    }

    /// `DELETE /v1/tokens/self`: the token presented is revoked.
    public struct Revoked: Codable, Sendable, Equatable {
        public var revoked: Bool
        public init(revoked: Bool) { self.revoked = revoked }
    }

    /// `POST /v1/watch/ticket?path=…`: what a page's stream puts in its URL instead of its token.
    public struct WatchTicket: Codable, Sendable, Equatable {
        public var ticket: String
        public var expiresInSeconds: Int
        public init(ticket: String, expiresInSeconds: Int) {
            self.ticket = ticket
            self.expiresInSeconds = expiresInSeconds
        }
    }

    /// `POST` and `DELETE /v1/devices/{id}/push`: whether that browser is told now.
    public struct Subscribed: Codable, Sendable, Equatable {
        public var subscribed: Bool
        public init(subscribed: Bool) { self.subscribed = subscribed }
    }

    /// `GET /v1/page`: what the person's page shows beside the status.
    public struct Page: Codable, Sendable, Equatable {
        public struct Guidance: Codable, Sendable, Equatable {
            public var text: String
            @Null public var link: String?

            public init(text: String, link: String?) {
                self.text = text
                self.link = link
            }
        }

        @Null public var site: String?
        @Null public var guidance: Guidance?
        /// The room's name of each beacon key.
        public var rooms: [String: String]
        /// The site's exposure radius (6 m unless its map says otherwise).
        public var radiusMetres: Double
        /// The site's Web Push key (base64url): the browser's `applicationServerKey`.
        public var pushKey: String

        public init(site: String?, guidance: Guidance?, rooms: [String: String], radiusMetres: Double, pushKey: String)
        {
            self.site = site
            self.guidance = guidance
            self.rooms = rooms
            self.radiusMetres = radiusMetres
            self.pushKey = pushKey
        }
    }

    public struct PublicResponses: Codable, Sendable {
        public struct Entry: Codable, Sendable {
            public var id: String
            public var reportedOn: String
            public var collectedOn: String?
            public var answers: [String: Bool]?

            public init(
                id: String,
                reportedOn: String,
                collectedOn: String? = nil,
                answers: [String: Bool]? = nil
            ) {
                self.id = id
                self.reportedOn = reportedOn
                self.collectedOn = collectedOn
                self.answers = answers
            }
        }

        public var days = 14
        public var rotatedOn: String
        public var responses: [Entry]

        public init(
            days: Int = 14,
            rotatedOn: String,
            responses: [Entry]
        ) {
            self.days = days
            self.rotatedOn = rotatedOn
            self.responses = responses
        }
    }

    /// `GET /v1/kiosks`: each replicating kiosk's sync state.
    public struct Kiosks: Codable, Sendable {
        public struct Kiosk: Codable, Sendable {
            public var anchor: String
            @Null public var room: String?
            @Null public var lastSeen: String?
            @Null public var secondsSinceSeen: Double?
            public var silent: Bool
            public var backlog: Int64
            @Null public var backlogOldest: String?
            /// How far behind the site store is: the age of the oldest change still queued.
            public var lagSeconds: Double
            @Null public var clockOffsetSeconds: Double?
            public var clockWarning: Bool
            public var documents: Int64
            public var refused: Int64
            /// Whole batches refused (another kiosk's token), and the last reason.
            public var refusedBatches: Int64
            @Null public var lastRefusal: String?

            public init(
                anchor: String,
                room: String? = nil,
                lastSeen: String? = nil,
                secondsSinceSeen: Double? = nil,
                silent: Bool,
                backlog: Int64,
                backlogOldest: String? = nil,
                lagSeconds: Double,
                clockOffsetSeconds: Double? = nil,
                clockWarning: Bool,
                documents: Int64,
                refused: Int64,
                refusedBatches: Int64 = 0,
                lastRefusal: String? = nil
            ) {
                self.anchor = anchor
                self.room = room
                self.lastSeen = lastSeen
                self.secondsSinceSeen = secondsSinceSeen
                self.silent = silent
                self.backlog = backlog
                self.backlogOldest = backlogOldest
                self.lagSeconds = lagSeconds
                self.clockOffsetSeconds = clockOffsetSeconds
                self.clockWarning = clockWarning
                self.documents = documents
                self.refused = refused
                self.refusedBatches = refusedBatches
                self.lastRefusal = lastRefusal
            }
        }
        public var kiosks: [Kiosk]
        public var silentAfterSeconds: Double
        public var generatedAt: String

        public init(
            kiosks: [Kiosk],
            silentAfterSeconds: Double,
            generatedAt: String
        ) {
            self.kiosks = kiosks
            self.silentAfterSeconds = silentAfterSeconds
            self.generatedAt = generatedAt
        }
    }

    /// `GET /v1/badges/ids?day=…`: one UTC day of every active badge's rotating ids, for a
    /// kiosk to resolve them without holding a key (`BadgeIDDay`).
    public struct BadgeIDs: Codable, Sendable, Equatable {
        /// 2026-11-26.
        public var day: String
        public var epochBits: Int
        /// The badges' version at the server (issuing, revoking, rekeying move it).
        public var version: Int64
        public var serials: [String]
        /// Each badge's number (unique in the site, stable).
        public var numbers: [UInt32]
        /// The day's first epoch's start (Unix seconds) and how many epochs start in the day.
        public var firstEpoch: UInt32
        public var epochs: Int
        /// Base64 of the ids, 4 bytes each (major, minor; big-endian), one row of badges an epoch.
        public var ids: String

        public init(
            day: String,
            epochBits: Int,
            version: Int64,
            serials: [String],
            numbers: [UInt32],
            firstEpoch: UInt32,
            epochs: Int,
            ids: String
        ) {
            self.day = day
            self.epochBits = epochBits
            self.version = version
            self.serials = serials
            self.numbers = numbers
            self.firstEpoch = firstEpoch
            self.epochs = epochs
            self.ids = ids
        }
    }

    /// `GET /v1/site`: the published BeaconMap.
    public struct PublishedSite: Codable, Sendable, Equatable {
        public var site: String
        public var file: String
        public var digest: String
        public var publishedAt: String?
        /// The BeaconMap YAML.
        public var source: String
        /// The PEM trust list the map names, when it names one.
        public var trustList: String?

        public init(
            site: String,
            file: String,
            digest: String,
            publishedAt: String? = nil,
            source: String,
            trustList: String? = nil
        ) {
            self.site = site
            self.file = file
            self.digest = digest
            self.publishedAt = publishedAt
            self.source = source
            self.trustList = trustList
        }
    }

    /// The API's encoder: sorted keys, slashes as they are.
    public static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }()

    /// Reads an answer's body as one of these types; nil when it is not that.
    public static func decode<T: Decodable>(_ type: T.Type, from body: [UInt8]) -> T? {
        try? JSONDecoder().decode(type, from: Data(body))
    }
}

/// An optional that is encoded as null rather than left out (clients expect the key), and decoded
/// as nil when null or missing.
@propertyWrapper
public struct Null<Wrapped: Codable>: Codable {
    public var wrappedValue: Wrapped?

    public init(wrappedValue: Wrapped?) { self.wrappedValue = wrappedValue }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        wrappedValue = container.decodeNil() ? nil : try container.decode(Wrapped.self)
    }
}

extension KeyedDecodingContainer {
    /// A `@Null` field whose key is missing is nil, as an optional's would be.
    public func decode<T>(_ type: Null<T>.Type, forKey key: Key) throws -> Null<T> {
        try decodeIfPresent(type, forKey: key) ?? Null(wrappedValue: nil)
    }
}

extension Null: Sendable where Wrapped: Sendable {
}

extension Null: Equatable where Wrapped: Equatable {}

import Foundation
import TracerVerification

/// The API's JSON bodies as types (encoded with sorted keys; a nil marked `@Null` is written as
/// null, as clients expect the key). The hot routes (a device's status, exposures, the watch)
/// keep the store's own writer: their bodies are the store's values.
enum Responses {
    /// `GET /health`.
    struct Health: Encodable {
        var status: String
        var storeToken: Int64?
        var uptimeSeconds: Int?
        @Null var site: String?
        var error: ErrorBody.Detail?
    }

    /// `GET /v1/features`: what this site has on.
    struct Features: Encodable {
        struct Exposure: Encodable {
            var radiusMetres: Double
            var windowMinutes: Double
            var lookbackDays: Double
            var separation: String
        }

        var selfReport = true
        var verification = "ocr"
        var questionnaire = ["symptoms", "tested"]
        var exposureNotifications = true
        var responses = true
        var watch = true
        var dashboard = true
        var kioskDeviceLookup = true
        @Null var site: String?
        var exposure: Exposure
        var retentionDays = 14
        var maxUploadBytes: Int
    }

    /// `GET /v1/beacons`: the site and every anchor with its occupancy and exposures.
    struct Beacons: Encodable {
        struct Beacon: Encodable {
            var key: String
            var occupancy: Int
            var exposures: Int
            var exposedDevices: Int
            var lastHeard: String?
            var kind: String?
            var room: String?
            var name: String?
            var position: [Double]?
        }

        struct Site: Encodable {
            var name: String
            var rooms: [Room]
        }

        struct Room: Encodable {
            var key: String
            var name: String
            @Null var building: String?
            @Null var floor: Int?
            var use: String
            var outline: [[Double]]
        }

        var beacons: [Beacon]
        var occupancyWindowSeconds: Double
        var generatedAt: String
        var site: Site?
    }

    /// `GET /v1/responses`: accepted reports of 14 days under rotated ids.
    struct PublicResponses: Encodable {
        struct Entry: Encodable {
            var id: String
            var reportedOn: String
            var collectedOn: String?
            var answers: [String: Bool]?
        }

        var days = 14
        var rotatedOn: String
        var responses: [Entry]
    }

    /// `POST /v1/reports`: what became of the report (201, 200) or why not (in a 422's body).
    struct ReportOutcome: Encodable, Sendable {
        var accepted: Bool
        var reportId: String?
        var deviceId: String?
        var created: Bool?
        var status: String?
        var flagging: String?
        /// True when nothing was recorded on purpose (`dryRun`).
        var dryRun: Bool?
        /// `accepted`, `pending` (held for the health team's review) or `rejected`.
        var decision: String?
        /// Why it waits for review (the doubtful rules).
        var doubts: [String]?
        var rules: [Rule]
        @Null var collectedAt: String?
    }

    /// A verification rule as the API shows it (confidences to a tenth).
    struct Rule: Encodable, Sendable {
        struct Evidence: Encodable, Sendable {
            var text: String
            var confidence: Double
            var context: String
        }

        var name: String
        var passed: Bool
        var detail: String
        /// A failure a reviewer could overrule.
        var doubtful: Bool
        var evidence: [Evidence]

        init(_ rule: VerificationRule) {
            name = rule.name
            passed = rule.passed
            detail = rule.detail
            doubtful = rule.doubtful
            evidence = rule.evidence.map {
                Evidence(text: $0.text, confidence: ($0.confidence * 10).rounded() / 10, context: $0.context)
            }
        }
    }

    /// Every error: `{"error": {"code", "message"}}`, with a rejected report's outcome beside it.
    struct ErrorBody: Encodable {
        struct Detail: Encodable {
            var code: String
            var message: String
        }

        var error: Detail
        var outcome: ReportOutcome?

        func encode(to encoder: any Encoder) throws {
            // A rejected report's fields sit beside `error`, not under a key of their own.
            try outcome?.encode(to: encoder)
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(error, forKey: .error)
        }

        enum Key: String, CodingKey { case error }
    }

    /// `GET /v1/kiosks`: each replicating kiosk's sync state.
    struct Kiosks: Encodable {
        struct Kiosk: Encodable {
            var anchor: String
            @Null var room: String?
            @Null var lastSeen: String?
            @Null var secondsSinceSeen: Double?
            var silent: Bool
            var backlog: Int64
            @Null var backlogOldest: String?
            /// How far behind the site store is: the age of the oldest change still queued.
            var lagSeconds: Double
            @Null var clockOffsetSeconds: Double?
            var clockWarning: Bool
            var documents: Int64
            var refused: Int64
        }
        var kiosks: [Kiosk]
        var silentAfterSeconds: Double
        var generatedAt: String
    }

    /// `GET /v1/site`: the published BeaconMap.
    struct PublishedSite: Codable, Sendable, Equatable {
        var site: String
        var file: String
        var digest: String
        var publishedAt: String?
        /// The BeaconMap YAML.
        var source: String
        /// The PEM trust list the map names, when it names one.
        var trustList: String?
    }

    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }()
}

/// An optional that is encoded as null rather than left out.
@propertyWrapper
struct Null<Wrapped: Encodable>: Encodable {
    var wrappedValue: Wrapped?

    init(wrappedValue: Wrapped?) { self.wrappedValue = wrappedValue }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}

extension Null: Sendable where Wrapped: Sendable {
}

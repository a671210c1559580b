extension Responses {
    /// Every `error.code` the API answers with (`{"error": {"code", "message"}}`, and the live
    /// stream's `error` event): stable words a client may branch on, listed in the OpenAPI document
    /// (`ErrorDetail`), which a test holds to this list. The message is for people; the code is for
    /// programs.
    public enum ErrorCode: String, CaseIterable, Sendable {
        /// The request is malformed: a query, a body or a path the API does not take.
        case badRequest = "bad_request"
        /// No token, or a token the site does not know (or revoked).
        case unauthorized
        /// A token whose role may not do this.
        case forbidden
        /// No such route, document, report or link.
        case notFound = "not_found"
        case methodNotAllowed = "method_not_allowed"
        /// The body is over what the route takes.
        case tooLarge = "too_large"
        case unsupportedMediaType = "unsupported_media_type"
        /// Too many wrong tokens or link codes from one address in a minute.
        case tooManyRequests = "too_many_requests"
        /// A document that exists already.
        case conflict
        /// The store did not answer (stopped, full, locked): try again.
        case storeUnavailable = "store_unavailable"
        /// Any other 5xx the framework raised.
        case unavailable
        /// A bug, logged on the server.
        case `internal`
        /// The server could not read or write a file it keeps (an upload's image).
        case io
        /// The OCR pool is full or timed out: try again shortly.
        case busy
        /// A self-report the verification rejected (its outcome beside the error).
        case rejected
        /// Well-formed, refused on what it says: a push subscription whose host, port or key
        /// tracer will not use, or a request the exposure engine cannot do as asked.
        case refused
        /// An upload that is not an image that can be read.
        case unreadableImage = "unreadable_image"
        /// A report's image that is not on this server (past 72 hours, another server's, or
        /// deleted at the decision).
        case noImage = "no_image"
        /// A self-report that names no device (give `deviceId`, or `anchor` on a kiosk).
        case noReporter = "no_reporter"
        /// A kiosk's self-report when no single device was at the kiosk.
        case noSingleDevice = "no_single_device"
        /// An image reported before and decided already: nothing was recorded again.
        case decidedBefore = "decided_before"
        /// A review of a report that is not held for one.
        case notPending = "not_pending"
        /// Flagging asked of a report that is not accepted (pending, denied or revoked): 409.
        case notAccepted = "not_accepted"
        /// A one-time link's code that was used already (410).
        case linkUsed = "link_used"
        /// A kiosk's token sending another kiosk's documents.
        case wrongKiosk = "wrong_kiosk"
        /// No site is published on the server.
        case noSite = "no_site"
        /// No badge is issued at the site.
        case noBadges = "no_badges"
        /// A badge day outside those the site keeps.
        case noDay = "no_day"
        /// No kiosk heard another anchor of the map in the span asked.
        case noHearings = "no_hearings"
        /// The live stream's token expired (the stream ends).
        case tokenExpired = "token_expired"
        /// The live stream's store failed (the stream ends).
        case storeError = "store_error"
    }
}

extension Responses {
    /// Every error: `{"error": {"code", "message"}}`, with a rejected report's outcome beside it.
    public struct ErrorBody: Codable, Sendable {
        public struct Detail: Codable, Sendable {
            public var code: String
            public var message: String

            public init(
                code: String,
                message: String
            ) {
                self.code = code
                self.message = message
            }

            public init(_ code: ErrorCode, message: String) {
                self.init(code: code.rawValue, message: message)
            }
        }

        public var error: Detail
        public var outcome: ReportOutcome?

        public func encode(to encoder: any Encoder) throws {
            // A rejected report's fields sit beside `error`, not under a key of their own.
            try outcome?.encode(to: encoder)
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(error, forKey: .error)
        }

        public init(from decoder: any Decoder) throws {
            error = try decoder.container(keyedBy: Key.self).decode(Detail.self, forKey: .error)
            // Beside `error` when the error is a rejected report's.
            outcome = try? ReportOutcome(from: decoder)
        }

        enum Key: String, CodingKey { case error }

        public init(
            error: Detail,
            outcome: ReportOutcome? = nil
        ) {
            self.error = error
            self.outcome = outcome
        }
    }
}

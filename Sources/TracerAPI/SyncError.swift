/// The one error type of replication: a code, and a message safe to log.
public struct SyncError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// A batch that is not one (the server answers 400).
        case badRequest
        /// The server's answer is not what replication expects.
        case protocolError
        /// The token was refused (401): replication stops until the token file changes.
        case unauthorized
        /// The token may not replicate at all (403 for the whole request).
        case forbidden
        /// The server could not be reached, or answered 5xx: retried with backoff.
        case unavailable
        /// An option or file given at start is unusable.
        case badInput
        /// The server has no such thing (404: no badges at the site).
        case notFound
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

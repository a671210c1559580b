/// Why flagging, revoking or notifying failed: a code, the report or address concerned, and a
/// message safe to log (no device ids).
public struct ExposureError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Code: String, Sendable {
        /// There is no such report.
        case noReport
        /// The report is not accepted (pending, denied, revoked) or not readable.
        case notAccepted
        /// A webhook could not be reached or refused the delivery.
        case delivery
        /// A command-line value is unusable.
        case badInput
    }

    public var code: Code
    public var message: String
    /// The report id, or the webhook's URL.
    public var context: String?

    public init(_ code: Code, _ message: String, reportID: String? = nil) {
        self.code = code
        self.message = message
        self.context = reportID
    }

    public var description: String { message }
}

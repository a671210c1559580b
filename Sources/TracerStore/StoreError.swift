/// The one error type of the document store: a code, what it concerns, and a message safe to log.
public struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is.
    public enum Code: String, Sendable, Equatable {
        /// A document or collection path is malformed or breaks a limit.
        case invalidPath
        /// A field path is malformed.
        case invalidFieldPath
        /// A value cannot be stored (reserved name, nested array, too deep, wrong sentinel use).
        case invalidValue
        /// A query is malformed (operator arguments, cursors, limits).
        case invalidQuery
        /// Text that should be JSON is not.
        case invalidJSON
        /// A document is over the 1 MiB limit.
        case tooLarge
        /// `update` or a precondition found no document.
        case notFound
        /// `create` found a document already there.
        case alreadyExists
        /// A transaction could not commit after its retries.
        case aborted
        /// A resume token is older than the change log still kept.
        case tokenExpired
        /// SQLite reported an error.
        case sqlite
        /// PostgreSQL reported an error, or could not be reached.
        case postgres
        /// The store's file was deleted or replaced while it was open.
        case storeGone
    }

    /// What kind of failure this is.
    public var code: Code
    /// What went wrong, in one line.
    public var message: String
    /// The path, field, call or SQL statement it concerns, when there is one.
    public var context: String?
    /// SQLite's extended result code, for `.sqlite` errors.
    public var sqliteCode: Int32?
    /// PostgreSQL's SQLSTATE (`40001`, `23505`, `57P01`, …), for `.postgres` errors the server
    /// answered; nil when none came (a connection that failed, libpq's own errors).
    public var sqlstate: String?

    /// Makes an error.
    public init(
        _ code: Code,
        _ message: String,
        context: String? = nil,
        sqliteCode: Int32? = nil,
        sqlstate: String? = nil
    ) {
        self.code = code
        self.message = message
        self.context = context
        self.sqliteCode = sqliteCode
        self.sqlstate = sqlstate
    }

    /// One line: the message, then what it concerns.
    public var description: String {
        guard let context else { return message }
        return "\(message) (\(context))"
    }
}

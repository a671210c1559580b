/// Every `error.code` the API answers with (`{"error": {"code", "message"}}`, and the live
/// stream's `error` event), generated from the document's list (`ErrorDetail`): stable words a
/// client may branch on. The message is for people; the code is for programs.
///
/// | code | when |
/// |---|---|
/// | `bad_request` | a query, a body or a path the API does not take |
/// | `unauthorized` | no token, or one the site does not know (or revoked) |
/// | `forbidden` | a token whose role may not do this |
/// | `not_found` | no such route, document, report or link |
/// | `method_not_allowed`, `too_large`, `unsupported_media_type` | as their statuses say |
/// | `too_many_requests` | too many wrong tokens or link codes from one address in a minute |
/// | `conflict` | a document that exists already |
/// | `store_unavailable` | the store did not answer (stopped, full, locked): try again |
/// | `unavailable` | any other 5xx the framework raised |
/// | `internal` | a bug, logged on the server |
/// | `io` | the server could not read or write a file it keeps (an upload's image) |
/// | `busy` | the OCR pool is full or timed out: try again shortly |
/// | `rejected` | a self-report the verification rejected (its outcome beside the error) |
/// | `refused` | well-formed, refused on what it says (a push subscription's host, an engine request) |
/// | `unreadable_image` | an upload that is not an image that can be read |
/// | `no_image` | a report's image that is not on this server (past 72 hours, another's, deleted) |
/// | `no_reporter`, `no_single_device` | a self-report that names no device, or a kiosk's with no single device near |
/// | `decided_before` | an image reported before and decided already: nothing recorded again |
/// | `not_pending`, `not_accepted` | a review of a report not held; flagging one not accepted (409) |
/// | `link_used` | a one-time link's code used already (410) |
/// | `link_withdrawn` | a one-time link whose access was withdrawn (the token revoked, "Forget this phone"; 410) |
/// | `wrong_kiosk` | a kiosk's token sending another kiosk's documents |
/// | `no_site`, `no_badges`, `no_day`, `no_hearings` | nothing published, issued, kept or heard |
/// | `token_expired`, `store_error` | the live stream's token expired, or its store failed (the stream ends) |
public typealias ErrorCode = Components.Schemas.ErrorDetail.CodePayload.Value1Payload

extension Components.Schemas.ErrorDetail {
    public init(_ code: ErrorCode, message: String) {
        self.init(code: .init(value1: code, value2: code.rawValue), message: message)
    }

    /// The code as sent (also one this client does not know).
    public var codeText: String { code.value1?.rawValue ?? code.value2 ?? "" }
}

extension Components.Schemas._Error {
    public init(_ code: ErrorCode, message: String) { self.init(error: .init(code, message: message)) }
}

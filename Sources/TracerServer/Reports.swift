import Foundation
import Hummingbird
import MultipartKit
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import TracerAPI
import TracerExposure
import TracerModel
import TracerOCR
import TracerReports
import TracerStore
import TracerVerification

import class OpenAPIRuntime.HTTPBody

/// A `multipart/form-data` body's parts (RFC 7578), parsed by MultipartKit.
struct Form {
    var parts: [MultipartPart]

    subscript(_ name: String) -> MultipartPart? { parts.first { $0.name == name } }

    /// The boundary of a `multipart/form-data; boundary=…` content type, or nil.
    static func boundary(_ contentType: String) -> String? {
        let fields = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard fields.first?.lowercased() == "multipart/form-data" else { return nil }
        return parameter("boundary", in: fields.dropFirst().joined(separator: ";")).flatMap {
            (1...70).contains($0.utf8.count) ? $0 : nil
        }
    }

    /// The most parts a form may have: a report has three (image, deviceId, answers).
    static let maxParts = 16
    /// The most header lines in all its parts.
    static let maxHeaders = 64

    init(_ body: ByteBuffer, boundary: String) throws {
        // Counted before parsing: 200,000 empty parts cost MultipartKit seconds of a thread
        // (and the form's array), where counting delimiters costs a pass over the bytes.
        let delimiter = Array(("--" + boundary).utf8)
        let delimiters = Self.offsets(of: delimiter, in: body, upTo: Self.maxParts + 2)
        guard delimiters.count <= Self.maxParts + 1 else {
            throw APIError(
                .contentTooLarge,
                .tooLarge,
                "the multipart body has more than \(Self.maxParts) parts (a report has image, deviceId and answers)"
            )
        }
        // MultipartKit 4.7.1 traps on a header name byte of 0x80 or more (it indexes a table
        // of 128 flags with it): found by FuzzTests, a crash any kiosk could send. Such a name is
        // refused here, before the parser sees it.
        guard Self.headerNamesAreASCII(body, after: delimiters.map { $0 + delimiter.count }) else {
            throw APIError.badRequest("a part's header name is not ASCII")
        }
        let parser = MultipartParser(boundary: boundary)
        var parts: [MultipartPart] = []
        var headers = HTTPHeaders()
        var content = ByteBuffer()
        var headerCount = 0
        parser.onHeader = {
            headerCount += 1
            if headerCount <= Self.maxHeaders { headers.add(name: $0, value: $1) }
        }
        parser.onBody = { content.writeBuffer(&$0) }
        parser.onPartComplete = {
            parts.append(MultipartPart(headers: headers, body: content))
            headers = HTTPHeaders()
            content = ByteBuffer()
        }
        do {
            try parser.execute(body)
        } catch {
            throw APIError.badRequest("the multipart body is malformed (boundary \(boundary))")
        }
        guard !parts.isEmpty else {
            throw APIError.badRequest("the multipart body has no parts (boundary \(boundary))")
        }
        guard headerCount <= Self.maxHeaders else {
            throw APIError.badRequest("the multipart body has more than \(Self.maxHeaders) part headers")
        }
        self.parts = parts
    }

    /// Where `needle` occurs in `body` (not overlapping), the first `limit` places: memchr for its
    /// first byte, then a compare (a pass over 11 MB of 200,000 parts is milliseconds; a loop
    /// over the bytes took seconds in a debug build).
    static func offsets(of needle: [UInt8], in body: ByteBuffer, upTo limit: Int) -> [Int] {
        guard let first = needle.first else { return [] }
        return body.withUnsafeReadableBytes { bytes in
            guard let base = bytes.baseAddress, bytes.count >= needle.count else { return [] }
            var found: [Int] = []
            var i = 0
            let last = bytes.count - needle.count
            while i <= last, found.count < limit {
                guard let hit = memchr(base + i, Int32(first), last - i + 1) else { break }
                let at = base.distance(to: UnsafeRawPointer(hit))
                if memcmp(base + at, needle, needle.count) == 0 {
                    found.append(at)
                    i = at + needle.count
                } else {
                    i = at + 1
                }
            }
            return found
        }
    }

    /// Whether every header line after each delimiter (up to the blank line that ends the part's
    /// headers) has a name, the bytes before its first colon, in ASCII.
    static func headerNamesAreASCII(_ body: ByteBuffer, after starts: [Int]) -> Bool {
        body.withUnsafeReadableBytes { bytes in
            for start in starts {
                var i = start
                var inName = true
                while i < bytes.count {
                    let b = bytes[i]
                    if b == UInt8(ascii: "\n") {
                        // A blank line (CRLF CRLF) ends the headers.
                        if i >= 3, bytes[i - 1] == 13, bytes[i - 2] == 10, bytes[i - 3] == 13 { break }
                        inName = true
                    } else if b == UInt8(ascii: ":") {
                        inName = false
                    } else if inName, b >= 0x80 {
                        return false
                    }
                    i += 1
                }
            }
            return true
        }
    }

    /// A part's text.
    func text(_ name: String) -> String? { self[name].map { String(buffer: $0.body) } }

    /// The file name a part was sent with.
    static func filename(_ part: MultipartPart) -> String? {
        part.headers.first(name: "Content-Disposition").flatMap { parameter("filename", in: $0) }
    }

    /// `name="value"` or `name=value` among `;`-separated fields.
    static func parameter(_ name: String, in value: String) -> String? {
        for field in value.split(separator: ";").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            guard field.lowercased().hasPrefix(name + "=") else { continue }
            var v = String(field.dropFirst(name.count + 1))
            if v.hasPrefix("\""), v.hasSuffix("\""), v.count >= 2 { v = String(v.dropFirst().dropLast()) }
            return v
        }
        return nil
    }
}

extension API {
    /// Parts: `image` (the file, required), `deviceId` (a kiosk's or admin's reporter), `anchor`
    /// (instead: the device at immediate range of that kiosk), `answers` (JSON:
    /// `{"symptoms": true, "tested": false}`), `dryRun` (`true`: verify and show, record nothing:
    /// what `tracer self-report --server` asks before the person confirms). 201 accepted, 200
    /// already reported (or a dry run that would be accepted), 422 rejected with the failed
    /// rules, 413 over the size limit, 415 not a form.
    func report(_ request: Request, _ context: TracerContext, _ who: Principal) async throws -> Response {
        let started = Date()
        let (form, image) = try await reportForm(request)
        let answers = try Self.answers(form)
        let device = try await reporter(form, who, since: started)
        let data = Data(buffer: image.body)
        let page = try await read(data, name: Form.filename(image) ?? "upload")
        let desk = self.desk
        let read = desk.verify(page, now: started)
        let verification = try await store.reading { db in try desk.withHistory(read, device: device ?? "", in: db) }
        if form.text("dryRun") == "true", let status = desk.disposition(verification) {
            return JSONBody.response(
                encoding: Components.Schemas.ReportOutcome(
                    accepted: status == .accepted,
                    deviceId: device,
                    status: .init(rawValue: status.rawValue),
                    dryRun: true,
                    decision: .init(rawValue: status.rawValue),
                    doubts: verification.doubts,
                    rules: verification.rules.map(Components.Schemas.Rule.init),
                    collectedAt: Self.iso(verification.collectedAt)
                ),
                status: .ok
            )
        }
        let reporter = device ?? ""
        let outcome = try await desk.submit(
            verification,
            imageSHA256: Digest.sha256Hex(data),
            image: data,
            device: reporter,
            answers: answers,
            on: store
        )
        return try Self.response(outcome, context)
    }

    /// The form, its size checked before and after it is read, and its image part.
    func reportForm(_ request: Request) async throws -> (Form, MultipartPart) {
        guard let contentType = request.headers[.contentType], let boundary = Form.boundary(contentType) else {
            throw APIError(
                .unsupportedMediaType,
                .unsupportedMediaType,
                "a report is multipart/form-data with an 'image' part, not \(request.headers[.contentType] ?? "no content type")"
            )
        }
        if let length = request.headers[.contentLength].flatMap(Int.init), length > Self.maxUpload {
            throw APIError(
                .contentTooLarge,
                .tooLarge,
                "the upload is \(length) bytes; the limit is \(Self.maxUpload)"
            )
        }
        // Over the limit (chunked, or a Content-Length that lied) is a 413 through APIError.from.
        let buffer = try await request.body.collect(upTo: Self.maxUpload)
        let form = try Form(buffer, boundary: boundary)
        guard let image = form["image"], image.body.readableBytes > 0 else {
            throw APIError.badRequest("the form has no 'image' part (the photographed or screenshotted result)")
        }
        if image.body.readableBytes > ImageLimits().maxBytes {
            throw APIError(
                .contentTooLarge,
                .tooLarge,
                "the image is \(image.body.readableBytes) bytes; the limit is \(ImageLimits().maxBytes)"
            )
        }
        return (form, image)
    }

    /// The `answers` part: `{"symptoms": true, "tested": false}`, either or both, or none.
    static func answers(_ form: Form) throws -> [String: Bool] {
        var answers: [String: Bool] = [:]
        guard let text = form.text("answers") else { return answers }
        let value: Value
        do { value = try JSON.parse(text) } catch {
            throw APIError.badRequest("the 'answers' part is not a JSON object: \(text.prefix(80))")
        }
        guard case .map(let object) = value else {
            throw APIError.badRequest("the 'answers' part is not a JSON object: \(text.prefix(80))")
        }
        for (key, value) in object {
            guard ["symptoms", "tested"].contains(key), case .bool(let b) = value else {
                throw APIError.badRequest(
                    "answers takes \"symptoms\" and \"tested\" as true or false, not \"\(key.prefix(40))\""
                )
            }
            answers[key] = b
        }
        return answers
    }

    /// Who reports: a device token's own device; else the `deviceId` part, or the one device at
    /// immediate range of the `anchor` kiosk.
    func reporter(_ form: Form, _ who: Principal, since started: Date) async throws -> String? {
        var device = try form.text("deviceId").map { try Self.key($0, "device id") }
        if who.role == .device {
            if let device, device != who.deviceID {
                throw APIError.forbidden("a device token reports for its own device only")
            }
            device = who.deviceID
        }
        let anchor = try form.text("anchor").map { try Self.key($0, "anchor key") }
        guard device != nil || anchor != nil else {
            // A well-formed form that names nobody (the document cannot say that an admin's
            // needs a device and a device token's does not): refused as a report, like one
            // from a kiosk where nobody stood.
            throw APIError(
                .unprocessableContent,
                .noReporter,
                "give a 'deviceId' part, or an 'anchor' part on a kiosk"
            )
        }
        let (desk, named) = (self.desk, device)
        do {
            return try await store.reading { db in
                try desk.reporter(device: named, kiosk: anchor, since: started, in: db)
            }
        } catch let e as SelfReportError {
            throw APIError(
                .unprocessableContent,
                .noSingleDevice,
                e.code == .noDeviceAtKiosk
                    ? "\(e.message) in the 30 s before the upload: give deviceId" : "\(e.message): give deviceId"
            )
        }
    }

    /// The image read by OCR; a pool too busy, or too slow, is a 503 to retry; not an image, 422.
    func read(_ data: Data, name: String) async throws -> OCRPage {
        do {
            return try await ocr.read(data: data, name: name)
        } catch let e as OCRError where e.code == .busy {
            var error = APIError(.serviceUnavailable, .busy, e.description)
            error.headers[.retryAfter] = "\(Self.ocrRetryAfter)"
            throw error
        } catch let e as OCRError where e.code == .timeout {
            // Not the client's fault: a server too loaded to read it in time. Try again later.
            var error = APIError(.serviceUnavailable, .busy, e.description)
            error.headers[.retryAfter] = "\(Self.ocrRetryAfter * 5)"
            throw error
        } catch let e as OCRError where e.code == .badImage {
            // Not an image, a truncated one, too many pixels: the client's input.
            throw APIError(.unprocessableContent, .unreadableImage, e.description)
        }
    }

    /// What became of a submitted report, as the answer: 201 or 200 recorded, 202 held for the
    /// health team, 422 decided before or rejected.
    static func response(_ outcome: SelfReportDesk.Outcome, _ context: TracerContext) throws -> Response {
        switch outcome {
        case .recorded(let recorded, let verification, let flagging, let flagged):
            if !flagged { context.logger.error("\(flagging)") }
            return JSONBody.response(
                encoding: Components.Schemas.ReportOutcome(
                    accepted: true,
                    reportId: recorded.id,
                    deviceId: recorded.deviceID,
                    created: recorded.created,
                    status: .accepted,
                    flagging: flagging,
                    flagged: flagged,
                    decision: .accepted,
                    rules: verification.rules.map(Components.Schemas.Rule.init),
                    collectedAt: iso(verification.collectedAt)
                ),
                status: recorded.created ? .created : .ok
            )
        case .held(let r, let verification):
            return JSONBody.response(
                encoding: Components.Schemas.ReportOutcome(
                    accepted: false,
                    reportId: r.id,
                    deviceId: r.deviceID,
                    created: r.created,
                    status: .pending,
                    flagging: "sent to the health team: nobody is flagged until they approve it",
                    decision: .pending,
                    doubts: verification.doubts,
                    rules: verification.rules.map(Components.Schemas.Rule.init),
                    collectedAt: iso(verification.collectedAt)
                ),
                status: .accepted
            )
        case .decidedBefore(let r, _):
            throw APIError(
                .unprocessableContent,
                .decidedBefore,
                "this image was reported before and \(r.status.rawValue) (report \(r.id)); nothing was recorded again"
            )
        case .rejected(let verification):
            var e = APIError(
                .unprocessableContent,
                .rejected,
                "rejected: " + verification.reasons.map { "\($0.name) (\($0.detail))" }.joined(separator: "; ")
                    + "; nothing was recorded"
            )
            e.outcome = Components.Schemas.ReportOutcome(
                accepted: false,
                decision: .rejected,
                rules: verification.rules.map(Components.Schemas.Rule.init),
                collectedAt: iso(verification.collectedAt)
            )
            throw e
        }
    }

    /// Seconds a client is told to wait when every OCR thread is busy: about two pages' time.
    static let ocrRetryAfter = 2

    static func iso(_ date: Date?) -> String? {
        date.map { Timestamp(seconds: $0.timeIntervalSince1970).iso8601Seconds }
    }
}

typealias ReviewList = Operations.ReviewList.Output.Ok.Body.JsonPayload

extension API {
    /// `GET /v1/reports?status=pending` (the default; `accepted`, `denied`, `revoked`, `all`): the
    /// reports with their evidence, newest decisions last.
    func reviewList(_ wanted: Operations.ReviewList.Input.Query.StatusPayload, in db: StoreReader) throws -> ReviewList
    {
        // `unflagged`: accepted reports whose flagging failed, nobody near them told yet.
        let unflagged = wanted == .unflagged
        let status = unflagged ? .accepted : Report.Status(rawValue: wanted.rawValue)
        let listed = try desk.reviewList(status, unflaggedOnly: unflagged, in: db)
        return ReviewList(listed, review: desk.policy.review.rawValue)
    }

    /// `GET /v1/reports/{id}/image`: a pending report's image, for the reviewer's eyes only (never
    /// cached); 404 once it is decided or past 72 hours, or when another server of the site
    /// received it.
    func reviewImage(_ id: String, in db: StoreReader) throws -> Data {
        let doc = try db.get(Collections.report(id))
        guard doc.exists, let report = try? Report(doc) else {
            throw APIError(.notFound, .notFound, "no report \(id)")
        }
        guard report.status == .pending, let data = try desk.images?.image(id) else {
            throw APIError(
                .notFound,
                .noImage,
                report.status == .pending
                    ? "report \(id)'s image is not on this server: past 72 hours, or received by another server of the site"
                    : "report \(id) is \(report.status.rawValue): its image was deleted at the decision"
            )
        }
        return data
    }

    /// The image as its type, by its first bytes (the reader accepts these four only).
    static func image(_ data: Data) -> Operations.ReviewImage.Output.Ok.Body {
        let b = [UInt8](data.prefix(12))
        let body = HTTPBody(data)
        if b.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return .png(body) }
        if b.starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg(body) }
        if b.starts(with: [0x49, 0x49, 0x2A, 0x00]) || b.starts(with: [0x4D, 0x4D, 0x00, 0x2A]) {
            return .imageTiff(body)
        }
        if b.count >= 12, b.starts(with: [0x52, 0x49, 0x46, 0x46]), Array(b[8..<12]) == [0x57, 0x45, 0x42, 0x50] {
            return .imageWebp(body)
        }
        return .binary(body)
    }

    /// `POST /v1/reports/{id}/approve` and `/deny`, with an optional note.
    func decide(
        _ id: String,
        approve: Bool,
        _ note: String?,
        _ who: Principal
    ) async throws -> Components.Responses.Decided.Body.JsonPayload {
        let desk = self.desk
        do {
            let decided = try await desk.decide(
                id,
                approve: approve,
                by: .init(name: who.name, tokenID: who.tokenID),
                note: note,
                on: store
            )
            return Components.Responses.Decided.Body.JsonPayload(decided.report, outcome: decided.line)
        } catch let e as ReviewError {
            switch e.code {
            case .notFound: throw APIError(.notFound, .notFound, e.message)
            case .notPending: throw APIError(.conflict, .notPending, e.message)
            case .io: throw APIError(.internalServerError, .io, e.message)
            }
        }
    }
}

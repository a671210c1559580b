import Foundation
import Hummingbird
import MultipartKit
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import TracerExposure
import TracerModel
import TracerOCR
import TracerReports
import TracerStore
import TracerVerification

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

    init(_ body: ByteBuffer, boundary: String) throws {
        let parser = MultipartParser(boundary: boundary)
        var parts: [MultipartPart] = []
        var headers = HTTPHeaders()
        var content = ByteBuffer()
        parser.onHeader = { headers.add(name: $0, value: $1) }
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
        self.parts = parts
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
        guard let contentType = request.headers[.contentType], let boundary = Form.boundary(contentType) else {
            throw APIError(
                .unsupportedMediaType,
                "unsupported_media_type",
                "a report is multipart/form-data with an 'image' part, not \(request.headers[.contentType] ?? "no content type")"
            )
        }
        if let length = request.headers[.contentLength].flatMap(Int.init), length > Self.maxUpload {
            throw APIError(
                .contentTooLarge,
                "too_large",
                "the upload is \(length) bytes; the limit is \(Self.maxUpload)"
            )
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: Self.maxUpload)
        } catch let e as HTTPError where e.status == .contentTooLarge {
            throw APIError(.contentTooLarge, "too_large", "the upload is over the limit of \(Self.maxUpload) bytes")
        }
        let form = try Form(buffer, boundary: boundary)
        guard let image = form["image"], image.body.readableBytes > 0 else {
            throw APIError.badRequest("the form has no 'image' part (the photographed or screenshotted result)")
        }
        if image.body.readableBytes > ImageLimits().maxBytes {
            throw APIError(
                .contentTooLarge,
                "too_large",
                "the image is \(image.body.readableBytes) bytes; the limit is \(ImageLimits().maxBytes)"
            )
        }
        var answers: [String: Bool] = [:]
        if let text = form.text("answers") {
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
        }
        var device = try form.text("deviceId").map { try Self.key($0, "device id") }
        if who.role == .device {
            if let device, device != who.deviceID {
                throw APIError.forbidden("a device token reports for its own device only")
            }
            device = who.deviceID
        }
        let anchor = try form.text("anchor").map { try Self.key($0, "anchor key") }
        guard device != nil || anchor != nil else {
            throw APIError.badRequest("give a 'deviceId' part, or an 'anchor' part on a kiosk")
        }
        do {
            device = try desk.reporter(device: device, kiosk: anchor, since: started)
        } catch let e as SelfReportError {
            throw APIError(
                .unprocessableContent,
                "no_single_device",
                e.code == .noDeviceAtKiosk
                    ? "\(e.message) in the 30 s before the upload: give deviceId" : "\(e.message): give deviceId"
            )
        }

        let data = Data(buffer: image.body)
        let page: OCRPage
        do {
            page = try await ocr.read(data: data, name: Form.filename(image) ?? "upload")
        } catch let e as OCRError where e.code == .busy {
            var error = APIError(.serviceUnavailable, "busy", e.description)
            error.headers[.retryAfter] = "\(Self.ocrRetryAfter)"
            throw error
        } catch let e as OCRError where e.code == .timeout {
            // Not the client's fault: a server too loaded to read it in time. Try again later.
            var error = APIError(.serviceUnavailable, "busy", e.description)
            error.headers[.retryAfter] = "\(Self.ocrRetryAfter * 5)"
            throw error
        } catch let e as OCRError where e.code == .badImage {
            // Not an image, a truncated one, too many pixels: the client's input.
            throw APIError(.unprocessableContent, "unreadable_image", e.description)
        }
        let verification = desk.verify(page, now: started)
        if form.text("dryRun") == "true", verification.accepted {
            return JSONBody.response(
                encoding: Responses.ReportOutcome(
                    accepted: true,
                    deviceId: device,
                    dryRun: true,
                    rules: verification.rules.map(Responses.Rule.init),
                    collectedAt: Self.iso(verification.collectedAt)
                ),
                status: .ok
            )
        }
        let outcome = try desk.submit(
            verification,
            imageSHA256: Digest.sha256Hex(data),
            device: device ?? "",
            answers: answers
        )
        guard case .recorded(let recorded, let verification, let flagging, let flagged) = outcome else {
            guard case .rejected(let verification) = outcome else { preconditionFailure("an outcome is one of two") }
            var e = APIError(
                .unprocessableContent,
                "rejected",
                "rejected: " + verification.failed.map { "\($0.name) (\($0.detail))" }.joined(separator: "; ")
                    + "; nothing was recorded"
            )
            e.outcome = Responses.ReportOutcome(
                accepted: false,
                rules: verification.rules.map(Responses.Rule.init),
                collectedAt: Self.iso(verification.collectedAt)
            )
            throw e
        }
        if !flagged { context.logger.error("\(flagging)") }
        return JSONBody.response(
            encoding: Responses.ReportOutcome(
                accepted: true,
                reportId: recorded.id,
                deviceId: recorded.deviceID,
                created: recorded.created,
                status: Report.Status.accepted.rawValue,
                flagging: flagging,
                rules: verification.rules.map(Responses.Rule.init),
                collectedAt: Self.iso(verification.collectedAt)
            ),
            status: recorded.created ? .created : .ok
        )
    }

    /// Seconds a client is told to wait when every OCR thread is busy: about two pages' time.
    static let ocrRetryAfter = 2

    static func iso(_ date: Date?) -> String? {
        date.map { Timestamp(seconds: $0.timeIntervalSince1970).iso8601Seconds }
    }
}

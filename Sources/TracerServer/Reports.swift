import Foundation
import Hummingbird
import NIOCore
import TracerExposure
import TracerModel
import TracerOCR
import TracerReports
import TracerStore
import TracerVerification

/// A `multipart/form-data` body's parts (RFC 7578), read from memory.
struct Multipart {
    struct Part {
        var name: String
        var filename: String?
        var contentType: String?
        var body: ArraySlice<UInt8>
    }

    var parts: [Part]

    subscript(_ name: String) -> Part? { parts.first { $0.name == name } }

    /// The boundary of a `multipart/form-data; boundary=…` content type, or nil.
    static func boundary(_ contentType: String) -> String? {
        let fields = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard fields.first?.lowercased() == "multipart/form-data" else { return nil }
        for field in fields.dropFirst() where field.lowercased().hasPrefix("boundary=") {
            var b = String(field.dropFirst("boundary=".count))
            if b.hasPrefix("\""), b.hasSuffix("\""), b.count >= 2 { b = String(b.dropFirst().dropLast()) }
            return (1...70).contains(b.utf8.count) ? b : nil
        }
        return nil
    }

    init(_ body: [UInt8], boundary: String) throws {
        let delimiter = Array("--\(boundary)".utf8)
        var positions: [Int] = []
        var i = 0
        // Delimiters start the body or follow CRLF.
        while let found = Self.find(delimiter, in: body, from: i) {
            if found == 0 || (found >= 2 && body[found - 2] == 13 && body[found - 1] == 10) { positions.append(found) }
            i = found + delimiter.count
        }
        guard positions.count >= 2 else {
            throw APIError.badRequest("the multipart body has no parts (boundary \(boundary))")
        }
        parts = []
        for (n, start) in positions.enumerated().dropLast() {
            var from = start + delimiter.count
            // The closing delimiter is followed by "--".
            if body.count >= from + 2, body[from] == 45, body[from + 1] == 45 { break }
            guard body.count >= from + 2, body[from] == 13, body[from + 1] == 10 else {
                throw APIError.badRequest("part \(n + 1) of the multipart body is malformed")
            }
            from += 2
            let end = positions[n + 1] - 2  // before CRLF
            guard let headerEnd = Self.find([13, 10, 13, 10], in: body, from: from), headerEnd <= end else {
                throw APIError.badRequest("part \(n + 1) of the multipart body has no header end")
            }
            let headers = String(decoding: body[from..<headerEnd], as: UTF8.self)
            var part = Part(name: "", filename: nil, contentType: nil, body: body[(headerEnd + 4)..<end])
            for line in headers.split(separator: "\r\n") {
                let pair = line.split(separator: ":", maxSplits: 1)
                guard pair.count == 2 else { continue }
                let value = pair[1].trimmingCharacters(in: .whitespaces)
                switch pair[0].lowercased() {
                case "content-disposition":
                    part.name = Self.parameter("name", in: value) ?? ""
                    part.filename = Self.parameter("filename", in: value)
                case "content-type":
                    part.contentType = value
                default:
                    break
                }
            }
            parts.append(part)
        }
    }

    static func parameter(_ name: String, in value: String) -> String? {
        for field in value.split(separator: ";").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            guard field.lowercased().hasPrefix(name + "=") else { continue }
            var v = String(field.dropFirst(name.count + 1))
            if v.hasPrefix("\""), v.hasSuffix("\""), v.count >= 2 { v = String(v.dropFirst().dropLast()) }
            return v
        }
        return nil
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard let first = needle.first, haystack.count >= needle.count else { return nil }
        var i = start
        let last = haystack.count - needle.count
        while i <= last {
            if haystack[i] == first {
                var j = 1
                while j < needle.count, haystack[i + j] == needle[j] { j += 1 }
                if j == needle.count { return i }
            }
            i += 1
        }
        return nil
    }
}

extension API {
    /// Parts: `image` (the file, required), `deviceId` (a kiosk's or admin's reporter), `anchor`
    /// (instead: the device at immediate range of that kiosk), `answers` (JSON:
    /// `{"symptoms": true, "tested": false}`). 201 accepted, 200 already reported, 422 rejected
    /// with the failed rules, 413 over the size limit, 415 not a form.
    func report(_ request: Request, _ context: TracerContext, _ who: Principal) async throws -> Response {
        let started = Date()
        guard let contentType = request.headers[.contentType], let boundary = Multipart.boundary(contentType) else {
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
        let form = try Multipart(Array(buffer.readableBytesView), boundary: boundary)
        guard let image = form["image"], !image.body.isEmpty else {
            throw APIError.badRequest("the form has no 'image' part (the photographed or screenshotted result)")
        }
        if image.body.count > ImageLimits().maxBytes {
            throw APIError(
                .contentTooLarge,
                "too_large",
                "the image is \(image.body.count) bytes; the limit is \(ImageLimits().maxBytes)"
            )
        }
        var answers: [String: Bool] = [:]
        if let part = form["answers"] {
            let text = String(decoding: part.body, as: UTF8.self)
            guard let object = try? JSONSerialization.jsonObject(with: Data(part.body)) as? [String: Any] else {
                throw APIError.badRequest("the 'answers' part is not a JSON object: \(text.prefix(80))")
            }
            for (key, value) in object {
                guard ["symptoms", "tested"].contains(key), let b = value as? Bool else {
                    throw APIError.badRequest(
                        "answers takes \"symptoms\" and \"tested\" as true or false, not \"\(key.prefix(40))\""
                    )
                }
                answers[key] = b
            }
        }
        let text = { (name: String) in form[name].map { String(decoding: $0.body, as: UTF8.self) } }
        var device = try text("deviceId").map { try Self.key($0, "device id") }
        if who.role == .device {
            if let device, device != who.deviceID {
                throw APIError.forbidden("a device token reports for its own device only")
            }
            device = who.deviceID
        }
        let anchor = try text("anchor").map { try Self.key($0, "anchor key") }
        guard device != nil || anchor != nil else {
            throw APIError.badRequest("give a 'deviceId' part, or an 'anchor' part on a kiosk")
        }
        do {
            device = try desk.reporter(device: device, kiosk: anchor, since: started)
        } catch let e as SelfReportError {
            throw APIError(
                .unprocessableContent,
                "no_single_device",
                e.code == .noDeviceAtKiosk ? "\(e.message) in the 30 s before the upload: give deviceId" : "\(e.message): give deviceId"
            )
        }

        let data = Data(image.body)
        let page: OCRPage
        do {
            page = try await ocr.read(data: data, name: image.filename ?? "upload")
        } catch let e as OCRError where e.code == .busy {
            var error = APIError(.serviceUnavailable, "busy", e.description)
            error.headers[.retryAfter] = "\(Self.ocrRetryAfter)"
            throw error
        } catch let e as OCRError where e.code == .badImage {
            // Not an image, a truncated one, too many pixels: the client's input.
            throw APIError(.unprocessableContent, "unreadable_image", e.description)
        }
        let outcome = try desk.submit(
            desk.verify(page, now: started),
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
            e.extra = JSONBody.data([
                "accepted": false, "rules": verification.ruleObjects, "collectedAt": Self.iso(verification.collectedAt),
            ])
            throw e
        }
        if !flagged { context.logger.error("\(flagging)") }
        let rules = verification.ruleObjects
        let collected = Self.iso(verification.collectedAt)
        return JSONBody.response(
            [
                "accepted": true, "reportId": recorded.id, "deviceId": recorded.deviceID, "created": recorded.created,
                "status": Report.Status.accepted.rawValue, "flagging": flagging, "rules": rules, "collectedAt": collected,
            ],
            status: recorded.created ? .created : .ok
        )
    }

    /// Seconds a client is told to wait when every OCR thread is busy: about two pages' time.
    static let ocrRetryAfter = 2

    static func iso(_ date: Date?) -> Any {
        date.map { Timestamp(seconds: $0.timeIntervalSince1970).iso8601Seconds } ?? NSNull()
    }
}

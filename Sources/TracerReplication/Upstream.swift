import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import Synchronization
import TracerAPI
import TracerBadges
import TracerModel

/// The site server as a kiosk (or a person's command) talks to it: HTTP or HTTPS with
/// AsyncHTTPClient, verified against the system's trust store or `caFile`, with the token read
/// from a file (re-read when the file changes, so that replacing a revoked token needs no
/// restart). Call `shutdown()` when done.
///
/// Several URLs (`https://a,https://b`) name several servers of one site (sharing its store):
/// requests go to one until it fails (no answer, or 502, 503 or 504), then to the next, in turn.
/// A request that failed on one is sent to the next at once: the API's writes are idempotent
/// (a kiosk's batch replayed changes nothing), so a batch whose answer was lost may go to both.
public final class Upstream: AsyncShutdown {
    /// The servers' base URLs, without a trailing slash.
    public let bases: [String]
    public let tokenFile: String
    package let client: HTTPClient
    package let timeout: TimeAmount
    /// The server in use: an index into `bases`.
    private let current = Atomic<Int>(0)

    /// The server in use now.
    public var base: String { bases[current.load(ordering: .relaxed)] }

    /// All the servers, as given: what names this upstream (a kiosk's checkpoint).
    public var name: String { bases.joined(separator: ",") }

    /// `url` is one URL, or several separated by commas.
    public init(_ url: String, tokenFile: String, caFile: String? = nil, timeout: Duration = .seconds(30)) throws {
        var bases: [String] = []
        for part in url.split(separator: ",", omittingEmptySubsequences: false) {
            let one = part.trimmingCharacters(in: .whitespaces)
            guard let c = URLComponents(string: one), c.scheme == "http" || c.scheme == "https", let host = c.host,
                !host.isEmpty
            else {
                throw SyncError(
                    .badInput,
                    "--upstream takes the site server's http:// or https:// URL (like https://tracer.example.org; several separated by commas), not '\(one)'"
                )
            }
            bases.append(one.hasSuffix("/") ? String(one.dropLast()) : one)
        }
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile {
            do {
                tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile))
            } catch {
                throw SyncError(.badInput, "--ca-file \(caFile): not a readable PEM certificate (\(error))")
            }
        }
        let milliseconds = Int64(timeout / .milliseconds(1))
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.timeout = .init(connect: .seconds(10), read: .milliseconds(milliseconds))
        configuration.redirectConfiguration = .disallow
        // A server that refuses the connection is said at once (AsyncHTTPClient would try again
        // until the connect timeout: 10 s before `connection refused`): the next server of the
        // site is tried, the replicator backs off on its own, a person's command says so.
        configuration.connectionPool.retryConnectionEstablishment = false
        // A missing or empty token file is an error at start, before there is a client to shut down.
        _ = try Self.token(in: tokenFile)
        self.bases = bases
        self.tokenFile = tokenFile
        self.timeout = .milliseconds(milliseconds)
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// Moves on from server `index` to the next (unless another request already did).
    private func failed(_ index: Int) {
        _ = current.compareExchange(expected: index, desired: (index + 1) % bases.count, ordering: .relaxed)
    }

    /// The token in the token file (its first line, trimmed).
    public func token() throws(SyncError) -> String { try Self.token(in: tokenFile) }

    static func token(in tokenFile: String) throws(SyncError) -> String {
        guard let data = FileManager.default.contents(atPath: tokenFile) else {
            throw SyncError(.badInput, "--token-file \(tokenFile): cannot read it")
        }
        let token =
            String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first
            .map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard token.hasPrefix("tracer_") else {
            throw SyncError(.badInput, "--token-file \(tokenFile): no token in it (tracer token create prints one)")
        }
        return token
    }

    /// An answer: its status, headers and body.
    public struct Answer: Sendable {
        public var status: Int
        public var headers: HTTPHeaders
        public var body: [UInt8]

        /// The API's error message (`{"error": {"message"}}`), or the status.
        public var message: String {
            APIJSON.decode(Components.Schemas._Error.self, from: body)?.error.message ?? "HTTP \(status)"
        }
    }

    /// Sends a request to `path` (under the base URL) with the token; throws `unavailable` when
    /// no server answered. With several servers, one that does not answer, or answers 502, 503
    /// or 504, is left for the next, and the request sent there; the last answer (or failure)
    /// is the result when none does better.
    public func request(
        _ method: HTTPMethod,
        _ path: String,
        body: HTTPClientRequest.Body? = nil,
        headers: [(String, String)] = [],
        limit: Int = 16 << 20
    ) async throws(SyncError) -> Answer {
        let token = try token()
        let send: (String) async throws -> Answer = { base in
            var request = HTTPClientRequest(url: base + path)
            request.method = method
            request.headers.add(name: "Authorization", value: "Bearer " + token)
            request.headers.add(name: "User-Agent", value: "tracer")
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            request.body = body
            let response = try await self.client.execute(request, timeout: self.timeout)
            let buffer = try await response.body.collect(upTo: limit)
            return Answer(
                status: Int(response.status.code),
                headers: response.headers,
                body: Array(buffer.readableBytesView)
            )
        }
        return try await inTurn(busy: { [502, 503, 504].contains($0.status) }, send: send)
    }

    /// Runs `send` against the server in use (its base URL), and, with several servers, when it
    /// throws or its answer is `busy`, against the next, in turn: the last answer (or failure)
    /// is the result when none does better. Throws `unavailable` when no server answered.
    package func inTurn<Answer>(
        busy: (Answer) -> Bool,
        send: (_ base: String) async throws -> Answer
    ) async throws(SyncError) -> Answer {
        var last: Result<Answer, SyncError> = .failure(SyncError(.unavailable, "no server"))
        for _ in bases.indices {
            let index = current.load(ordering: .relaxed)
            let base = bases[index]
            do {
                let answer = try await send(base)
                guard bases.count > 1, busy(answer) else { return answer }
                last = .success(answer)
            } catch is CancellationError {
                throw SyncError(.unavailable, "\(base): cancelled")
            } catch let e as SyncError {
                // Said by the server (a refusal), not a failure to reach it.
                throw e
            } catch {
                last = .failure(SyncError(.unavailable, "\(base): \(Self.describe(error))"))
            }
            failed(index)
        }
        return try last.get()
    }

    /// Posts a batch (`SyncBatch.body`); the server has committed it when this returns.
    public func send(_ body: [UInt8]) async throws(SyncError) -> SyncAnswer {
        let answer = try await request(
            .POST,
            "/v1/sync",
            body: .bytes(ByteBuffer(bytes: body)),
            headers: [("Content-Type", "application/json")]
        )
        switch answer.status {
        case 200: return try SyncAnswer(json: answer.body)
        case 401: throw SyncError(.unauthorized, answer.message)
        case 403: throw SyncError(.forbidden, answer.message)
        case 400, 413, 422: throw SyncError(.badRequest, answer.message)
        default: throw SyncError(.unavailable, "\(base): \(answer.message)")
        }
    }

    /// The published site: nil when it is the one with `etag` (304).
    public func site(
        etag: String?
    ) async throws(SyncError) -> (source: String, file: String, digest: String, trustList: String?)? {
        let answer = try await api { client in
            try await client.publishedSite(headers: .init(ifNoneMatch: etag.map { "\"\($0)\"" }))
        }
        switch answer {
        case .notModified: return nil
        case .ok(let ok):
            guard case .json(let site) = ok.body else {
                throw SyncError(.protocolError, "\(base)/v1/site: not a published site")
            }
            return (site.source, site.file, site.digest, site.trustList)
        default:
            throw SyncError(.protocolError, "\(base)/v1/site: an answer the API does not give")
        }
    }

    /// The site's fit of its kiosks' radio up to now, the exponent held at the map's (what the
    /// kiosks range with): `GET /v1/site/calibration?exponent=map`. Nil when there is none yet
    /// (no site published, or no kiosk heard another in the last hour).
    public func siteCalibration() async throws(SyncError) -> Components.Schemas.SiteCalibration? {
        let answer: Operations.SiteCalibration.Output
        do {
            answer = try await api(notFound: .notFound) { client in
                try await client.siteCalibration(query: .init(exponent: .map))
            }
        } catch let e where e.code == .notFound {
            return nil
        }
        guard case .ok(let ok) = answer, case .json(let fit) = ok.body else {
            throw SyncError(.protocolError, "\(base)/v1/site/calibration: an answer the API does not give")
        }
        return fit
    }

    /// One day of the site's badge ids (`GET /v1/badges/ids`): nil when it is the one with
    /// `etag` (304). Throws `notFound` when the site has no badges.
    public func badgeDay(_ day: UInt32, etag: String?) async throws(SyncError) -> (day: BadgeIDDay, etag: String)? {
        let answer = try await api(notFound: .notFound) { client in
            try await client.badgeIDs(query: .init(day: BadgeIDDay.name(day)), headers: .init(ifNoneMatch: etag))
        }
        let ok: Operations.BadgeIDs.Output.Ok
        switch answer {
        case .notModified: return nil
        case .ok(let answered): ok = answered
        default: throw SyncError(.protocolError, "\(base)/v1/badges/ids: an answer the API does not give")
        }
        guard case .json(let body) = ok.body,
            let packed = Data(base64Encoded: body.ids), let ids = BadgeIDDay.unpack(Array(packed)),
            BadgeIDDay.day(named: body.day) == day, let firstEpoch = UInt32(exactly: body.firstEpoch)
        else {
            throw SyncError(.protocolError, "\(base)/v1/badges/ids: not a day of badge ids")
        }
        let numbers = body.numbers.compactMap(UInt32.init(exactly:))
        guard numbers.count == body.numbers.count else {
            throw SyncError(.protocolError, "\(base)/v1/badges/ids: a badge number that is none")
        }
        let made = BadgeIDDay(
            day: day,
            bits: body.epochBits,
            version: body.version,
            serials: body.serials,
            numbers: numbers,
            firstEpoch: firstEpoch,
            epochs: body.epochs,
            ids: ids
        )
        guard made.isWhole else {
            throw SyncError(.protocolError, "\(base)/v1/badges/ids: the day's ids do not add up")
        }
        return (made, ok.headers.eTag ?? "")
    }

    /// Calls the API with the client generated from its document (`SiteClient`, on this
    /// upstream's HTTP client and servers), a refusal said as the replicator's errors say it:
    /// 401 a refused token, 403 forbidden, 404 `notFound`'s code, anything else unavailable.
    func api<Answer: Sendable>(
        notFound: SyncError.Code = .unavailable,
        _ call: (Client) async throws -> Answer
    ) async throws(SyncError) -> Answer {
        do {
            return try await SiteClient(self).call(call)
        } catch let e as SiteClient.Refusal {
            switch e.status {
            case 401: throw SyncError(.unauthorized, e.message)
            case 403: throw SyncError(.forbidden, e.message)
            case 404: throw SyncError(notFound, notFound == .unavailable ? "\(base): \(e.message)" : e.message)
            default: throw SyncError(.unavailable, "\(base): \(e.message)")
            }
        } catch let e as SyncError {
            throw e
        } catch {
            throw SyncError(.unavailable, "\(base): \(Self.describe(error))")
        }
    }

    /// Follows a Server-Sent Events stream (`/v1/watch?path=…`), calling `event` once per event,
    /// until the server ends it or the connection fails (then it throws `unavailable`).
    /// With several servers, the next one is used after a failure.
    public func events(_ path: String, _ event: @Sendable () async throws -> Void) async throws {
        let index = current.load(ordering: .relaxed)
        do {
            try await events(bases[index], path, event)
        } catch let e as SyncError where e.code == .unavailable {
            failed(index)
            throw e
        }
    }

    private func events(_ base: String, _ path: String, _ event: @Sendable () async throws -> Void) async throws {
        var request = HTTPClientRequest(url: base + path)
        request.headers.add(name: "Authorization", value: "Bearer " + (try token()))
        request.headers.add(name: "Accept", value: "text/event-stream")
        let response: HTTPClientResponse
        do {
            // A watch is meant to last: the deadline is a day, and a server gone ends it sooner.
            response = try await client.execute(request, timeout: .hours(24))
        } catch {
            throw SyncError(.unavailable, "\(base): \(Self.describe(error))")
        }
        guard response.status.code == 200 else {
            let body = (try? await response.body.collect(upTo: 1 << 20)).map { Array($0.readableBytesView) } ?? []
            let answer = Answer(status: Int(response.status.code), headers: response.headers, body: body)
            throw SyncError(response.status.code == 401 ? .unauthorized : .badRequest, answer.message)
        }
        var pending: [UInt8] = []
        do {
            for try await chunk in response.body {
                pending += chunk.readableBytesView
                // Events end with a blank line; each one with data means "look again".
                while let end = Self.eventEnd(pending) {
                    let text = String(decoding: pending[..<end], as: UTF8.self)
                    pending.removeFirst(end)
                    if text.split(separator: "\n").contains(where: { $0.hasPrefix("data:") }) { try await event() }
                }
            }
        } catch let e as SyncError {
            throw e
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw SyncError(.unavailable, "\(base): \(Self.describe(error))")
        }
        throw SyncError(.unavailable, "\(base): the server ended the watch")
    }

    /// Where the first complete event ends (after its blank line), or nil.
    static func eventEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 2 else { return nil }
        for i in 1..<bytes.count where bytes[i] == 10 && bytes[i - 1] == 10 { return i + 1 }
        return nil
    }

    /// Closes the client's connections.
    public func shutdown() async throws { try await client.shutdown() }

    /// An HTTP client error in a few words (the connection's, TLS's, or a timeout).
    package static func describe(_ error: any Error) -> String {
        let text = "\(error)"
        if text.contains("connectTimeout") || text.contains("deadlineExceeded") || text.contains("readTimeout") {
            return "timed out"
        }
        if text.contains("connectionRefused") || text.contains("Connection refused") { return "connection refused" }
        if text.contains("remoteConnectionClosed") { return "the connection closed before the answer" }
        if text.contains("handshake") || text.contains("NIOSSL") || text.contains("certificate") {
            return "TLS failed: \(text.prefix(200))"
        }
        return String(text.prefix(200))
    }
}

import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import TracerModel
import TracerStore

/// A browser's push subscription, as `PushSubscription.toJSON()` gives it: where to send, and
/// the keys its messages are encrypted to.
public struct PushSubscription: Sendable, Equatable {
    public var endpoint: String
    /// The browser's P-256 public key, uncompressed (65 bytes).
    public var p256dh: [UInt8]
    /// Its authentication secret (16 bytes).
    public var auth: [UInt8]

    public init(endpoint: String, p256dh: [UInt8], auth: [UInt8]) {
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.auth = auth
    }

    /// The push services a site sends to by default: Chrome's, Firefox's and Safari's.
    public static let defaultServices: Set<String> = [
        "fcm.googleapis.com", "updates.push.services.mozilla.com", "web.push.apple.com",
    ]

    /// A subscription from the browser's JSON (`{"endpoint", "keys": {"p256dh", "auth"}}`),
    /// checked: its endpoint by `PushEndpoint` (on one of `services`), and keys that are a P-256
    /// point and 16 bytes.
    public init(json: Value, services: Set<String>) throws(PushError) {
        guard case .string(let endpoint)? = json["endpoint"] else {
            throw PushError.notASubscription
        }
        try PushEndpoint.check(endpoint, services: services)
        guard case .string(let key)? = json["keys"]?["p256dh"], let p256dh = WebPush.base64url(key), p256dh.count == 65,
            (try? P256.KeyAgreement.PublicKey(x963Representation: p256dh)) != nil
        else {
            throw PushError(.key, "keys.p256dh is not a P-256 public key (65 bytes, base64url)", context: "keys.p256dh")
        }
        guard case .string(let secret)? = json["keys"]?["auth"], let auth = WebPush.base64url(secret), auth.count == 16
        else { throw PushError(.key, "keys.auth is not a 16-byte secret (base64url)", context: "keys.auth") }
        self.init(endpoint: endpoint, p256dh: p256dh, auth: auth)
    }

    /// As stored in `devices/{id}/push/{id}`, by the token that subscribed it (revoking the
    /// token deletes it).
    public func data(tokenID: String) -> DocumentData {
        [
            "endpoint": .string(endpoint), "p256dh": .string(WebPush.base64url(p256dh)),
            "auth": .string(WebPush.base64url(auth)), "createdAt": .serverTimestamp,
            Field.tokenID: .string(tokenID),
        ]
    }

    /// The stored fields beside the subscription itself.
    public enum Field {
        /// The token that subscribed it.
        public static let tokenID = "tokenId"
        /// When a push became owed to it (absent: nothing is owed).
        public static let owedAt = "owedAt"
        /// When its push service began failing, for as long as it keeps failing.
        public static let failingSince = "failingSince"
        /// Failed attempts in a row.
        public static let failures = "failures"
        /// When its push service last took a push for it: the health team's "told by push".
        public static let deliveredAt = "deliveredAt"
    }

    public init?(_ doc: DocumentSnapshot) {
        guard let endpoint = doc["endpoint"]?.stringValue,
            let p = doc["p256dh"]?.stringValue.flatMap(WebPush.base64url),
            let a = doc["auth"]?.stringValue.flatMap(WebPush.base64url)
        else { return nil }
        self.init(endpoint: endpoint, p256dh: p, auth: a)
    }

    /// The subscription's document id: the endpoint's digest (one document per browser).
    public var id: String { Self.id(endpoint: endpoint) }

    /// The document id of the subscription with this endpoint.
    public static func id(endpoint: String) -> String { String(Digest.sha256Hex(endpoint).prefix(32)) }
}

/// A push endpoint checked, where it is stored and again where it is used: the server must
/// never become a way to reach anything else (the institution's own network least of all), and
/// no stored value may make the sender trap (a port above 65535 did, in SwiftNIO's
/// `SocketAddress`).
public enum PushEndpoint {
    /// The longest endpoint taken (the big push services' are under 500 bytes).
    public static let maxLength = 2048

    /// Throws unless `endpoint` is `https://HOST[:443]/…` with HOST one of `services` (http, on a
    /// port 1–65535, only for a listed loopback host: a test's stand-in), no user or password,
    /// no space or control character; and Foundation reads the same host and port from it as
    /// this check does (what AsyncHTTPClient connects to is what was checked).
    public static func check(_ endpoint: String, services: Set<String>) throws(PushError) {
        guard endpoint.utf8.count <= maxLength else {
            throw PushError(.endpoint, "the endpoint is longer than \(maxLength) bytes", context: "endpoint")
        }
        guard endpoint.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw PushError(
                .endpoint,
                "the endpoint has a space, a control character or a byte outside ASCII",
                context: "endpoint"
            )
        }
        guard let colon = endpoint.range(of: "://") else { throw PushError.notASubscription }
        let scheme = endpoint[..<colon.lowerBound].lowercased()
        let rest = endpoint[colon.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.contains("@"), !authority.contains("\\") else {
            throw PushError(.endpoint, "a push endpoint has no user or password", context: "endpoint")
        }
        var host = Substring(authority)
        var port: Int?
        if let last = authority.lastIndex(of: ":"), !authority[last...].contains("]") {
            host = authority[..<last]
            let digits = authority[authority.index(after: last)...]
            guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber),
                let n = Int(digits), (1...65535).contains(n)
            else {
                throw PushError(
                    .endpoint,
                    "the endpoint's port is not 1–65535: '\(digits.prefix(12))'",
                    context: "endpoint"
                )
            }
            port = n
        }
        let name = host.lowercased()
        guard !name.isEmpty else { throw PushError.notASubscription }
        guard services.contains(name) else {
            throw PushError(
                .notAService,
                "\(name.prefix(80)) is not one of this site's push services (\(services.sorted().joined(separator: ", ")): settings: pushServices)",
                context: String(name.prefix(80))
            )
        }
        let loopback = name == "127.0.0.1" || name == "localhost" || name == "[::1]"
        guard scheme == "https" || (scheme == "http" && loopback) else {
            throw PushError(
                .endpoint,
                "a push endpoint is https://, not \(scheme.prefix(20))://",
                context: String(name.prefix(80))
            )
        }
        // The push services listen on https's own port: another port of theirs is no push service.
        guard scheme == "http" || port == nil || port == 443 else {
            throw PushError(
                .endpoint,
                "a push endpoint is on https's port (443), not \(port ?? 0)",
                context: String(name.prefix(80))
            )
        }
        guard let url = URLComponents(string: endpoint),
            url.host?.lowercased() == name || "[\(url.host ?? "")]" == name,
            url.port == port, url.user == nil, url.password == nil
        else {
            throw PushError(
                .endpoint,
                "the endpoint is not a URL this server reads as it checked it",
                context: "endpoint"
            )
        }
    }
}

/// Why a subscription or an endpoint is not one tracer pushes to: a code to decide by, what it
/// concerns, and one line for people (the API's 422 message).
public struct PushError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, Equatable {
        /// Not the browser's PushSubscription JSON (no endpoint, no scheme or host).
        case notASubscription
        /// The endpoint breaks a rule (length, characters, user, port, scheme, how it parses).
        case endpoint
        /// The endpoint's host is not one of the site's push services (`pushServices`).
        case notAService
        /// `keys.p256dh` or `keys.auth` is not what Web Push needs.
        case key
    }

    public let code: Code
    /// The field or host it concerns (`endpoint`, `keys.p256dh`, a host name).
    public let context: String?
    public let description: String

    public init(_ code: Code, _ description: String, context: String? = nil) {
        self.code = code
        self.description = description
        self.context = context
    }

    /// Not the browser's PushSubscription JSON.
    static var notASubscription: PushError {
        PushError(
            .notASubscription,
            "a subscription is the browser's PushSubscription JSON: {\"endpoint\": \"https://…\", \"keys\": {\"p256dh\", \"auth\"}}",
            context: "endpoint"
        )
    }
}

/// Web Push's two cryptographic parts, with swift-crypto: the message encrypted to the browser
/// (RFC 8291: ECDH on P-256, HKDF-SHA-256, AES-128-GCM in RFC 8188's aes128gcm coding, one
/// record), and the server's signed claim to its push service (RFC 8292, VAPID: an ES256 JWT).
public enum WebPush {
    /// The body of a push message of `plaintext` (at most 3,993 bytes: one record).
    public static func encrypt(
        _ plaintext: [UInt8],
        to subscription: PushSubscription,
        salt: [UInt8] = randomBytes(16),
        serverKey: P256.KeyAgreement.PrivateKey = P256.KeyAgreement.PrivateKey()
    ) throws -> [UInt8] {
        let browser = try P256.KeyAgreement.PublicKey(x963Representation: subscription.p256dh)
        let shared = try serverKey.sharedSecretFromKeyAgreement(with: browser)
        let serverPublic = Array(serverKey.publicKey.x963Representation)
        // RFC 8291 §3.3–3.4: the input keying material from the ECDH secret and the auth secret.
        let prkKey = shared.withUnsafeBytes { ecdh in
            HKDF<SHA256>.extract(inputKeyMaterial: SymmetricKey(data: ecdh), salt: subscription.auth)
        }
        let keyInfo = Array("WebPush: info".utf8) + [0] + subscription.p256dh + serverPublic
        let ikm = HKDF<SHA256>.expand(pseudoRandomKey: prkKey, info: keyInfo, outputByteCount: 32)
        // RFC 8188 §2.2–2.3: the content encryption key and nonce from the salt.
        let prk = HKDF<SHA256>.extract(inputKeyMaterial: ikm, salt: salt)
        let cek = HKDF<SHA256>.expand(
            pseudoRandomKey: prk,
            info: Array("Content-Encoding: aes128gcm".utf8) + [0],
            outputByteCount: 16
        )
        let nonce = HKDF<SHA256>.expand(
            pseudoRandomKey: prk,
            info: Array("Content-Encoding: nonce".utf8) + [0],
            outputByteCount: 12
        )
        let sealed = try AES.GCM.seal(
            plaintext + [2],  // the last (and only) record's padding delimiter
            using: cek,
            nonce: AES.GCM.Nonce(data: nonce.withUnsafeBytes { Array($0) })
        )
        let recordSize: UInt32 = 4096
        let header =
            salt + [
                UInt8(recordSize >> 24), UInt8(recordSize >> 16 & 0xFF), UInt8(recordSize >> 8 & 0xFF),
                UInt8(recordSize & 0xFF),
            ]
            + [UInt8(serverPublic.count)] + serverPublic
        return header + Array(sealed.ciphertext) + Array(sealed.tag)
    }

    /// The `Authorization` header of a push to `endpoint` (RFC 8292): `vapid t=JWT, k=KEY`.
    public static func authorization(
        endpoint: String,
        subject: String,
        key: P256.Signing.PrivateKey,
        expires: Date = Date().addingTimeInterval(12 * 3600)
    ) throws -> String {
        guard let url = URLComponents(string: endpoint), let scheme = url.scheme, let host = url.host else {
            throw PushError(.endpoint, "not a URL: \(endpoint)", context: "endpoint")
        }
        let audience = "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
        let header = base64url(Array(#"{"typ":"JWT","alg":"ES256"}"#.utf8))
        let claims = base64url(
            Array(
                JSON.string(
                    .map([
                        "aud": .string(audience), "exp": .integer(Int64(expires.timeIntervalSince1970)),
                        "sub": .string(subject),
                    ])
                ).utf8
            )
        )
        let input = header + "." + claims
        let signature = try key.signature(for: Array(input.utf8))
        let token = input + "." + base64url(Array(signature.rawRepresentation))
        return "vapid t=\(token), k=\(base64url(Array(key.publicKey.x963Representation)))"
    }

    public static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    public static func base64url(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    public static func base64url(_ text: String) -> [UInt8]? {
        guard text.utf8.count <= 4096 else { return nil }
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.utf8.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s).map(Array.init)
    }

    /// The site's VAPID public key (uncompressed, base64url): a browser's `applicationServerKey`.
    public static func sitePublicKey(in db: StoreWriter) throws -> String {
        base64url(Array(try siteKey(in: db).publicKey.x963Representation))
    }

    /// The site's VAPID key (`config/push`), made on first use: one per site, so that every
    /// server of a site signs alike and a subscription outlives a restart.
    public static func siteKey(in db: StoreWriter) throws -> P256.Signing.PrivateKey {
        try db.runTransaction { t in
            let doc = try t.get(Collections.pushKey)
            if let text = doc["privateKey"]?.stringValue, let raw = base64url(text),
                let key = try? P256.Signing.PrivateKey(rawRepresentation: raw)
            {
                return key
            }
            let key = P256.Signing.PrivateKey()
            t.set(
                Collections.pushKey,
                [
                    "privateKey": .string(base64url(Array(key.rawRepresentation))),
                    "publicKey": .string(base64url(Array(key.publicKey.x963Representation))),
                ]
            )
            return key
        }
    }
}

/// Sends push messages: encrypted to each browser, signed for its push service, POSTed with
/// AsyncHTTPClient. Call `shutdown()` when done.
public final class PushSender: AsyncShutdown {
    let client: HTTPClient
    let key: P256.Signing.PrivateKey
    /// Who runs this server, for the push services (`mailto:` or `https:`).
    public let subject: String
    /// The only hosts it sends to (the site's `pushServices`): every endpoint is checked again
    /// before it is used, whoever stored it.
    public let services: Set<String>
    let timeout: TimeAmount

    /// What a push service answered.
    public enum Outcome: Sendable, Equatable {
        case delivered
        /// 404 or 410: the subscription is gone; drop it.
        case gone
        /// Nothing, or something else: try again later.
        case failed(String)
        /// The stored endpoint is not one this site sends to (`PushEndpoint.check`): nothing was
        /// sent; drop it.
        case refused(String)
    }

    public init(
        key: P256.Signing.PrivateKey,
        subject: String,
        services: Set<String> = PushSubscription.defaultServices,
        timeout: Duration = .seconds(10)
    ) {
        var configuration = HTTPClient.Configuration()
        let milliseconds = Int64(timeout / .milliseconds(1))
        configuration.timeout = .init(connect: .milliseconds(milliseconds), read: .milliseconds(milliseconds))
        configuration.redirectConfiguration = .disallow
        configuration.connectionPool.retryConnectionEstablishment = false
        self.client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.key = key
        self.subject = subject
        self.services = services
        self.timeout = .milliseconds(milliseconds)
    }

    /// Sends `payload` to one browser.
    public func send(_ payload: [UInt8], to subscription: PushSubscription) async -> Outcome {
        do throws(PushError) {
            try PushEndpoint.check(subscription.endpoint, services: services)
        } catch {
            return .refused(error.description)
        }
        do {
            var request = HTTPClientRequest(url: subscription.endpoint)
            request.method = .POST
            request.headers.add(
                name: "Authorization",
                value: try WebPush.authorization(endpoint: subscription.endpoint, subject: subject, key: key)
            )
            request.headers.add(name: "Content-Encoding", value: "aes128gcm")
            request.headers.add(name: "Content-Type", value: "application/octet-stream")
            request.headers.add(name: "TTL", value: "86400")
            request.headers.add(name: "Urgency", value: "high")
            request.body = .bytes(ByteBuffer(bytes: try WebPush.encrypt(payload, to: subscription)))
            let response = try await client.execute(request, timeout: timeout)
            _ = try? await response.body.collect(upTo: 1 << 16)
            switch response.status.code {
            case 200..<300: return .delivered
            case 404, 410: return .gone
            default: return .failed("HTTP \(response.status.code)")
            }
        } catch {
            return .failed("\(error)".prefix(200).description)
        }
    }

    public func shutdown() async throws { try await client.shutdown() }
}

import Foundation
import Hummingbird
import HummingbirdTLS
import HummingbirdTesting
import NIOSSL
import Synchronization
import Testing
import TracerModel
import TracerTesting

@testable import TracerExposure

/// The notifier's webhook over HTTPS, against a receiver with a certificate from a CA made here.
@Suite struct WebhookTests {
    /// What the receiver was sent.
    final class Bodies: Sendable {
        let list = Mutex<[String]>([])
    }

    /// A TLS receiver that keeps what it is sent.
    static func receiver(_ ca: TestCA, bodies: Bodies) throws -> some ApplicationProtocol {
        let router = Router()
        router.post("/hook") { request, _ -> HTTPResponse.Status in
            let body = try await request.body.collect(upTo: 1 << 20)
            bodies.list.withLock { $0.append(String(buffer: body)) }
            return .ok
        }
        let tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(ca.certificateFile).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: ca.keyFile, format: .pem))
        )
        return Application(
            router: router,
            server: try .tls(.http1(), tlsConfiguration: tls),
            configuration: .init(address: .hostname("127.0.0.1", port: 0))
        )
    }

    @Test func postsOverHTTPSTrustingTheSitesCA() async throws {
        let ca = try TestCA()
        let bodies = Bodies()
        try await Self.receiver(ca, bodies: bodies).test(.ahc(.https)) { client in
            let url = "https://127.0.0.1:\(try #require(client.port))/hook"
            let status = try await withShutdown({ try Webhook(url, caFile: ca.caFile) }) {
                try await $0.post(#"{"deviceId":"a"}"#)
            }
            #expect(status == 200)
            // The system's trust store does not know this CA: refused, and said so (and the
            // client is shut down all the same: it trapped when `post` threw before `shutdown`).
            let error = await #expect(throws: ExposureError.self) {
                try await withShutdown({ try Webhook(url) }) { try await $0.post("{}") }
            }
            #expect(error?.code == .delivery && error?.message.hasPrefix(url) == true, "\(String(describing: error))")
        }
        #expect(bodies.list.withLock { $0 } == [#"{"deviceId":"a"}"#])
    }

    @Test func badURLsAndCAFilesAreOneLineErrors() throws {
        #expect(throws: ExposureError.self) { try Webhook("ftp://x/hook") }
        let error = #expect(throws: ExposureError.self) { try Webhook("https://x/hook", caFile: "/nonexistent/ca.pem") }
        #expect(error?.message.contains("/nonexistent/ca.pem") == true)
    }
}

import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// The site's trust list: the issuers' certificates (Document Signer Certificates) whose
/// signatures the site accepts, from a PEM file named by the map's `trustList` setting. A
/// health certificate names its signer by key id: the first 8 bytes of the SHA-256 of the
/// signer certificate's DER.
public struct TrustList: Sendable {
    public struct Issuer: Sendable {
        /// The key id, hex.
        public var keyID: String
        public var key: Certificate.PublicKey
        /// The certificate's subject, for people (`CN=…, O=…, C=…`).
        public var subject: String
        public var notValidBefore: Date
        public var notValidAfter: Date
    }

    public var issuers: [String: Issuer]

    public init(issuers: [Issuer] = []) {
        self.issuers = Dictionary(issuers.map { ($0.keyID, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// The certificates in a PEM text (`-----BEGIN CERTIFICATE-----` blocks; anything else in
    /// the file is refused by name); `file` names it in errors.
    public init(pem: String, file: String) throws(CertificateError) {
        let documents: [PEMDocument]
        do { documents = try PEMDocument.parseMultiple(pemString: pem) } catch {
            throw CertificateError(
                .trustList,
                "\(file): not a PEM file of certificates (\("\(error)".split(separator: "\n").first ?? ""))"
            )
        }
        var issuers: [Issuer] = []
        for (n, document) in documents.enumerated() {
            guard document.discriminator == "CERTIFICATE" else {
                throw CertificateError(
                    .trustList,
                    "\(file): block \(n + 1) is a \(document.discriminator), not a CERTIFICATE"
                )
            }
            let certificate: Certificate
            do { certificate = try Certificate(derEncoded: document.derBytes) } catch {
                throw CertificateError(.trustList, "\(file): certificate \(n + 1) cannot be read (\(error))")
            }
            let digest = SHA256.hash(data: document.derBytes)
            issuers.append(
                Issuer(
                    keyID: digest.prefix(8).map { String(format: "%02x", $0) }.joined(),
                    key: certificate.publicKey,
                    subject: certificate.subject.description,
                    notValidBefore: certificate.notValidBefore,
                    notValidAfter: certificate.notValidAfter
                )
            )
        }
        guard !issuers.isEmpty else {
            throw CertificateError(.trustList, "\(file): no certificate in it (a PEM file of CERTIFICATE blocks)")
        }
        self.init(issuers: issuers)
    }
}

import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// The site's trust list: the issuers' certificates (Document Signer Certificates) whose
/// signatures the site accepts, from a PEM file named by the map's `trustList` setting. A
/// health certificate names its signer by key id: the first 8 bytes of the SHA-256 of the
/// signer certificate's DER.
///
/// Only what a verifier needs is read from each certificate: its public key, validity, subject
/// and the health-certificate kinds its extended key usage allows. Its own signature is never
/// checked (a trust list is trusted as a whole), so it is not parsed either: the member states'
/// lists hold certificates signed with RSA-PSS, or ecdsa-with-SHA1, or followed by stray bytes,
/// which a full X.509 parse refuses; one such entry made the whole list unreadable. An entry
/// whose key cannot be read is skipped with a line naming it (`skipped`), never the whole list.
public struct TrustList: Sendable {
    public struct Issuer: Sendable {
        /// The key id, hex.
        public var keyID: String
        public var key: Certificate.PublicKey
        /// The certificate's subject, for people (`CN=…, O=…, C=…`).
        public var subject: String
        public var notValidBefore: Date
        public var notValidAfter: Date
        /// The kinds it may sign (`t` tests, `v` vaccinations, `r` recoveries) when its extended
        /// key usage names any of the health certificate OIDs; nil when it names none (all kinds).
        public var kinds: Set<String>?
    }

    public var issuers: [String: Issuer]
    /// One line per certificate in the file that could not be used, naming it and why.
    public var skipped: [String] = []

    public init(issuers: [Issuer] = []) {
        self.issuers = Dictionary(issuers.map { ($0.keyID, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// The certificates in a PEM text (`-----BEGIN CERTIFICATE-----` blocks; anything else in
    /// the file is refused by name); `file` names it in errors. Throws only when no entry can be
    /// used; the others that cannot are in `skipped`.
    public init(pem: String, file: String) throws(CertificateError) {
        let documents: [PEMDocument]
        do { documents = try PEMDocument.parseMultiple(pemString: pem) } catch {
            throw CertificateError(
                .trustList,
                "\(file): not a PEM file of certificates (\("\(error)".split(separator: "\n").first ?? ""))"
            )
        }
        var issuers: [Issuer] = []
        var skipped: [String] = []
        for (n, document) in documents.enumerated() {
            guard document.discriminator == "CERTIFICATE" else {
                throw CertificateError(
                    .trustList,
                    "\(file): block \(n + 1) is a \(document.discriminator), not a CERTIFICATE"
                )
            }
            do {
                issuers.append(try Self.issuer(der: document.derBytes))
            } catch {
                skipped.append("\(file): certificate \(n + 1) skipped, its key cannot be read (\(error))")
            }
        }
        guard !issuers.isEmpty else {
            throw CertificateError(
                .trustList,
                skipped.first ?? "\(file): no certificate in it (a PEM file of CERTIFICATE blocks)"
            )
        }
        self.init(issuers: issuers)
        self.skipped = skipped
    }

    /// An issuer from a certificate's DER (bytes after the certificate's own end are ignored).
    public static func issuer(der bytes: [UInt8]) throws -> Issuer {
        let der = try firstElement(bytes)
        let root = try DER.parse(der)
        guard case .constructed(let top) = root.content, let tbs = top.first(where: { _ in true }),
            case .constructed(let fields) = tbs.content
        else { throw ASN1Error.invalidASN1Object(reason: "not a certificate") }
        var nodes = Array(fields)
        // [0] EXPLICIT version, when present.
        if nodes.first?.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
            nodes.removeFirst()
        }
        // serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo, [1] [2] [3].
        guard nodes.count >= 6, case .constructed(let validity) = nodes[3].content else {
            throw ASN1Error.invalidASN1Object(reason: "no validity")
        }
        let times = try validity.map(time)
        guard times.count == 2 else { throw ASN1Error.invalidASN1Object(reason: "a validity of \(times.count) times") }
        let subject = (try? DistinguishedName(derEncoded: nodes[4]))?.description ?? "an unreadable subject"
        let key = try Certificate.PublicKey(derEncoded: nodes[5])
        var kinds: Set<String>?
        for node in nodes.dropFirst(6)
        where node.identifier == ASN1Identifier(tagWithNumber: 3, tagClass: .contextSpecific) {
            kinds = try extendedKeyUsageKinds(node)
        }
        let digest = SHA256.hash(data: der)
        return Issuer(
            keyID: digest.prefix(8).map { String(format: "%02x", $0) }.joined(),
            key: key,
            subject: subject,
            notValidBefore: times[0],
            notValidAfter: times[1],
            kinds: kinds
        )
    }

    /// The health certificate kinds named in `[3] Extensions`' extended key usage (2.5.29.37):
    /// 1.3.6.1.4.1.1847.2021.1.{1,2,3} (and the 1.3.6.1.4.1.0.1847.2021.1.x form some states
    /// used) for tests, vaccinations and recoveries; nil when none is named.
    static func extendedKeyUsageKinds(_ explicit: ASN1Node) throws -> Set<String>? {
        guard case .constructed(let wrapped) = explicit.content, let list = wrapped.first(where: { _ in true }),
            case .constructed(let extensions) = list.content
        else { return nil }
        for ext in extensions {
            guard case .constructed(let parts) = ext.content else { continue }
            let items = Array(parts)
            guard let id = items.first, (try? ASN1ObjectIdentifier(derEncoded: id))?.description == "2.5.29.37",
                let value = items.last, let octets = try? ASN1OctetString(derEncoded: value)
            else { continue }
            let usages = try DER.parse(Array(octets.bytes))
            guard case .constructed(let oids) = usages.content else { return nil }
            var kinds = Set<String>()
            for oid in oids {
                let text = (try? ASN1ObjectIdentifier(derEncoded: oid))?.description ?? ""
                for prefix in ["1.3.6.1.4.1.1847.2021.1.", "1.3.6.1.4.1.0.1847.2021.1."] where text.hasPrefix(prefix) {
                    switch text.dropFirst(prefix.count) {
                    case "1": kinds.insert("t")
                    case "2": kinds.insert("v")
                    case "3": kinds.insert("r")
                    default: break
                    }
                }
            }
            return kinds.isEmpty ? nil : kinds
        }
        return nil
    }

    /// A UTCTime or GeneralizedTime as a date.
    static func time(_ node: ASN1Node) throws -> Date {
        let parts: (Int, Int, Int, Int, Int, Int)
        if let t = try? UTCTime(derEncoded: node) {
            parts = (t.year, t.month, t.day, t.hours, t.minutes, t.seconds)
        } else {
            let t = try GeneralizedTime(derEncoded: node)
            parts = (t.year, t.month, t.day, t.hours, t.minutes, t.seconds)
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let components = DateComponents(
            year: parts.0,
            month: parts.1,
            day: parts.2,
            hour: parts.3,
            minute: parts.4,
            second: parts.5
        )
        guard let date = calendar.date(from: components) else {
            throw ASN1Error.invalidASN1Object(reason: "a time that is no date")
        }
        return date
    }

    /// The first DER element of `bytes` (its header's length says where it ends).
    static func firstElement(_ bytes: [UInt8]) throws -> [UInt8] {
        guard bytes.count >= 2 else { throw ASN1Error.truncatedASN1Field() }
        var length = Int(bytes[1])
        var header = 2
        if length & 0x80 != 0 {
            let n = length & 0x7F
            guard (1...4).contains(n), bytes.count >= 2 + n else {
                throw ASN1Error.unsupportedFieldLength(reason: "a length of \(n) bytes")
            }
            length = bytes[2..<2 + n].reduce(0) { $0 << 8 | Int($1) }
            header += n
        }
        guard bytes.count >= header + length else { throw ASN1Error.truncatedASN1Field() }
        return Array(bytes[..<(header + length)])
    }
}

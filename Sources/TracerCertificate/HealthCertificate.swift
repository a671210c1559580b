import Crypto
import Foundation
import TracerVerification
import X509
import _CryptoExtras

/// Why a health certificate could not be read, or a trust list used.
public struct CertificateError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// Not Base45, not zlib, not COSE, not a health certificate's CBOR.
        case malformed
        /// The site's trust list cannot be used.
        case trustList
    }

    public var code: Code
    public var description: String

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}

/// An EU Digital COVID Certificate (the eHealth Network's specification): `HC1:` + Base45 of
/// zlib of a COSE_Sign1 whose payload is a CWT with the health certificate under claim -260.
/// Only what tracer decides on is read: the test group `t`, the issuer and the times. The
/// holder's name and date of birth are never read, kept or shown.
public struct HealthCertificate: Sendable {
    /// The COSE algorithm (-7 ES256, -37 PS256).
    public var algorithm: Int64
    /// The signer's key id, hex (from the protected header, else the unprotected one).
    public var keyID: String
    /// What was signed: the COSE `Sig_structure`.
    public var signed: [UInt8]
    public var signature: [UInt8]
    /// CWT claims: issuing country (1), expiry (4) and issue (6) times.
    public var issuerCountry: String?
    public var expires: Date?
    public var issued: Date?
    /// The test entry (`t[0]`), when the certificate is a test certificate.
    public var test: Test?
    /// What the certificate is instead: `v` vaccination, `r` recovery.
    public var otherKind: String?

    public struct Test: Sendable, Equatable {
        /// `tg`: the disease (840539006: COVID-19).
        public var disease: String?
        /// `tt`: LP6464-4 (NAAT, PCR) or LP217198-3 (rapid antigen).
        public var type: String?
        /// `sc`: when the sample was collected.
        public var collected: Date?
        public var collectedText: String?
        /// `tr`: 260373001 detected, 260415000 not detected.
        public var result: String?
        /// `is`: who issued it, `co`: where the test was taken.
        public var issuer: String?
        public var country: String?
    }

    public static let covid = "840539006"
    public static let detected = "260373001"
    public static let notDetected = "260415000"

    /// Reads `HC1:…`; throws `.malformed` with what is wrong.
    public init(_ text: String) throws(CertificateError) {
        guard text.hasPrefix(OCRPage.healthCertificatePrefix) else {
            throw CertificateError(.malformed, "not a health certificate (no HC1: prefix)")
        }
        let packed = try Base45.decode(String(text.dropFirst(OCRPage.healthCertificatePrefix.count)))
        // The member states' test cases refuse a certificate that is not zlib-compressed (Z2).
        guard packed.first == 0x78 else {
            throw CertificateError(.malformed, "the certificate is not zlib-compressed")
        }
        let cose = try Inflate.zlib(packed)
        let message: CBOR
        do { message = try CBOR.decode(cose).untagged } catch {
            throw CertificateError(.malformed, "the certificate is not CBOR: \(error)")
        }
        guard case .array(let parts) = message, parts.count == 4, let protectedBytes = parts[0].data,
            let payload = parts[2].data, let signature = parts[3].data
        else { throw CertificateError(.malformed, "the certificate is not a COSE_Sign1 message") }
        let protected: CBOR
        do { protected = protectedBytes.isEmpty ? .map([]) : try CBOR.decode(protectedBytes) } catch {
            throw CertificateError(.malformed, "the COSE protected header is not CBOR: \(error)")
        }
        guard let algorithm = protected[1]?.int ?? parts[1][1]?.int else {
            throw CertificateError(.malformed, "the COSE header names no signature algorithm")
        }
        guard let kid = protected[4]?.data ?? parts[1][4]?.data, !kid.isEmpty else {
            throw CertificateError(.malformed, "the COSE header names no key id")
        }
        self.algorithm = algorithm
        self.keyID = kid.map { String(format: "%02x", $0) }.joined()
        self.signature = signature
        // RFC 9052 §4.4: ["Signature1", protected, external_aad (empty), payload].
        self.signed = CBOR.array([.text("Signature1"), .bytes(protectedBytes), .bytes([]), .bytes(payload)]).encoded

        let claims: CBOR
        do { claims = try CBOR.decode(payload) } catch {
            throw CertificateError(.malformed, "the certificate's payload is not CBOR: \(error)")
        }
        issuerCountry = claims[1]?.string
        guard case .map = claims else { throw CertificateError(.malformed, "the payload is not a CWT claims map") }
        expires = try Self.claimTime(claims[4], "expiry (claim 4)")
        issued = try Self.claimTime(claims[6], "issue time (claim 6)")
        guard let hcert = claims[-260]?[1], case .map = hcert else {
            throw CertificateError(.malformed, "the payload holds no health certificate (claim -260)")
        }
        if case .array(let tests)? = hcert["t"], let t = tests.first {
            let sc = t["sc"]?.string
            test = Test(
                disease: t["tg"]?.string,
                type: t["tt"]?.string,
                collected: sc.flatMap(Self.date),
                collectedText: sc,
                result: t["tr"]?.string,
                issuer: t["is"]?.string,
                country: t["co"]?.string
            )
        } else {
            otherKind = hcert["v"] != nil ? "vaccination" : hcert["r"] != nil ? "recovery" : "unknown"
        }
    }

    /// A CWT time claim: absent, or Unix seconds between years 1 and 9999 (NaN, infinities and
    /// anything else are malformed: "valid until NaN" must never pass an expiry rule).
    static func claimTime(_ claim: CBOR?, _ name: String) throws(CertificateError) -> Date? {
        guard let claim else { return nil }
        guard let seconds = claim.number, seconds.isFinite, abs(seconds) < 253_402_300_800 else {
            throw CertificateError(.malformed, "the certificate's \(name) is not a time")
        }
        return Date(timeIntervalSince1970: seconds)
    }

    /// The kind for an issuer's extended key usage: `t`, `v` or `r`.
    public var kind: String {
        test != nil ? "t" : otherKind == "vaccination" ? "v" : otherKind == "recovery" ? "r" : "?"
    }

    /// `2026-11-20T09:40:00Z`, with an offset or fractional seconds.
    static func date(_ text: String) -> Date? {
        let f = ISO8601DateFormatter()
        if let d = f.date(from: text) { return d }
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.date(from: text)
    }

    /// Whether the signature is the issuer's over what was signed.
    public func signatureIsValid(by key: Certificate.PublicKey) -> Bool {
        let digest = SHA256.hash(data: signed)
        switch algorithm {
        case -7:
            // ES256 is ECDSA with SHA-256 (RFC 9053 §2.1): P-256 is its suggested curve, not a
            // required one, and three of Spain's test cases sign with a P-384 key under it. The
            // key is the trusted issuer's either way, so both curves are checked.
            if let key = P256.Signing.PublicKey(key),
                let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
            {
                return key.isValidSignature(signature, for: digest)
            }
            if let key = P384.Signing.PublicKey(key),
                let signature = try? P384.Signing.ECDSASignature(rawRepresentation: signature)
            {
                return key.isValidSignature(signature, for: digest)
            }
            return false
        case -37:
            guard let key = _RSA.Signing.PublicKey(key) else { return false }
            return key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature),
                for: digest,
                padding: .PSS
            )
        default:
            return false
        }
    }

    static let algorithms: [Int64: String] = [-7: "ES256", -37: "PS256"]
}

/// The decision on a page that carries a signed health certificate: the signature and the
/// issuer first, then the test. Every failure is certain (nothing doubtful: a signature holds
/// or it does not).
public enum CertificateVerifier {
    public static func verify(
        _ text: String,
        trustList: TrustList?,
        policy: VerificationPolicy = VerificationPolicy(),
        now: Date,
        timeZone: TimeZone = .current
    ) -> Verification {
        let certificate: HealthCertificate
        do { certificate = try HealthCertificate(text) } catch {
            return Verification(
                accepted: false,
                rules: [
                    VerificationRule(
                        name: "signature",
                        passed: false,
                        RuleMessage("signature.unreadable", ["error": error.description]),
                        evidence: []
                    )
                ],
                collectedAt: nil
            )
        }
        let signature = signatureRule(certificate, trustList: trustList, now: now)
        // What an untrusted or altered certificate says is not shown as if it counted.
        guard signature.passed else { return Verification(accepted: false, rules: [signature], collectedAt: nil) }
        var rules = [signature]
        rules.append(expiryRule(certificate, now: now, timeZone: timeZone))
        guard let test = certificate.test else {
            rules.append(
                VerificationRule(
                    name: "result",
                    passed: false,
                    RuleMessage(
                        "result.notATest",
                        terms: ["kind": ["certificate.\(certificate.otherKind ?? "unknown")"]]
                    ),
                    evidence: []
                )
            )
            return Verification(accepted: false, rules: rules, collectedAt: nil)
        }
        let isCovid = test.disease == HealthCertificate.covid
        rules.append(
            VerificationRule(
                name: "covid",
                passed: isCovid,
                isCovid
                    ? RuleMessage("covid.certificate")
                    : test.disease.map { RuleMessage("covid.otherDisease", ["tg": $0]) }
                        ?? RuleMessage("covid.otherDisease", terms: ["tg": ["missing"]]),
                evidence: []
            )
        )
        let kinds = ["LP6464-4": "testKind.naat", "LP217198-3": "testKind.antigen"]
        let kind = test.type.flatMap { kinds[$0] }
        rules.append(
            VerificationRule(
                name: "testKind",
                passed: kind != nil,
                kind.map { RuleMessage("testKind.found", terms: ["kind": [$0]]) }
                    ?? test.type.map { RuleMessage("testKind.unknown", ["type": $0]) }
                    ?? RuleMessage("testKind.unknown", terms: ["type": ["missing"]]),
                evidence: []
            )
        )
        let result: (Bool, RuleMessage) =
            switch test.result {
            case HealthCertificate.detected: (true, RuleMessage("result.detected"))
            case HealthCertificate.notDetected: (false, RuleMessage("result.notDetected"))
            case let other?: (false, RuleMessage("result.unknown", ["result": other]))
            case nil: (false, RuleMessage("result.unknown", terms: ["result": ["missing"]]))
            }
        rules.append(VerificationRule(name: "result", passed: result.0, result.1, evidence: []))
        rules.append(dateRule(test, policy: policy, now: now, timeZone: timeZone))
        return Verification(accepted: rules.allSatisfy(\.passed), rules: rules, collectedAt: test.collected)
    }

    /// Unexpired at `now` (a certificate valid until T is valid at T) and not issued after it.
    static func expiryRule(_ c: HealthCertificate, now: Date, timeZone: TimeZone) -> VerificationRule {
        let (passed, message): (Bool, RuleMessage)
        if let expires = c.expires, expires < now {
            (passed, message) = (false, RuleMessage("expiry.expired", ["date": day(expires, timeZone)]))
        } else if let issued = c.issued, issued > now {
            (passed, message) = (false, RuleMessage("expiry.issuedLater", ["date": day(issued, timeZone)]))
        } else {
            (passed, message) = (
                true,
                c.expires.map { RuleMessage("expiry.validUntil", ["date": day($0, timeZone)]) }
                    ?? RuleMessage("expiry.none")
            )
        }
        return VerificationRule(name: "expiry", passed: passed, message, evidence: [])
    }

    static func signatureRule(_ c: HealthCertificate, trustList: TrustList?, now: Date) -> VerificationRule {
        let issuerText = [c.test?.issuer, c.test?.country ?? c.issuerCountry].compactMap { $0 }.joined(separator: ", ")
        func rule(_ passed: Bool, _ message: RuleMessage, subject: String? = nil) -> VerificationRule {
            VerificationRule(
                name: "signature",
                passed: passed,
                message,
                evidence: [
                    .init(
                        text: "key id \(c.keyID)",
                        confidence: 100,
                        context: [subject, issuerText.isEmpty ? nil : "issued by \(issuerText)"].compactMap { $0 }
                            .joined(separator: "; ")
                    )
                ]
            )
        }
        guard let name = HealthCertificate.algorithms[c.algorithm] else {
            return rule(false, RuleMessage("signature.algorithm", ["algorithm": "\(c.algorithm)"]))
        }
        guard let trustList, !trustList.issuers.isEmpty else {
            return rule(false, RuleMessage("signature.noTrustList"))
        }
        guard let issuer = trustList.issuers[c.keyID] else {
            return rule(false, RuleMessage("signature.unknownIssuer", ["keyId": c.keyID]))
        }
        // The issuer's certificate must not have expired when it signed (the certificate's issue
        // time, else now; valid until T is valid at T). One that has expired since does not undo
        // what it signed while valid: the certificate's own expiry bounds its life. Its start is
        // not held against an issue time before it: the member states' own cases (Poland's,
        // Bulgaria's) are signed so, and the trust list, not the date, is what makes it trusted.
        let signedAt = c.issued ?? now
        guard signedAt <= issuer.notValidAfter else {
            return rule(
                false,
                RuleMessage("signature.issuerExpired", ["date": "\(issuer.notValidAfter)"]),
                subject: issuer.subject
            )
        }
        guard c.signatureIsValid(by: issuer.key) else {
            return rule(
                false,
                RuleMessage("signature.mismatch", ["issuer": issuer.subject]),
                subject: issuer.subject
            )
        }
        if let kinds = issuer.kinds, !kinds.contains(c.kind) {
            let known: Set<String> = ["t", "v", "r"]
            return rule(
                false,
                RuleMessage(
                    "signature.kind",
                    terms: ["kinds": kinds.sorted().filter(known.contains).map { "kind.\($0)" }]
                ),
                subject: issuer.subject
            )
        }
        return rule(
            true,
            RuleMessage("signature.trusted", ["algorithm": name, "issuer": issuer.subject]),
            subject: issuer.subject
        )
    }

    static func dateRule(
        _ test: HealthCertificate.Test,
        policy: VerificationPolicy,
        now: Date,
        timeZone: TimeZone
    )
        -> VerificationRule
    {
        guard let collected = test.collected else {
            return VerificationRule(
                name: "date",
                passed: false,
                test.collectedText.map { RuleMessage("date.unreadable", ["text": $0]) }
                    ?? RuleMessage("date.unreadable", terms: ["text": ["missing"]]),
                evidence: []
            )
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let days =
            calendar.dateComponents(
                [.day],
                from: calendar.startOfDay(for: collected),
                to: calendar.startOfDay(for: now)
            )
            .day ?? 0
        let text = test.collectedText ?? ""
        if days > policy.maxAgeDays {
            return VerificationRule(
                name: "date",
                passed: false,
                RuleMessage("date.old", ["days": "\(days)", "text": text, "max": "\(policy.maxAgeDays)"]),
                evidence: []
            )
        }
        if -days > policy.maxFutureDays {
            return VerificationRule(
                name: "date",
                passed: false,
                RuleMessage("date.futureTime", ["text": text, "days": "\(-days)"]),
                evidence: []
            )
        }
        return VerificationRule(
            name: "date",
            passed: true,
            RuleMessage.collected(text, days: days, labelled: true),
            evidence: []
        )
    }

    static func day(_ date: Date, _ timeZone: TimeZone) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withFullDate]
        f.timeZone = timeZone
        return f.string(from: date)
    }
}

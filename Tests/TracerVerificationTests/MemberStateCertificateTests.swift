import Foundation
import Testing
import TracerVerification

@testable import TracerCertificate

/// The EU member states' own Digital COVID Certificate test cases
/// (Tests/Fixtures/dgc-testdata, Apache 2.0, made by Tools/testing/trim_dgc_testdata.py), run as a
/// site runs them: every case's signer in one trust list, the verifier's clock at each case's
/// validation clock.
@Suite struct MemberStateCertificateTests {
    struct Case: Decodable {
        var file: String
        var prefix: String
        var certificate: String?
        var clock: String?
        var description: String
        var expected: [String: Bool]
    }

    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/dgc-testdata")
    static let cases: [Case] =
        (try? JSONDecoder().decode(
            [Case].self,
            from: Data(contentsOf: directory.appendingPathComponent("cases.json"))
        )) ?? []

    /// Every case's signer certificate, once each, in one PEM text.
    static var pem: String {
        var seen = Set<String>()
        var out = ""
        for c in cases {
            guard let der = c.certificate, seen.insert(der).inserted else { continue }
            out += "-----BEGIN CERTIFICATE-----\n"
            var rest = Substring(der)
            while !rest.isEmpty {
                out += rest.prefix(64) + "\n"
                rest = rest.dropFirst(64)
            }
            out += "-----END CERTIFICATE-----\n"
        }
        return out
    }

    /// A validation clock: RFC 3339, with or without a zone (UTC then) and with up to six
    /// fractional digits, as the member states wrote them.
    static func clock(_ text: String?) -> Date? {
        guard var text else { return nil }
        var fraction = 0.0
        if let dot = text.firstIndex(of: ".") {
            let digits = text[text.index(after: dot)...].prefix { $0.isNumber }
            fraction = Double("0." + digits) ?? 0
            text.removeSubrange(dot..<text.index(dot, offsetBy: digits.count + 1))
        }
        if !(text.hasSuffix("Z") || text.dropFirst(19).contains("+") || text.dropFirst(19).contains("-")) {
            text += "Z"
        }
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.date(from: text).map { $0.addingTimeInterval(fraction) }
    }

    @Test func theCasesAreThere() {
        #expect(Self.cases.count >= 500, "Tests/Fixtures/dgc-testdata/cases.json is missing or short")
    }

    /// One list of every member state's signers reads, whatever algorithms signed those signers'
    /// own certificates and whatever follows them; each entry it cannot use is one line.
    @Test func oneTrustListOfEveryMemberStatesSigners() throws {
        let list = try TrustList(pem: Self.pem, file: "dgc.pem")
        let distinct = Set(Self.cases.compactMap(\.certificate)).count
        #expect(list.skipped.isEmpty, "\(list.skipped)")
        #expect(list.issuers.count <= distinct && list.issuers.count > distinct / 2)
        for line in list.skipped { #expect(!line.contains("\n")) }
    }

    /// An entry whose key cannot be read costs that entry, named in one line, never the list.
    @Test func anUnreadableEntryIsSkippedNotTheWholeList() throws {
        let garbage = "-----BEGIN CERTIFICATE-----\nMAMCAQA=\n-----END CERTIFICATE-----\n"
        let list = try TrustList(pem: garbage + Self.pem, file: "site/trust.pem")
        #expect(list.issuers.count == (try TrustList(pem: Self.pem, file: "dgc.pem")).issuers.count)
        #expect(list.skipped.count == 1)
        #expect(list.skipped.first?.hasPrefix("site/trust.pem: certificate 1 skipped") == true, "\(list.skipped)")
        #expect(list.skipped.allSatisfy { !$0.contains("\n") })
        #expect(throws: CertificateError.self) { try TrustList(pem: garbage, file: "site/trust.pem") }
    }

    /// Every case the member states decided: decoding (prefix, Base45, zlib, CBOR), the signature
    /// with the one list, the issuer's key usage, and expiry at the case's clock.
    @Test func everyCaseIsDecidedAsTheMemberStatesExpect() throws {
        let list = try TrustList(pem: Self.pem, file: "dgc.pem")
        var wrong: [String] = []
        var signatures = 0
        for c in Self.cases {
            let e = c.expected
            let decodes = !["EXPECTEDUNPREFIX", "EXPECTEDB45DECODE", "EXPECTEDCOMPRESSION", "EXPECTEDDECODE"]
                .contains { e[$0] == false }
            let certificate: HealthCertificate
            do { certificate = try HealthCertificate(c.prefix) } catch {
                if decodes, e["EXPECTEDVERIFY"] != false {
                    wrong.append("\(c.file): does not decode (\(error)); expected to")
                }
                continue
            }
            if !decodes { wrong.append("\(c.file): decodes; expected not to (\(c.description))") }
            guard let now = Self.clock(c.clock) else {
                wrong.append("\(c.file): no validation clock '\(c.clock ?? "")'")
                continue
            }
            let rule = CertificateVerifier.signatureRule(certificate, trustList: list, now: now)
            let expiry = CertificateVerifier.expiryRule(certificate, now: now, timeZone: .gmt)
            RuleTextTests.check(Verification(accepted: false, rules: [rule, expiry], collectedAt: nil))
            let kindRefused = rule.message?.key == "signature.kind"
            if let verify = e["EXPECTEDVERIFY"] {
                signatures += 1
                // A signature that must verify does, by a trusted issuer (the issuer's key usage is
                // the cases' own expectation below); one that must not is refused, for whatever
                // reason (Poland's "signed with a recovery DSC" folds key usage into it).
                let right = verify ? rule.passed || kindRefused : !rule.passed
                if !right { wrong.append("\(c.file): signature \(rule.passed), expected \(verify): \(rule.detail)") }
            }
            if let usage = e["EXPECTEDKEYUSAGE"], e["EXPECTEDVERIFY"] != false {
                // false: the kind is refused, or (Iceland's "valid, no key usage") the issuer's
                // certificate names no health certificate usage at all, which allows every kind.
                let issuer = list.issuers[certificate.keyID]
                let right = usage ? !kindRefused : kindRefused || (issuer != nil && issuer?.kinds == nil)
                if !right {
                    wrong.append("\(c.file): key usage refused \(kindRefused), expected \(usage): \(rule.detail)")
                }
            }
            if let unexpired = e["EXPECTEDEXPIRATIONCHECK"] {
                let ok = expiry.passed
                if ok != unexpired {
                    wrong.append(
                        "\(c.file): unexpired \(ok), expected \(unexpired) (exp \(certificate.expires.map { "\($0)" } ?? "-"), clock \(now))"
                    )
                }
            }
        }
        print(
            "member states: \(Self.cases.count) cases, \(signatures) signatures, \(list.issuers.count) issuers in one list, \(wrong.count) wrong"
        )
        #expect(signatures >= 490)
        #expect(wrong.isEmpty, "\(wrong.count) cases wrong:\n\(wrong.joined(separator: "\n"))")
    }
}

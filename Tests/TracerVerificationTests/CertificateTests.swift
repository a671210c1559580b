import Foundation
import Testing
import TracerSite
import TracerTesting

@testable import TracerCertificate
@testable import TracerOCR
@testable import TracerReports
@testable import TracerVerification

/// Signed EU Digital COVID Certificates (issue 17, part 3): made by
/// Tools/testing/make_certificates.py with issuer keys of its own, read from rendered and
/// photographed QR codes by ZBar, checked against the trust list it wrote.
@Suite struct CertificateTests {
    /// The same shape as the OCR fixtures' manifest.
    typealias Entry = OCRFixtureTests.Entry

    static let utc = TimeZone(identifier: "UTC")!
    static let entries: [Entry] = (try? JSONDecoder().decode([Entry].self, from: ResultImages.certificates)) ?? []
    static let engine = Result { try OCREngine() }

    static func trust() throws -> TrustList {
        let file = ResultImages.file("trust.pem")
        return try TrustList(pem: try String(contentsOfFile: file, encoding: .utf8), file: file)
    }

    func read(_ name: String) throws -> OCRPage {
        let engine = try Self.engine.get()
        let path = ResultImages.file(name)
        return try engine.read(data: try engine.load(file: path), name: path)
    }

    @Test func base45KnownAnswers() throws {
        // RFC 9285's examples.
        for (text, bytes) in [
            ("BB8", "AB"), ("%69 VD92EX0", "Hello!!"), ("UJCLQE7W581", "base-45"), ("QED8WEX0", "ietf!"),
        ] {
            #expect(try Base45.decode(text) == Array(bytes.utf8), "\(text)")
        }
        for bad in ["A", "GGW", "abc", "ZZZZ"] { #expect(throws: CertificateError.self) { try Base45.decode(bad) } }
    }

    @Test func cborDecodesWhatItEncodesAndRefusesWhatIsBroken() throws {
        let value = CBOR.map([
            (.unsigned(1), .text("NL")),
            (.negative(259), .map([(.unsigned(1), .array([.bytes([1, 2, 3]), .bool(true)]))])),
            (.text("t"), .tagged(18, .array([.null, .float(1.5), .unsigned(70_000), .unsigned(5_000_000_000)]))),
        ])
        #expect(try CBOR.decode(value.encoded) == value)
        #expect(value[-260]?[1] == .array([.bytes([1, 2, 3]), .bool(true)]))
        // Cut short, a length past the end, left-over bytes, indefinite lengths, too deep.
        let bytes = value.encoded
        for broken in [Array(bytes.dropLast()), [0x5A, 0xFF, 0xFF, 0xFF, 0xFF, 0x00], bytes + [0], [0x9F, 0xFF]] {
            #expect(throws: CBORError.self) { try CBOR.decode(broken) }
        }
        #expect(throws: CBORError.self) { try CBOR.decode([UInt8](repeating: 0x81, count: 40) + [0x00]) }
        // An array claiming more items than there are bytes is refused before anything is allocated.
        #expect(throws: CBORError.self) { try CBOR.decode([0x9B, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]) }
    }

    @Test func theFixturesWereMade() {
        #expect(Self.entries.count >= 10, "Tools/testing/make_certificates.py wrote no manifest")
    }

    /// Each certificate read from its image (ZBar) and decided against the trust list: the
    /// decision, exactly the failed rules the manifest names, the collection day, and never the
    /// holder's name or date of birth.
    @Test func eachSignedResultIsDecidedByItsSignatureAndTest() throws {
        let trust = try Self.trust()
        #expect(trust.issuers.count == 2)
        for entry in Self.entries {
            let page = try read(entry.file)
            let copies = ["dcc-photo-positive.jpg", "dcc-small-on-scan.png"]
            let stem = copies.contains(entry.file) ? "dcc-positive-es256" : String(entry.file.dropLast(4))
            let text = try String(contentsOfFile: ResultImages.file(stem + ".txt"), encoding: .utf8)
            #expect(page.healthCertificate == text.trimmingCharacters(in: .whitespacesAndNewlines), "\(entry.file)")
            // The certificate decides: the page's printed words were not even read.
            #expect(page.words.isEmpty, "\(entry.file)")
            let v = SelfReportDesk.verify(
                page,
                policy: VerificationPolicy(),
                trustList: trust,
                now: Date(),
                timeZone: Self.utc
            )
            RuleTextTests.check(v)
            #expect(
                v.accepted == (entry.expect == "accept"),
                "\(entry.file) (\(entry.about)): \(v.failed.map(\.detail))"
            )
            #expect(v.decision != .doubtful, "\(entry.file)")
            #expect(Set(v.failed.map(\.name)) == Set(entry.failed), "\(entry.file): failed \(v.failed.map(\.detail))")
            if v.accepted {
                #expect(OCRFixtureTests.day(v.collectedAt) == entry.collected, "\(entry.file)")
                let signature = try #require(v.rules.first { $0.name == "signature" })
                #expect(signature.evidence.first?.text.hasPrefix("key id ") == true)
                #expect(trust.issuers[String(signature.evidence.first?.text.dropFirst(7) ?? "")] != nil)
            }
            let shown = String(describing: v.rules)
            for secret in ["Proefpersoon", "PROEFPERSOON", "Jan", "1990-04-12"] {
                #expect(!shown.contains(secret), "\(entry.file) shows the holder: \(secret)")
            }
        }
        let tampered = SelfReportDesk.verify(
            try read("dcc-tampered.png"),
            policy: VerificationPolicy(),
            trustList: trust,
            now: Date()
        )
        #expect(tampered.failed.first?.detail.hasPrefix("the signature does not match") == true, "\(tampered.failed)")
        let unknown = SelfReportDesk.verify(
            try read("dcc-unknown-issuer.png"),
            policy: VerificationPolicy(),
            trustList: trust,
            now: Date()
        )
        #expect(unknown.failed.first?.detail.hasPrefix("an unknown issuer: key id ") == true, "\(unknown.failed)")
    }

    @Test func withoutATrustListNoSignatureIsAccepted() throws {
        let v = SelfReportDesk.verify(
            try read("dcc-positive-es256.png"),
            policy: VerificationPolicy(),
            trustList: nil,
            now: Date()
        )
        #expect(!v.accepted)
        #expect(v.failed.map(\.name) == ["signature"])
        #expect(v.failed.first?.detail.contains("no trust list") == true)
    }

    @Test func aTrustListThatIsNotOneIsAnErrorNamingTheFile() throws {
        for (pem, words) in [
            ("not a pem", "no certificate"), ("", "no certificate"),
            ("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "not a CERTIFICATE"),
        ] {
            do {
                _ = try TrustList(pem: pem, file: "site/trust.pem")
                Issue.record("\(words): accepted")
            } catch {
                #expect(
                    error.description.hasPrefix("site/trust.pem: ") && error.description.contains(words),
                    "\(error)"
                )
                #expect(!error.description.contains("\n"))
            }
        }
        // A map naming a trust list that is not there: the map's file and line.
        let dir = TemporaryDirectory("tracer-trust")
        let map = dir.file("site.yaml")
        let example = try String(contentsOfFile: ServerPaths.map, encoding: .utf8)
        try (example[..<example.range(of: "\nsettings:")!.lowerBound] + "\nsettings:\n  trustList: missing.pem\n")
            .write(toFile: map, atomically: true, encoding: .utf8)
        do {
            _ = try Site.load(file: map)
            Issue.record("a missing trust list was accepted")
        } catch {
            #expect("\(error)".hasPrefix("\(map):"), "\(error)")
            #expect("\(error)".contains("settings: trustList: cannot read \(dir.file("missing.pem"))"), "\(error)")
        }
        try FileManager.default.copyItem(atPath: ResultImages.file("trust.pem"), toPath: dir.file("missing.pem"))
        let site = try Site.load(file: map)
        #expect(try TrustList(site.verification)?.issuers.count == 2)
    }
}

enum ServerPaths {
    static let map = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("BeaconMap/example-campus.yaml").path
}

import Foundation
import Testing

@testable import TracerVerification

/// The verifier's texts (`Resources/rule-texts.json`): one table, English and French, that the
/// command line's details and the person's page both say.
@Suite struct RuleTextTests {
    static func placeholders(_ text: String) -> Set<String> {
        Set(
            text.split(separator: "{", omittingEmptySubsequences: false).dropFirst().compactMap {
                $0.split(separator: "}").first.map(String.init)
            }
        )
    }

    @Test func bothLanguagesHaveEveryKeyAndNoValueEnglishLacks() throws {
        let texts = RuleMessage.texts
        #expect(Set(texts.keys) == ["en", "fr"])
        let en = try #require(texts["en"])
        let fr = try #require(texts["fr"])
        #expect(en.count >= 50)
        #expect(Set(en.keys) == Set(fr.keys), "\(Set(en.keys).symmetricDifference(fr.keys))")
        for (key, text) in fr {
            // French may leave a value out (a technical one), never ask for one English does not give.
            let extra = Self.placeholders(text).subtracting(Self.placeholders(en[key] ?? ""))
            #expect(extra.isEmpty, "\(key): \(extra)")
        }
    }

    @Test func aMessageIsSaidInEitherLanguage() {
        let m = RuleMessage.collected("2026-11-20 09:40", days: 2, labelled: true)
        #expect(m.text() == "collected 2026-11-20 09:40, 2 days ago")
        #expect(m.text("fr") == "prélevé le 2026-11-20 09:40, il y a 2 jours")
        #expect(RuleMessage.collected("21 Nov 2026", days: 0, labelled: false).text("fr").hasSuffix("aujourd'hui"))
        let picture = RuleMessage(
            "image.retake",
            ["edge": "12.8"],
            terms: ["problems": ["image.blurred", "image.faint"]]
        )
        #expect(picture.text().hasPrefix("the picture is blurred and too dark or faint: take it again"))
        #expect(picture.text("fr").hasPrefix("l'image est floue et trop sombre ou pâle : reprenez-la"))
        // A language the table lacks is English.
        #expect(m.text("de") == m.text())
    }

    /// Every rule of a verification carries its message, every key (and term) is in the table,
    /// and the English is the detail: called by the tests that verify pages and certificates.
    static func check(_ v: Verification, sourceLocation: SourceLocation = #_sourceLocation) {
        for rule in v.rules {
            guard let message = rule.message else {
                Issue.record("\(rule.name) has no message: \(rule.detail)", sourceLocation: sourceLocation)
                continue
            }
            for key in [message.key] + message.terms.values.flatMap({ $0 }) {
                #expect(RuleMessage.texts["en"]?[key] != nil, "no text for \(key)", sourceLocation: sourceLocation)
            }
            #expect(message.text() == rule.detail, sourceLocation: sourceLocation)
            let french = message.text("fr")
            #expect(!french.contains("{") && french != rule.detail, "\(french)", sourceLocation: sourceLocation)
        }
    }
}

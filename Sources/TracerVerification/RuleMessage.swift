import Foundation

/// A rule's detail as words a person reads in their own language: a key into the verifier's one
/// table of texts (`Resources/rule-texts.json`, English and French side by side), the values
/// read from the page or the certificate that go into it, and the words that are themselves
/// texts of the table (a day said relatively, the picture's problems), so that a page can say the
/// whole detail in French. The rule's `detail` is this message in English: the command line, the
/// review desk and the store read that; the person's page renders the key in the person's
/// language from the same table.
public struct RuleMessage: Sendable, Equatable, Codable {
    /// `covid.missing`, `date.twoDates`, …: a key of `rule-texts.json`.
    public var key: String
    /// `{name}` in the text: values as read (words of the page, dates, numbers).
    public var values: [String: String]
    /// `{name}` in the text filled with other keys' texts (joined with the language's "and").
    public var terms: [String: [String]]

    public init(_ key: String, _ values: [String: String] = [:], terms: [String: [String]] = [:]) {
        self.key = key
        self.values = values
        self.terms = terms
    }

    /// The message in `language` (English when the table has no such language or key).
    public func text(_ language: String = "en") -> String {
        let table = Self.texts[language] ?? [:]
        let english = Self.texts["en"] ?? [:]
        func say(_ key: String) -> String {
            var text = table[key] ?? english[key] ?? key
            for (name, value) in values { text = text.replacingOccurrences(of: "{\(name)}", with: value) }
            return text
        }
        var text = say(key)
        for (name, keys) in terms {
            let and = table["and"] ?? english["and"] ?? " and "
            text = text.replacingOccurrences(of: "{\(name)}", with: keys.map(say).joined(separator: and))
        }
        return text
    }

    /// The table: language → key → text. Read once from the JSON embedded in the binary; the
    /// tests check that both languages have the same keys and that no text names a value English
    /// lacks.
    public static let texts: [String: [String: String]] = {
        // The table is part of the binary: unreadable JSON is a build mistake the tests catch.
        (try? JSONDecoder().decode([String: [String: String]].self, from: Data(PackageResources.rule_texts_json)))
            ?? [:]
    }()
}

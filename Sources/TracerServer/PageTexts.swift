import Foundation
import TracerVerification

/// The texts of the server's pages (the person's page and the dashboard): each page's table of
/// texts by language and key (`Resources/*-texts.json`), put into the page once, at start, so
/// that every text a person reads is in one place and translatable.
enum PageTexts {
    typealias Table = [String: [String: String]]

    /// A table from its file. The file is part of the binary: unreadable JSON is a build mistake
    /// the tests catch (the page would show its keys).
    static func decode(_ bytes: [UInt8]) -> Table {
        (try? JSONDecoder().decode(Table.self, from: Data(bytes))) ?? [:]
    }

    /// A page's texts and the verifier's (each rule's detail, `detail.KEY`), by language: a rule's
    /// `message` said in the reader's language.
    static func withRuleDetails(_ own: Table) -> Table {
        var texts = own
        for (language, table) in RuleMessage.texts {
            for (key, text) in table { texts[language, default: [:]]["detail." + key] = text }
        }
        return texts
    }

    /// A table as a page and a worker carry it: sorted, compact.
    static func json(_ table: Table) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(table)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// `html` with `<!--TEXTS-->` replaced by the texts, as JSON in a script element that is never
    /// run (`<` written as `\u003c`, so no text can close it).
    static func embed(_ table: Table, in html: String) -> String {
        let texts = json(table).replacingOccurrences(of: "<", with: "\\u003c")
        return html.replacingOccurrences(
            of: "<!--TEXTS-->",
            with: "<script type=\"application/json\" id=\"texts\">\(texts)</script>"
        )
    }
}

import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import TracerAPI
import TracerModel
import TracerSite
@_spi(Blocking) import TracerStore
import TracerTesting

@testable import TracerServer

/// The person's page and its one-time links: a link opens once, in one browser; a used, forged,
/// malformed or revoked one gives nothing; guessing is slowed without locking tokens out; the page
/// runs only its own script.
@Suite struct PersonPageTests {
    static func post(_ client: some TestClientProtocol, _ body: String) async throws -> TestResponse {
        try await client.execute(
            uri: "/v1/links",
            method: .post,
            headers: [.contentType: "application/json"],
            body: ByteBuffer(string: body)
        )
    }

    @Test func aLinkOpensOnceAndItsTokenReadsItsDeviceOnly() async throws {
        let f = try await ServerFixture()
        let link = try await f.store.writing { db in try TokenStore.createLink(deviceID: "dev-7", name: nil, in: db) }
        #expect(link.url(base: "https://tracer.example.org/") == "https://tracer.example.org/me#c=\(link.code)")
        try await f.app().test(.router) { client in
            // Before it is opened, the record holds no token that any secret matches.
            let stored = try await f.store.reading { db in try db.get(Collections.token(link.id)) }
            #expect(stored["hash"] == .string("") && stored["link"]?.stringValue?.count == 64)

            let first = try await Self.post(client, #"{"code": "\#(link.code)"}"#)
            #expect(first.status == .ok)
            let linked = try #require(decoded(Components.Schemas.Linked.self, first))
            #expect(linked.deviceId == "dev-7" && linked.token.hasPrefix("tracer_\(link.id)_"))
            try await client.execute(
                uri: "/v1/devices/dev-7",
                method: .get,
                headers: ServerFixture.bearer(linked.token)
            ) {
                #expect($0.status == .ok)
                #expect(decoded(Components.Schemas.DeviceStatus.self, $0)?.status == .clear)
            }
            try await client.execute(
                uri: "/v1/devices/dev-1",
                method: .get,
                headers: ServerFixture.bearer(linked.token)
            ) {
                #expect($0.status == .forbidden)
            }

            // A second browser: 410, and no token.
            let again = try await Self.post(client, #"{"code": "\#(link.code)"}"#)
            #expect(again.status == .gone && errorCode(again) == "link_used")
            #expect(!String(buffer: again.body).contains("tracer_"))

            // "Forget this phone": the token revokes itself (a device's only; an admin's may not).
            try await client.execute(uri: "/v1/tokens/self", method: .delete, headers: ServerFixture.bearer(f.admin)) {
                #expect($0.status == .forbidden)
            }
            let second = try await f.store.writing { db in
                try TokenStore.createLink(deviceID: "dev-7", name: nil, in: db)
            }
            let other = try #require(
                decoded(Components.Schemas.Linked.self, try await Self.post(client, #"{"code": "\#(second.code)"}"#))
            )
            try await client.execute(
                uri: "/v1/tokens/self",
                method: .delete,
                headers: ServerFixture.bearer(other.token)
            ) {
                #expect($0.status == .ok && decoded(Components.Schemas.Revoked.self, $0)?.revoked == true)
            }
            try await client.execute(uri: "/v1/devices/dev-7", method: .get, headers: ServerFixture.bearer(other.token))
            {
                #expect($0.status == .unauthorized)
            }
            // The first phone's token is another's: untouched.
            try await client.execute(
                uri: "/v1/devices/dev-7",
                method: .get,
                headers: ServerFixture.bearer(linked.token)
            ) {
                #expect($0.status == .ok)
            }

            // A lost phone: the token (the link's record) revoked, refused at once.
            #expect(try await f.store.writing { db in try TokenStore.revoke(link.id, in: db) })
            try await client.execute(
                uri: "/v1/devices/dev-7",
                method: .get,
                headers: ServerFixture.bearer(linked.token)
            ) {
                #expect($0.status == .unauthorized)
            }
        }
    }

    /// A phone whose answer was lost (the link used on the server, its token never seen) tries
    /// again with its key: a new token, and the lost one ends. Another browser with the card's
    /// code, or the same key after ten minutes, or no key, gets nothing; a key of the wrong shape
    /// is a 400 naming it.
    @Test func aLostAnswerIsAnsweredAgainToTheSameKeyOnly() async throws {
        let f = try await ServerFixture()
        let link = try await f.store.writing { db in try TokenStore.createLink(deviceID: "dev-7", name: nil, in: db) }
        let key = "k3y-of_this-browser-0123456789"
        try await f.app().test(.router) { client in
            let bad = try await Self.post(client, #"{"code": "\#(link.code)", "attempt": "short"}"#)
            #expect(bad.status == .badRequest && String(buffer: bad.body).contains("attempt"))

            let lost = try #require(
                decoded(
                    Components.Schemas.Linked.self,
                    try await Self.post(client, #"{"code": "\#(link.code)", "attempt": "\#(key)"}"#)
                )
            )
            // The same key again: the device's token again, a new one.
            let again = try await Self.post(client, #"{"code": "\#(link.code)", "attempt": "\#(key)"}"#)
            #expect(again.status == .ok)
            let found = try #require(decoded(Components.Schemas.Linked.self, again))
            #expect(found.deviceId == "dev-7" && found.token != lost.token)
            try await client.execute(uri: "/v1/devices/dev-7", method: .get, headers: ServerFixture.bearer(found.token))
            {
                #expect($0.status == .ok)
            }
            try await client.execute(uri: "/v1/devices/dev-7", method: .get, headers: ServerFixture.bearer(lost.token))
            {
                #expect($0.status == .unauthorized)
            }
            // Another browser: with another key, or none.
            for body in [
                #"{"code": "\#(link.code)", "attempt": "another-browser-0123456789"}"#, #"{"code": "\#(link.code)"}"#,
            ] {
                let other = try await Self.post(client, body)
                #expect(other.status == .gone && errorCode(other) == "link_used", "\(body)")
            }
        }
        // Ten minutes after the link was opened, the key is worth nothing.
        let opened = try await f.store.reading { db in try TokenRecord(db.get(Collections.token(link.id))) }
        let linkedAt = try #require(opened.linkedAt).date
        #expect(opened.linkAttempt?.count == 64 && opened.linkAttempt?.contains(key) == false)
        for (after, expected) in [(599.0, true), (601.0, false)] {
            let outcome = try await f.store.writing { db in
                try TokenStore.exchange(link.code, attempt: key, now: linkedAt + after, in: db)
            }
            if case .token = outcome {
                #expect(expected, "\(after) s")
            } else {
                #expect(!expected, "\(after) s: \(outcome)")
            }
        }
    }

    @Test func forgedMalformedAndRevokedCodesGiveNothing() async throws {
        let f = try await ServerFixture()
        let tokens = Tokens(store: f.store)
        let link = try tokens.createLink(deviceID: "dev-7", name: nil)
        let revoked = try tokens.createLink(deviceID: "dev-8", name: nil)
        #expect(try tokens.revoke(revoked.id))
        let secret = link.code.split(separator: "-")[1]
        let forged = "\(link.id)-" + String(secret.reversed())
        // A device token's id with any secret: it has no link.
        let deviceID = String(f.device.split(separator: "_")[1])
        try await f.app().test(.router) { client in
            // The whole link of a revoked token: its holder is told access was withdrawn.
            let withdrawn = try await Self.post(client, #"{"code": "\#(revoked.code)"}"#)
            #expect(withdrawn.status == .gone && errorCode(withdrawn) == "link_withdrawn", "\(withdrawn.status)")
            for code in [forged, "\(deviceID)-\(secret)", "x", "", String(repeating: "a", count: 45)] {
                let r = try await Self.post(client, #"{"code": "\#(code)"}"#)
                #expect(r.status == .notFound && errorCode(r) == "not_found", "\(code): \(r.status)")
            }
            for body in ["", "{}", #"{"code": 7}"#, "[", #"["\#(link.code)"]"#] {
                let r = try await Self.post(client, body)
                #expect(r.status == .badRequest, "\(body): \(r.status)")
            }
            // Still good after all that: the forgeries did not spend it.
            #expect(try await Self.post(client, #"{"code": "\#(link.code)"}"#).status == .ok)
        }
    }

    @Test func guessingIsSlowedWithoutLockingTokensOut() async throws {
        // A fixed clock: the twelve guesses fall in one minute however slowly they are sent (a
        // loaded run once took 104 s for them, and the window let the twelfth through).
        let f = try await ServerFixture(now: Date())
        try await f.app().test(.router) { client in
            var statuses: [HTTPResponse.Status] = []
            for i in 0..<12 {
                let code = "abcdefghijkl-" + String(repeating: "z", count: 31) + "\(i % 10)"
                statuses.append(try await Self.post(client, #"{"code": "\#(code)"}"#).status)
            }
            #expect(
                statuses.prefix(10).allSatisfy { $0 == .notFound } && statuses.last == .tooManyRequests,
                "\(statuses)"
            )
            // The same client's tokens still work.
            try await client.execute(uri: "/v1/devices/dev-1", method: .get, headers: ServerFixture.bearer(f.device)) {
                #expect($0.status == .ok)
            }
        }
    }

    /// The dashboard's texts (issue 45: every page in both languages): one table, English and
    /// French with the same keys and the same `{names}` in each, every key the page names there
    /// (a missing one would show its key), and nothing in it that can close its element.
    @Test func theDashboardCarriesBothLanguagesAndEveryTextItNames() throws {
        let html = Dashboard.page
        let start = try #require(html.range(of: #"<script type="application/json" id="texts">"#))
        let end = try #require(html.range(of: "</script>", range: start.upperBound..<html.endIndex))
        #expect(!html[start.upperBound..<end.lowerBound].contains("<"))
        let texts = try JSONDecoder().decode(
            [String: [String: String]].self,
            from: Data(html[start.upperBound..<end.lowerBound].utf8)
        )
        #expect(Set(texts.keys) == ["en", "fr"])
        let en = try #require(texts["en"])
        let fr = try #require(texts["fr"])
        #expect(Set(en.keys) == Set(fr.keys), "\(Set(en.keys).symmetricDifference(fr.keys).sorted())")
        #expect(en["detail.date.twoDates"] != nil && fr["detail.date.twoDates"] != en["detail.date.twoDates"])
        // (The verifier's French may leave a technical value out: RuleTextTests.)
        for (key, text) in en where !key.hasPrefix("detail.") {
            let names = { (s: String) in Set(s.matches(of: /\{(\w+)\}/).map { String($0.1) }) }
            #expect(names(text) == names(fr[key] ?? ""), "\(key): \(text) / \(fr[key] ?? "")")
        }
        let script = html[end.upperBound...]
        var named = Set(
            script.matches(of: /(?:\bt\(|say\(|data-(?:text|rich|placeholder)=)"([a-zA-Z][A-Za-z0-9_.]*)"/)
                .map { String($0.1) }
        )
        named.formUnion(
            html[..<start.lowerBound].matches(of: /data-(?:text|rich|placeholder)="([^"]+)"/).map { String($0.1) }
        )
        for key in script.matches(of: /plural\("([a-zA-Z.]+)"/).map({ String($0.1) }) {
            named.insert(key + ".other")
        }
        #expect(named.count > 100, "\(named.count) texts named")
        let missing = named.filter { !$0.hasSuffix(".") }.subtracting(en.keys)
        #expect(missing.isEmpty, "named by the dashboard, not in its texts: \(missing.sorted())")
    }

    @Test func thePageRunsOnlyItsOwnScriptAndCarriesBothLanguages() async throws {
        let f = try await ServerFixture { site in
            site.guidance = Guidance(
                text: "Stay home </script><script>alert(1)</script>",
                link: "https://example.org/advice"
            )
        }
        try await f.app().test(.router) { client in
            try await client.execute(uri: "/me", method: .get) { r in
                #expect(r.status == .ok)
                let csp = try #require(r.headers[.contentSecurityPolicy])
                let html = String(buffer: r.body)
                // The one script the policy allows is the page's own.
                let open = try #require(html.range(of: "<script>"))
                let close = try #require(html.range(of: "</script>", range: open.upperBound..<html.endIndex))
                let hash = Digest.sha256Base64(Array(html[open.upperBound..<close.lowerBound].utf8))
                #expect(csp.contains("script-src 'sha256-\(hash)';"), "\(csp)")
                #expect(!csp.contains("script-src 'unsafe-inline'"))
                #expect(csp.contains("manifest-src 'self'"), "\(csp)")
                #expect(r.headers[HTTPField.Name("Referrer-Policy")!] == "no-referrer")
                // Every key in both languages, and no text can close the texts' element.
                let start = try #require(html.range(of: #"<script type="application/json" id="texts">"#))
                let end = try #require(html.range(of: "</script>", range: start.upperBound..<html.endIndex))
                let texts = try JSONDecoder().decode(
                    [String: [String: String]].self,
                    from: Data(html[start.upperBound..<end.lowerBound].utf8)
                )
                #expect(Set(texts.keys) == ["en", "fr"])
                #expect(Set(texts["en"]!.keys) == Set(texts["fr"]!.keys))
                #expect(!html[start.upperBound..<end.lowerBound].contains("<"))
                // The printed cards' texts stay with the command line (and the card's texts are there).
                #expect(!texts["en"]!.keys.contains { $0.hasPrefix("card.") })
                #expect(PersonPage.cardTexts.map(\.language) == ["en", "fr"])
                #expect(!PersonPage.workerScript.contains("card.instruction"))
                #expect(PersonPage.workerScript.contains(#""fr":{"#), "the worker has lost its texts")
                // Every text the page names whole (t("…"), data-text="…") is in the table: a key
                // missing would show the key itself to the person.
                let named = html.matches(of: /(?:\bt\("|data-text=")([a-z][A-Za-z0-9_.]*)"/).map { String($0.1) }
                    .filter { !$0.hasSuffix(".") }
                #expect(named.count > 40, "\(named.count) texts named")
                let missing = Set(named).subtracting(texts["en"]!.keys)
                #expect(missing.isEmpty, "named by the page, not in its texts: \(missing.sorted())")
            }
            // The site's guidance is data, never part of the page.
            try await client.execute(uri: "/v1/page", method: .get, headers: ServerFixture.bearer(f.device)) { r in
                #expect(r.status == .ok)
                let page = try #require(decoded(Components.Schemas.Page.self, r))
                #expect(page.site == "Example Campus")
                #expect(page.guidance?.text.hasPrefix("Stay home </script>") == true)
                #expect(page.guidance?.link == "https://example.org/advice")
                #expect(
                    page.rooms.additionalProperties["kiosk-lecture"] == "Lecture Hall"
                        && page.rooms.additionalProperties["b-lab-door"] == "Wet Lab"
                )
                #expect(page.radiusMetres == 6)
            }
            try await client.execute(uri: "/v1/page", method: .get) { #expect($0.status == .unauthorized) }
            // Installable: a manifest named after the site, standalone, opening /me, with icons
            // that are there and of the sizes it says.
            try await client.execute(uri: "/me/manifest.json", method: .get) { r in
                #expect(r.status == .ok && r.headers[.contentType] == "application/manifest+json")
                let manifest = try #require(
                    try JSONSerialization.jsonObject(with: Data(buffer: r.body)) as? [String: Any]
                )
                #expect(
                    manifest["name"] as? String == "Example Campus" && manifest["display"] as? String == "standalone"
                )
                #expect(manifest["start_url"] as? String == "/me" && manifest["scope"] as? String == "/me")
                let icons = try #require(manifest["icons"] as? [[String: String]])
                #expect(icons.count == 3)
                for icon in icons {
                    let src = try #require(icon["src"])
                    try await client.execute(uri: src, method: .get) { i in
                        #expect(i.status == .ok && i.headers[.contentType] == icon["type"], "\(src)")
                        let bytes = Array(Data(buffer: i.body))
                        if let size = icon["sizes"], size != "any" {
                            // The PNG's own width and height (its IHDR), as the manifest says.
                            let side = bytes.count > 24 ? Int(bytes[16..<20].reduce(0) { $0 << 8 | UInt32($1) }) : 0
                            #expect(size == "\(side)x\(side)", "\(src): \(side)")
                        }
                    }
                }
            }
            try await client.execute(uri: "/me/icons/icon-1024.png", method: .get) { #expect($0.status == .notFound) }
        }
    }
}

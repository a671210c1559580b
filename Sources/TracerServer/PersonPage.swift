import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import TracerAPI
import TracerModel
import TracerSite
import TracerStore
import TracerVerification

/// The person's page (`GET /me`): the page of the people who wear the badges, phones first. One
/// self-contained file (`Resources/person.html`), with every text a person reads in one table
/// (`Resources/person-texts.json`: English and French, by key) put into it once, at start. The
/// page takes a one-time link's code from its address (`#c=…`, never sent to the server but by
/// the page itself, to `POST /v1/links`), keeps the device token in the browser, and shows the
/// device's status live (`/v1/devices/{id}`, `/v1/watch`), with the site's guidance
/// (`/v1/page`).
public enum PersonPage {
    static func response() -> Response {
        Response(
            status: .ok,
            headers: [
                .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
                // Only the page's own script runs (by its hash): no text the page shows can become
                // code, whatever a site's guidance or a note holds.
                .contentSecurityPolicy:
                    "default-src 'none'; script-src '\(scriptHash)'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; worker-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
                HTTPField.Name("Referrer-Policy")!: "no-referrer",
                HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            ],
            body: ResponseBody(byteBuffer: ByteBuffer(string: page))
        )
    }

    /// `GET /me/sw.js`: the page's service worker, which shows a push as a notification (in the
    /// browser's language: the texts put in at start) and opens the page when it is touched.
    static func worker() -> Response {
        Response(
            status: .ok,
            headers: [
                .contentType: "text/javascript; charset=utf-8", .cacheControl: "no-cache",
                // Its scope is the page, /me, one level above the script's own folder.
                HTTPField.Name("Service-Worker-Allowed")!: "/me",
                HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            ],
            body: ResponseBody(byteBuffer: ByteBuffer(string: workerScript))
        )
    }

    /// `GET /me/manifest.json`: the page as an app a phone installs (and, on an iPhone, the only
    /// way a page gets Web Push: from the home screen). Named after the site; it opens `/me`,
    /// where the browser's kept token is.
    static func manifest(site: String?) -> Response {
        let name = site ?? "tracer"
        let manifest: [String: Any] = [
            "name": name, "short_name": String(name.prefix(12)), "start_url": "/me", "scope": "/me",
            "id": "/me", "display": "standalone", "background_color": "#fafafa", "theme_color": "#0b57d0",
            "icons": [
                ["src": "/me/icons/icon.svg", "sizes": "any", "type": "image/svg+xml"],
                ["src": "/me/icons/icon-192.png", "sizes": "192x192", "type": "image/png"],
                ["src": "/me/icons/icon-512.png", "sizes": "512x512", "type": "image/png", "purpose": "any"],
            ],
        ]
        let body = (try? JSONSerialization.data(withJSONObject: manifest, options: [.sortedKeys])) ?? Data("{}".utf8)
        return Response(
            status: .ok,
            headers: [.contentType: "application/manifest+json", .cacheControl: "no-cache"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: body))
        )
    }

    /// `GET /me/icons/{name}`: the page's icon, drawn (`Resources/person-icon.svg`) and as the
    /// PNGs phones ask for, rendered from it once (`rsvg-convert -w 192`, then 8-bit).
    static func icon(_ name: String) throws -> Response {
        guard let icon = icons[name] else {
            throw APIError.notFound("no icon \(name.prefix(40)): icon.svg, icon-192.png or icon-512.png")
        }
        return Response(
            status: .ok,
            headers: [.contentType: icon.type, .cacheControl: "max-age=86400"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: icon.bytes))
        )
    }

    static let icons: [String: (type: String, bytes: [UInt8])] = [
        "icon.svg": ("image/svg+xml", PackageResources.person_icon_svg),
        "icon-192.png": ("image/png", PackageResources.person_icon_192_png),
        "icon-512.png": ("image/png", PackageResources.person_icon_512_png),
    ]

    static let workerScript: String = {
        let script = String(decoding: PackageResources.person_sw_js, as: UTF8.self)
        return script.replacingOccurrences(of: "/*TEXTS*/ {}", with: PageTexts.json(onPage(ownTexts)))
    }()

    /// What a printed card says, in each of the page's languages (the card's texts live in the
    /// page's table, so that one translation covers both): its instruction, and its label for a
    /// badge's serial.
    public static var cardTexts: [(language: String, instruction: String, badge: String)] {
        texts.keys.sorted().compactMap { language in
            guard let table = texts[language], let instruction = table["card.instruction"],
                let badge = table["card.badge"]
            else { return nil }
            return (language, instruction, badge)
        }
    }

    /// What the page and its worker are sent of a table: all but the printed cards' texts
    /// (`card.*`), which only the command line uses (they would add 500 bytes to every page).
    static func onPage(_ table: [String: [String: String]]) -> [String: [String: String]] {
        table.mapValues { $0.filter { !$0.key.hasPrefix("card.") } }
    }

    /// The page's own texts (`Resources/person-texts.json`), by language. The table is part of
    /// the binary: unreadable JSON is a build mistake the tests catch.
    static let ownTexts = PageTexts.decode(PackageResources.person_texts_json)

    /// The page's texts and the verifier's (each rule's detail, `detail.KEY`), by language.
    static let texts = PageTexts.withRuleDetails(ownTexts)

    /// The page with its texts.
    static let page = PageTexts.embed(
        onPage(texts),
        in: String(decoding: PackageResources.person_html, as: UTF8.self)
    )

    /// `sha256-…` of the page's one script, for its Content-Security-Policy.
    static let scriptHash: String = {
        guard let open = page.range(of: "<script>"),
            let close = page.range(of: "</script>", range: open.upperBound..<page.endIndex)
        else { return "none" }
        return "sha256-" + Digest.sha256Base64(Array(page[open.upperBound..<close.lowerBound].utf8))
    }()
}

extension API {
    /// `POST /v1/links` `{"code": "…"}`: a one-time link's code for the device's token, once. No
    /// token is needed (the code is the credential); a wrong code counts against the client on a
    /// limiter of its own (`linkLimiter`), so codes cannot be guessed at speed and its tokens
    /// still work.
    func exchangeLink(_ code: String, attempt: String?, client: String) async throws -> Components.Schemas.Linked {
        try linkLimiter.refuseIfLimited(client, "link codes")
        if let attempt, !TokenStore.isAttemptKey(attempt) {
            throw APIError.badRequest("attempt: 16 to 64 letters, digits, '-' or '_'")
        }
        switch try await store.writing({ db in try TokenStore.exchange(code, attempt: attempt, in: db) }) {
        case .token(let token, let deviceID):
            return Components.Schemas.Linked(token: token, deviceId: deviceID)
        case .used:
            throw APIError(
                .gone,
                .linkUsed,
                "this link was used already, in another browser: ask the site for a new card"
            )
        case .withdrawn:
            throw APIError(
                .gone,
                .linkWithdrawn,
                "this link's access was withdrawn (Forget this phone, or by the site): ask the site for a new card"
            )
        case .unknown:
            linkLimiter.failed(client)
            throw APIError(.notFound, .notFound, "no such link: check the whole link, or ask the site for a new card")
        }
    }

    /// What the person's page shows beside the status: the site's name, its guidance, and the
    /// room of each beacon (the status names beacons by key).
    var page: Components.Schemas.Page {
        guard let site else {
            return Components.Schemas.Page(
                site: nil,
                guidance: nil,
                rooms: .init(additionalProperties: [:]),
                radiusMetres: ExposureSettings().radius,
                pushKey: pushKey
            )
        }
        var rooms: [String: String] = [:]
        for anchor in site.anchors {
            rooms[anchor.key] = site.room(anchor.room)?.name ?? anchor.room
        }
        return Components.Schemas.Page(
            site: site.name,
            guidance: site.guidance.map { .init(text: $0.text, link: $0.link) },
            rooms: .init(additionalProperties: rooms),
            radiusMetres: site.exposure.radius,
            pushKey: pushKey
        )
    }
}

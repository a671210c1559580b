import HTTPTypes
import Hummingbird
import NIOCore

/// The dashboard: one self-contained page (no build step, nothing fetched from elsewhere). It
/// asks for an admin token once (kept in the tab's sessionStorage; `#token=…` in the address also
/// works), draws the site's floor plan from `/v1/beacons`, keeps occupancy and exposure counts per
/// anchor live over `/v1/watch`, looks devices up, and shows a beacon's exposures as a table and
/// a timeline, and lists the reports held for the health team's review, to approve or deny. In
/// English and French: every text from one table (`Resources/dashboard-texts.json`).
enum Dashboard {
    static func response() -> Response {
        Response(
            status: .ok,
            headers: [
                .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
                .contentSecurityPolicy:
                    "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data: blob:",
            ],
            body: ResponseBody(byteBuffer: ByteBuffer(string: page))
        )
    }

    /// The page, from `Resources/dashboard.html`, embedded in the binary at build time (a kiosk
    /// or server installs one file), with its texts (`Resources/dashboard-texts.json`, by
    /// language and key) and the verifier's (`detail.KEY`: a report's evidence in the health
    /// team's language).
    static let page = PageTexts.embed(
        PageTexts.withRuleDetails(PageTexts.decode(PackageResources.dashboard_texts_json)),
        in: String(decoding: PackageResources.dashboard_html, as: UTF8.self)
    )
}

/// The HTTP API's contract: an OpenAPI 3.1 document (`Resources/openapi.yaml`), served as it is
/// at `GET /openapi.yaml`. Every route the router answers is in it (`OpenAPITests`), and
/// schemathesis checks the live server's answers against it (`Tools/testing/schemathesis`).
enum OpenAPIDocument {
    static func response() -> Response {
        Response(
            status: .ok,
            headers: [.contentType: "application/yaml; charset=utf-8", .cacheControl: "no-cache"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: PackageResources.openapi_yaml))
        )
    }
}

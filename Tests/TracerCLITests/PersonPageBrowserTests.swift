import Foundation
import Testing
import TracerModel
import TracerStore
import TracerTesting

/// The person's page as a site runs it: `tracer serve`, a badge's link from `tracer token create
/// --link`, Debian's headless Chromium at a phone's size (390×844), and axe-core on each screen.
@Suite struct PersonPageBrowserTests {
    /// The example campus with the site's own guidance, which holds markup that must stay text.
    static func mapWithGuidance(in dir: TemporaryDirectory) throws -> String {
        let text = try String(contentsOfFile: ExposureCommandTests.map, encoding: .utf8)
        let guidance = """
            settings:
              guidance:
                text: 'Stay at home, book a test, and tell the people you live with. The clinic: 514 555 0100. <img src=x onerror="document.title=''owned''">'
                link: https://example.org/advice
            """
        let file = dir.file("campus.yaml")
        try text.replacingOccurrences(of: "settings:", with: guidance).write(
            toFile: file,
            atomically: true,
            encoding: .utf8
        )
        return file
    }

    /// Follow the link, see "clear", live; the reporter, who sat beside them, self-reports from
    /// their own machine (`tracer self-report --server`), and the page says "exposed", with the
    /// room and the time, within 2 s of the flagging's commit and without a reload; another
    /// browser with the same link is told it was used; a second phone's link in French; no link
    /// at all. axe-core on each: no serious or critical violation.
    @Test func aBadgesLinkThePageLiveAndItsScreens() async throws {
        #expect(Chromium.installed, "Debian's chromium is needed (Tools/setup installs it)")
        let axe = try Chromium.axeCore()
        let t = ExposureCommandTests()
        try await t.rangeALabMorning()
        let published = try await t.tracer("map", "publish", try Self.mapWithGuidance(in: t.dir))
        try #require(published.status == 0, "\(published.stderr)")
        let reporter = "\(ExposureCommandTests.uuid):1:1"
        let colleague = "\(ExposureCommandTests.uuid):1:2"
        let token = try await t.tracer("token", "create", "--role", "device", "--device", reporter)
        try #require(token.status == 0, "\(token.stderr)")
        let tokenFile = t.dir.file("reporter.token")
        try token.stdout.write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let server = try await ReplicationTests.SiteServer(store: t.store)
        defer { server.process.kill() }
        var links: [String] = []
        for _ in 0..<2 {
            let made = try await t.tracer(
                "token",
                "create",
                "--role",
                "device",
                "--device",
                colleague,
                "--link",
                server.url
            )
            try #require(made.status == 0, "\(made.stderr)")
            links.append(made.stdout.trimmingCharacters(in: .newlines))
        }
        let (link, secondPhone) = (links[0], links[1])
        let card = "document.getElementById('card')"
        let go = t.dir.file("go")

        async let first = Chromium.run(
            Chromium.phone(link, screenshot: "person-exposed.png") + [
                "--ready",
                "document.body.dataset.screen === 'page' && \(card).dataset.status === 'clear' && document.getElementById('live').dataset.live === 'yes'",
                "--act", "true",
                "--check",
                "\(card).dataset.status === 'exposed' && document.querySelectorAll('#exposures li').length === 1 && document.querySelector('#exposures li').textContent.includes('Wet Lab') && document.getElementById('guidance-text').textContent.includes('<img src=x') && document.querySelector('main img') === null && document.title !== 'owned'",
                "--go", go, "--axe", axe,
            ]
        )
        try await Chromium.waitUntilReady("person-exposed.png")
        _ = FileManager.default.createFile(atPath: go, contents: Data())
        let reported = try await TracerProcess.running([
            "self-report", ResultImages.file("lab-pcr-positive.png"), "--yes", "--server", server.url, "--token-file",
            tokenFile,
        ])
        #expect(reported.status == 0, "\(reported.stderr)")
        let (status, outcome, output) = try await first
        #expect(status == 0 && outcome?.check == true, "\(output)")
        #expect(outcome?.axe?.isEmpty == true, "\(outcome?.axe ?? [])")
        // From the flagging's commit (the exposure's server timestamp) to the page saying so.
        let store = try DocumentStore(path: t.store)
        let exposures = try store.getDocuments(Query(collection: Collections.exposures(of: colleague)))
        let flagged = try #require(exposures.first?["flaggedAt"]?.timestampValue?.seconds)
        let latency = (outcome?.checkedAt ?? .infinity) - flagged
        #expect(latency <= 2, "the page said exposed \(latency) s after the flagging's commit")

        // Another browser with the same link: told it was used, never the status.
        let (usedStatus, used, usedOutput) = try await Chromium.run(
            Chromium.phone(link, screenshot: "person-link-used.png") + [
                "--ready",
                "document.body.dataset.screen === 'used' && document.getElementById('page').hidden && localStorage.getItem('tracer.person') === null",
                "--axe", axe,
            ]
        )
        #expect(usedStatus == 0 && used?.ready == true, "\(usedOutput)")

        // A second phone's own link, in French.
        let (frStatus, fr, frOutput) = try await Chromium.run(
            Chromium.phone(secondPhone, screenshot: "person-exposed-fr.png") + [
                "--lang", "fr",
                "--ready",
                "document.documentElement.lang === 'fr' && \(card).dataset.status === 'exposed' && document.getElementById('word').textContent === 'Exposé·e' && document.querySelector('#exposures li').textContent.includes('Wet Lab')",
                "--axe", axe,
            ]
        )
        #expect(frStatus == 0 && fr?.ready == true, "\(frOutput)")

        // No link at all.
        let (noneStatus, none, noneOutput) = try await Chromium.run(
            Chromium.phone(server.url + "/me", screenshot: "person-no-link.png") + [
                "--ready", "document.body.dataset.screen === 'none'", "--axe", axe,
            ]
        )
        #expect(noneStatus == 0 && none?.ready == true, "\(noneOutput)")
    }
}

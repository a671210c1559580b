import Foundation
import Testing
import TracerModel
@_spi(Blocking) import TracerStore
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
        let exposures = try await store.reading { db in
            try db.getDocuments(Query(collection: Collections.exposures(of: colleague)))
        }
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
                "document.documentElement.lang === 'fr' && \(card).dataset.status === 'exposed' && document.getElementById('word').textContent === 'Exposé·e' && document.querySelector('#exposures li').textContent.includes('Wet Lab') && document.getElementById('notify').dataset.state === 'off' && !document.getElementById('notify-on').hidden",
                // Notifications asked for: headless Chromium has no push service to reach (no
                // network to Google's), so the page must say, in a line, that it could not.
                "--step", "document.getElementById('notify-on').click(); true",
                "['failed', 'blocked'].includes(document.getElementById('notify').dataset.state) && document.getElementById('notify-text').textContent.length > 20",
                // A photo checked (nothing recorded without approval): every rule and why, in
                // French, from the verifier's own table of texts.
                "--file", "#photo=\(ResultImages.file("lab-pcr-positive-two-dates.png"))",
                "--step",
                "['start-report', 'symptoms-yes', 'tested-yes', 'check'].forEach((id) => document.getElementById(id).click()); true",
                "document.getElementById('verdict').dataset.verdict === 'pending' && document.getElementById('rules').textContent.includes('la page donne deux dates de prélèvement') && document.getElementById('rules').textContent.includes('le résultat est positif') && !/the page|the result|collected/.test(document.getElementById('rules').textContent)",
                // "Forget this phone", confirmed: the page keeps nothing and says so.
                "--step",
                "document.getElementById('forget-ask').click(); document.getElementById('forget-yes').click(); true",
                "document.body.dataset.screen === 'forgotten' && localStorage.getItem('tracer.person') === null",
                "--axe", axe,
            ]
        )
        #expect(frStatus == 0 && fr?.ready == true && fr?.steps?.count == 3, "\(frOutput)")
        // Its token is revoked (the link's record, by its id in the code).
        let secondID = try #require(secondPhone.split(separator: "=").last?.split(separator: "-").first)
        let listed = try await t.tracer("token", "list")
        #expect(
            listed.stdout.split(separator: "\n").contains { $0.hasPrefix(secondID) && $0.contains("revoked") },
            "\(listed.stdout)"
        )

        // No link at all.
        let (noneStatus, none, noneOutput) = try await Chromium.run(
            Chromium.phone(server.url + "/me", screenshot: "person-no-link.png") + [
                "--ready", "document.body.dataset.screen === 'none'", "--axe", axe,
            ]
        )
        #expect(noneStatus == 0 && none?.ready == true, "\(noneOutput)")
    }

    /// A self-report from the page: the questionnaire, a photo chosen, every rule shown, nothing
    /// recorded until the person approves; the report held for review shows "with the health
    /// team", and the health team's approval (from another machine, `tracer report approve
    /// --server`) turns the page "positive" without a reload. axe-core at each step.
    @Test func aSelfReportFromThePageWaitsForApprovalThenForReview() async throws {
        #expect(Chromium.installed, "Debian's chromium is needed (Tools/setup installs it)")
        let axe = try Chromium.axeCore()
        let t = ExposureCommandTests()
        try await t.rangeALabMorning()
        let reporter = "\(ExposureCommandTests.uuid):1:1"
        let admin = try await t.tracer("token", "create", "--role", "admin", "--name", "nurse")
        try #require(admin.status == 0, "\(admin.stderr)")
        let adminFile = t.dir.file("admin.token")
        try admin.stdout.write(toFile: adminFile, atomically: true, encoding: .utf8)
        let server = try await ReplicationTests.SiteServer(store: t.store)
        defer { server.process.kill() }
        let made = try await t.tracer("token", "create", "--role", "device", "--device", reporter, "--link", server.url)
        try #require(made.status == 0, "\(made.stderr)")
        let link = made.stdout.trimmingCharacters(in: .newlines)
        let card = "document.getElementById('card')"
        let click = { (id: String) in "document.getElementById('\(id)').click();" }

        async let page = Chromium.run(
            Chromium.phone(link, screenshot: "person-report.png") + [
                "--ready",
                "document.body.dataset.screen === 'page' && \(card).dataset.status === 'clear' && document.getElementById('live').dataset.live === 'yes'",
                "--file", "#photo=\(ResultImages.file("lab-pcr-positive-two-dates.png"))",
                "--step",
                click("start-report") + click("symptoms-yes") + click("tested-yes") + click("check") + " true",
                "document.getElementById('verdict').dataset.verdict === 'pending' && document.querySelectorAll('#rules li').length >= 5 && !document.getElementById('approve').hidden && document.getElementById('rules').textContent.includes('The date of the test')",
                "--step", click("approve") + " true",
                "document.getElementById('report').dataset.report === 'pending' && !document.getElementById('report').hidden && document.getElementById('selfreport').hidden",
                "--step", "true", "\(card).dataset.status === 'positive' && document.getElementById('report').hidden",
                "--axe", axe, "--timeout", "120",
            ]
        )
        // Once the report waits, the health team approves it from another machine.
        let store = try DocumentStore(path: t.store)
        var held: DocumentSnapshot?
        _ = await until(150) {
            held = (try? await store.reading { db in try db.getDocuments(Report.of(device: reporter)) })?
                .first { Report.is($0, .pending) }
            return held != nil
        }
        let id = try #require(held?.id, "no report was held")
        // The page has shown it waiting (its step's screenshot is written) before the decision.
        let waiting = Chromium.artifacts + "/person-report-step2.png"
        _ = await until(120) { FileManager.default.fileExists(atPath: waiting) }
        let approved = try await TracerProcess.running([
            "report", "approve", id, "--server", server.url, "--token-file", adminFile,
        ])
        #expect(approved.status == 0, "\(approved.stderr)")

        let (status, outcome, output) = try await page
        #expect(status == 0, "\(output)")
        #expect(outcome?.steps?.count == 3 && outcome?.steps?.allSatisfy(\.check) == true, "\(output)")
        #expect(outcome?.axe?.isEmpty == true, "\(outcome?.axe ?? [])")
        // Nothing was recorded by the check: the report dates from after it, with the answers.
        let report = try #require(try await store.reading { db in try db.get(Collections.report(id)) }.data)
        let created = try #require(report["createdAt"]?.timestampValue?.seconds)
        #expect(created > (outcome?.steps?.first?.at ?? .infinity), "recorded at \(created), before the approval")
        #expect(
            report["answers"]?["symptoms"] == .bool(true) && report["answers"]?["tested"] == .bool(true),
            "\(report)"
        )
    }
}

import ArgumentParser
import Foundation
import NIOCore
import OpenAPIRuntime
import TracerAPI
import TracerCertificate
import TracerExposure
import TracerModel
import TracerOCR
import TracerReplication
import TracerReports
import TracerSite
@_spi(Blocking) import TracerStore
import TracerVerification

/// The verification shared by `tracer verify` and `tracer self-report`: read, decide, show.
struct VerifyOptions: ParsableArguments {
    @Argument(help: "The photographed or screenshotted test result: PNG, JPEG, TIFF or WebP.") var image: String
    @Flag(help: "Print JSON instead of text.") var json = false
    @Option(help: "Minimum OCR confidence (0–100) of the deciding words (default: the site's, else 70).")
    var minConfidence: Double?
    @Option(
        help:
            "A PEM file of the issuers' certificates whose signed results are accepted (default: the site's trustList)."
    )
    var trustList: String?

    /// The trust list: --trust-list's, else the site's, else none.
    func trust(_ site: Site?) throws -> TrustList? {
        let list: TrustList?
        if let trustList {
            guard let data = FileManager.default.contents(atPath: trustList) else {
                throw ValidationError("--trust-list \(trustList): cannot read the file")
            }
            list = try TrustList(pem: String(decoding: data, as: UTF8.self), file: trustList)
        } else {
            list = try site.flatMap { try TrustList($0.verification) }
        }
        for line in list?.skipped ?? [] { Output.error("warning: trust list: \(line)") }
        return list
    }

    /// The site's policy (or the defaults), with this command's overrides.
    func policy(_ site: VerificationPolicy = VerificationPolicy()) -> VerificationPolicy {
        var p = site
        if let minConfidence { p.minConfidence = minConfidence }
        return p
    }

    /// Reads the image; its bytes stay in memory only (its digest is all that is kept, unless
    /// the report is held for review: then the image waits for the health team, outside the store).
    func read() throws -> (OCRPage, sha256: String, data: Data) {
        let data = try OCREngine.loadChecked(file: image)
        let engine = try OCREngine()
        if Output.stderrIsTerminal { Output.error("reading \(image)…") }
        return (try engine.read(data: data, name: image), Digest.sha256Hex(data), data)
    }

    /// Reads and decides under `policy` (a signed certificate's QR code against `trust`).
    func verify(_ policy: VerificationPolicy, trust: TrustList?) throws -> (Verification, sha256: String, data: Data) {
        let (page, sha, data) = try read()
        return (SelfReportDesk.verify(page, policy: policy, trustList: trust, now: Date()), sha, data)
    }

    /// The first line shown for a decision: `accepted`, `pending` (held for review), `doubtful`
    /// (what `tracer verify` says of a page a reviewing site would hold) or `rejected`.
    static func heading(_ outcome: String) -> String {
        switch outcome {
        case "accepted": "ACCEPTED: a recent positive COVID-19 test"
        case "pending": "FOR REVIEW: the health team will look at this result before anyone is told"
        case "doubtful": "DOUBTFUL: the rules cannot decide this page with confidence; a person should look"
        default: "REJECTED"
        }
    }

    static func show(_ v: Verification, as outcome: String? = nil) {
        show(outcome ?? v.decision.rawValue, rules: v.rules.map(Components.Schemas.Rule.init))
    }

    /// The decision and its rules, from the verifier here or from the site server's answer
    /// (both the API's `Rule`: confidences to a tenth), so the two print the same.
    static func show(_ outcome: String, rules: [Components.Schemas.Rule]) {
        Output.line(heading(outcome))
        // When the picture is the problem, that alone: nothing else on it could be read.
        let picture = rules.filter { $0.name == "image" && !$0.passed }
        for rule in picture.isEmpty ? rules : picture {
            Output.line("  \(rule.passed ? "pass" : rule.doubtful ? "DOUBT" : "FAIL")  \(rule.name): \(rule.detail)")
            for e in rule.evidence.prefix(3) {
                Output.line("          \"\(e.text)\" (\(Int(saturating: e.confidence))%) in \"\(e.context)\"")
            }
        }
    }

    /// What the verifier here decided, in the API's shape (`POST /v1/reports`'s answer), for
    /// `--json` and for the fields a recorded report adds.
    static func outcome(
        _ v: Verification,
        decision: Components.Schemas.ReportOutcome.DecisionPayload? = nil
    ) -> Components.Schemas.ReportOutcome {
        Components.Schemas.ReportOutcome(
            accepted: v.accepted,
            decision: decision ?? .init(rawValue: v.decision.rawValue),
            rules: v.rules.map(Components.Schemas.Rule.init),
            collectedAt: v.collectedAt.map { Timestamp(seconds: $0.timeIntervalSince1970).iso8601Seconds }
        )
    }

    /// One line of JSON, as the API writes it.
    static func json(_ outcome: Components.Schemas.ReportOutcome) -> String {
        (try? APIJSON.string(outcome)) ?? "null"
    }
}

/// `tracer verify IMAGE`: the decision on an image, and nothing stored.
struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "OCR-verify a test-result image and show the decision; nothing is stored.",
        discussion: """
            Exit 0 when it would be accepted, 2 when rejected (the failed rules on stderr), 3 when doubtful (a site \
            reviewing doubtful reports, the default, holds it for the health team), 1 for bad input.
            """
    )

    @OptionGroup var options: VerifyOptions

    func run() throws {
        let (v, _, _) = try options.verify(options.policy(), trust: options.trust(nil))
        if options.json { Output.line(VerifyOptions.json(VerifyOptions.outcome(v))) } else { VerifyOptions.show(v) }
        switch v.decision {
        case .accepted: return
        case .doubtful:
            Output.error("doubtful: " + v.doubts.joined(separator: "; "))
            throw ExitCode(3)
        case .rejected:
            Output.error("rejected: " + v.reasons.map { "\($0.name) (\($0.detail))" }.joined(separator: "; "))
            throw ExitCode(2)
        }
    }
}

/// `tracer self-report IMAGE`: a person who tested positive reports it.
struct SelfReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "self-report",
        abstract: "Report a positive test: OCR-verify the image, confirm, record it, and flag exposures.",
        discussion: """
            Nothing is stored or sent until you confirm (or pass --yes). The image is read in memory and \
            never kept: the report holds its SHA-256 and the words that decided. The same image for the same \
            device is the same report. Exit 0 accepted, 3 held for the health team's review (the decision \
            comes later: `tracer status`), 2 rejected (the failed rules on stderr), 1 bad input or not \
            confirmed. With --server URL --token-file FILE (or TRACER_SERVER, TRACER_TOKEN_FILE) the site \
            server reads and records it, with the same output, prompt and exit status; without, the report \
            goes into the store of this machine (a kiosk's or the server's), which must be there.
            """
    )

    @OptionGroup var options: VerifyOptions
    @OptionGroup var storeOptions: StoreOptions
    @Option(help: "The reporter's anonymous device id (uuid:major:minor).") var device: String?
    @Option(
        help:
            "On a kiosk: its anchor key; the device is the one at immediate range in the 30 s before the command started."
    )
    var anchor: String?
    @Flag(help: "Record without asking for confirmation.") var yes = false
    @OptionGroup(title: "Exposure policy") var policy: ReportCommand.PolicyOptions
    @OptionGroup(title: "Against the site server") var serverOptions: ServerOptions
    @Option(help: "Questionnaire: have you symptoms? (yes or no)") var symptoms: YesNo?
    @Option(help: "Questionnaire: were you tested because of symptoms or contact? (yes or no)") var tested: YesNo?

    enum YesNo: String, ExpressibleByArgument {
        case yes, no
        var bool: Bool { self == .yes }
    }

    func validate() throws {
        // Against the server a device token names its own device.
        if device == nil && anchor == nil && serverOptions.url == nil {
            throw ValidationError("give --device ID, or --anchor KEY on a kiosk to take the device at immediate range")
        }
        if let device, device.isEmpty || device.contains("/") {
            throw ValidationError("--device takes an anonymous device id (like uuid:major:minor), not '\(device)'")
        }
    }

    func run() async throws {
        try await serverOptions.withSite { site in
            if let site { try await remote(site) } else { try await local() }
        }
    }

    func local() async throws {
        // The person is at the kiosk when they start, not when the OCR is done reading.
        let started = Date()
        // The site (--map's, else the store's) and the options first: their errors come before
        // anything is read.
        // The store must be there already (a kiosk's or the server's): a report recorded in a
        // store made for it here would reach nobody.
        let store = try storeOptions.open(remote: true)
        let published = try policy.site(in: store)
        let engine = try policy.engine(site: published)
        let site = published.map { VerificationPolicy($0.verification) } ?? VerificationPolicy()
        let trust = try options.trust(published)
        let (read, sha, data) = try options.verify(options.policy(site), trust: trust)
        let rules = options.policy(site)
        let desk = SelfReportDesk(
            flagging: engine,
            policy: rules,
            trustList: trust,
            images: storeOptions.reviewImages
        )
        let deviceID: String
        do {
            deviceID = try await store.reading { db in
                try desk.reporter(device: device, kiosk: anchor, since: started, in: db)
            }
        } catch let e as SelfReportError {
            throw ValidationError(
                e.code == .noDeviceAtKiosk
                    ? "\(e.message) in the 30 s before this began: hold the phone or badge at the kiosk, or give --device ID"
                    : "\(e.message): give --device ID"
            )
        }
        // A device whose last report was denied waits for the health team this time too.
        let v = try await store.reading { db in try desk.withHistory(read, device: deviceID, in: db) }
        guard let disposition = SelfReportDesk.disposition(v, review: rules.review) else {
            if options.json {
                Output.line(VerifyOptions.json(VerifyOptions.outcome(v, decision: .rejected)))
            } else {
                VerifyOptions.show(v, as: "rejected")
            }
            Output.error(
                "rejected: " + v.reasons.map { "\($0.name) (\($0.detail))" }.joined(separator: "; ")
                    + "; nothing was recorded"
            )
            throw ExitCode(2)
        }
        let held = disposition == .pending
        if !options.json { VerifyOptions.show(v, as: held ? "pending" : "accepted") }
        try confirm(deviceID, held: held)
        let answers = self.answers
        // Recording an accepted report flags exposures at once: seconds on a big store.
        if Output.stderrIsTerminal {
            Output.error(
                held
                    ? "recording the report for the health team…"
                    : "recording the report and finding who was near this device (a few seconds)…"
            )
        }
        let outcome = try await store.writing { db in
            try desk.submit(v, imageSHA256: sha, image: data, device: deviceID, answers: answers, in: db)
        }
        if case .held(let report, _) = outcome {
            if options.json {
                var o = VerifyOptions.outcome(v, decision: .pending)
                (o.reportId, o.deviceId, o.created) = (report.id, deviceID, report.created)
                (o.status, o.doubts) = (.pending, v.doubts)
                Output.line(VerifyOptions.json(o))
            } else {
                Self.held(report.id, device: deviceID, created: report.created, hint: statusCommand(deviceID))
            }
            throw ExitCode(3)
        }
        if case .decidedBefore(let report, _) = outcome {
            Output.error(Self.decidedBefore(report.id, status: report.status.rawValue))
            throw ExitCode(2)
        }
        guard case .recorded(let report, _, let flagged, let ok) = outcome else { throw ExitCode(2) }
        guard ok else { throw ValidationError(flagged) }
        if options.json {
            var o = VerifyOptions.outcome(v)
            (o.reportId, o.deviceId, o.created) = (report.id, deviceID, report.created)
            (o.status, o.flagging) = (.accepted, flagged)
            Output.line(VerifyOptions.json(o))
        } else {
            Self.recorded(report.id, device: deviceID, created: report.created, flagging: flagged)
        }
    }

    var answers: [String: Bool] {
        var answers: [String: Bool] = [:]
        if let symptoms { answers["symptoms"] = symptoms.bool }
        if let tested { answers["tested"] = tested.bool }
        return answers
    }

    /// Asks before anything is recorded (unless --yes); throws when not confirmed.
    func confirm(_ deviceID: String, held: Bool = false) throws {
        guard !yes else { return }
        guard isatty(0) == 1 else {
            throw ValidationError("no terminal to confirm on: add --yes to record the report (nothing was recorded)")
        }
        let question =
            held
            ? "Send a positive report for device \(deviceID) to the health team? They decide before anyone is told. [y/N] "
            : "Record a positive report for device \(deviceID) and flag those exposed? [y/N] "
        FileHandle.standardOutput.write(Data(question.utf8))
        let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        guard answer == "y" || answer == "yes" else {
            Output.error("not confirmed: nothing was recorded")
            throw ExitCode.failure
        }
    }

    /// The command that shows the device's status, as this one was run: with the `--server`,
    /// `--token-file` or `--store` the person gave (a hint must work as printed).
    func statusCommand(_ device: String) -> String {
        var words = ["tracer", "status", "--device", device]
        if let server = serverOptions.server { words += ["--server", server] }
        if let file = serverOptions.tokenFile { words += ["--token-file", file] }
        if let ca = serverOptions.caFile { words += ["--ca-file", ca] }
        if serverOptions.url == nil, let store = storeOptions.store { words += ["--store", store] }
        return words.map(Output.shellQuoted).joined(separator: " ")
    }

    /// What a reporter is told of a report held for review.
    static func held(_ id: String, device: String, created: Bool, hint: String) {
        Output.line(
            created
                ? "sent to the health team: report \(id) for device \(device) waits for their review; nobody is flagged until they approve it"
                : "already sent: report \(id) for device \(device) waits for the health team's review (nothing doubled)"
        )
        Output.line("`\(hint)` shows their decision")
    }

    static func decidedBefore(_ id: String, status: String) -> String {
        "this image was reported before and \(status) (report \(id)); nothing was recorded again"
    }

    static func recorded(_ id: String, device: String, created: Bool, flagging: String) {
        Output.line(
            created
                ? "recorded report \(id) for device \(device); the device is marked positive"
                : "already reported: report \(id) for device \(device) (nothing doubled)"
        )
        Output.line(flagging)
    }

    /// The same, through the site server: it reads the image (a dry run, nothing recorded),
    /// the evidence is shown here, and once confirmed the server records and flags.
    func remote(_ site: SiteClient) async throws {
        if options.minConfidence != nil || policy.map != nil || options.trustList != nil {
            throw ValidationError(
                "--min-confidence, --trust-list and --map are for a check on this machine; the site server applies the site's policy"
            )
        }
        let data = try Data(contentsOf: URL(fileURLWithPath: options.image))
        let filename = (options.image as NSString).lastPathComponent
        let (device, anchor) = (device, anchor)
        let answers = answers.isEmpty ? nil : answers
        /// What `POST /v1/reports` answered: an outcome (200 checked or recorded before, 201
        /// recorded, 202 held), or 422 (rejected, with the rules; or decided before, without).
        enum Posted {
            case outcome(Components.Schemas.ReportOutcome, created: Bool)
            case refused(Components.Schemas.ReportOutcome?, message: String)
        }
        @Sendable func post(dryRun: Bool) async throws -> Posted {
            typealias Part = Operations.SubmitReport.Input.Body.MultipartFormPayload
            var parts: [Part] = [.image(.init(payload: .init(body: HTTPBody(data)), filename: filename))]
            if let device { parts.append(.deviceId(.init(payload: .init(body: HTTPBody(device))))) }
            if let anchor { parts.append(.anchor(.init(payload: .init(body: HTTPBody(anchor))))) }
            if let answers {
                let given = Part.AnswersPayload.BodyPayload(symptoms: answers["symptoms"], tested: answers["tested"])
                parts.append(.answers(.init(payload: .init(body: given))))
            }
            if dryRun { parts.append(.dryRun(.init(payload: .init(body: HTTPBody("true"))))) }
            let output = try await site.run { try await $0.submitReport(body: .multipartForm(MultipartBody(parts))) }
            switch output {
            case .ok(let r): return .outcome(try r.body.json, created: false)
            case .created(let r): return .outcome(try r.body.json, created: true)
            case .accepted(let r): return .outcome(try r.body.json, created: true)
            case .unprocessableContent(let r):
                let body = try r.body.json
                // The rules it failed, when the image was read and rejected (else decided before).
                if let rejected = body.value1 {
                    return .refused(rejected.value2, message: rejected.value1.error.message)
                }
                return .refused(nil, message: body.value2?.error.message ?? "HTTP 422")
            default:
                // Every other answer is a refusal, thrown by the client (SiteClient).
                throw ValidationError("\(site.upstream.base) answered POST /v1/reports with \(output)")
            }
        }
        if Output.stderrIsTerminal { Output.error("sending \(options.image) to \(site.upstream.base) to be read…") }
        let checked: Components.Schemas.ReportOutcome
        switch try await post(dryRun: true) {
        case .refused(let rejected?, let message):
            if options.json {
                Output.line(VerifyOptions.json(rejected))
            } else {
                VerifyOptions.show("rejected", rules: rejected.rules)
            }
            Output.error(message)
            throw ExitCode(2)
        case .refused(nil, let message):
            throw ValidationError(message)
        case .outcome(let outcome, _):
            checked = outcome
        }
        guard let deviceID = checked.deviceId else {
            throw ValidationError("\(site.upstream.base) checked the report without naming its device")
        }
        // The server's site decides whether the report waits for the health team.
        let held = checked.status == .pending
        if !options.json { VerifyOptions.show(held ? "pending" : "accepted", rules: checked.rules) }
        try confirm(deviceID, held: held)
        var r: Components.Schemas.ReportOutcome
        let recordedNow: Bool
        if Output.stderrIsTerminal {
            Output.error(
                "sending it to be recorded: \(site.upstream.base) reads the photo again and finds who was near (a few seconds)…"
            )
        }
        switch try await post(dryRun: false) {
        case .refused(_, let message):
            // Reported before and decided: nothing recorded again.
            Output.error(message)
            throw ExitCode(2)
        case .outcome(let outcome, let created): (r, recordedNow) = (outcome, created)
        }
        let id = r.reportId ?? "?"
        let created = r.created ?? recordedNow
        let status = r.status ?? .accepted
        if options.json {
            (r.deviceId, r.created, r.status) = (r.deviceId ?? deviceID, created, status)
            if r.collectedAt == nil { r.collectedAt = checked.collectedAt }
            Output.line(VerifyOptions.json(r))
        } else if status == .pending {
            Self.held(id, device: r.deviceId ?? deviceID, created: created, hint: statusCommand(r.deviceId ?? deviceID))
        } else if r.flagged == false {
            // Recorded, and the reporter is positive, but nobody near them is told: never exit 0.
            throw ValidationError(
                r.flagging
                    ?? "report \(id) is recorded, but flagging failed on the server: run `tracer report flag \(id)`"
            )
        } else {
            Self.recorded(id, device: r.deviceId ?? deviceID, created: created, flagging: r.flagging ?? "")
        }
        if status == .pending { throw ExitCode(3) }
        if r.flagged == false { throw ExitCode(1) }
    }
}

import ArgumentParser
import Foundation
import NIOCore
import TracerAPI
import TracerCertificate
import TracerExposure
import TracerModel
import TracerReplication
import TracerReports
import TracerStore
import TracerVerification

/// `tracer report pending | approve ID | deny ID`: the health team's review of the reports held
/// for it, on the site's store or through the site server (`--server`, an admin token).
enum ReviewCommands {
    /// The person deciding at the command line: `--by`, else the user and host.
    static func reviewer(_ by: String?) -> SelfReportDesk.Reviewer {
        if let by, !by.isEmpty { return .init(name: by, tokenID: "-") }
        let user = ProcessInfo.processInfo.environment["USER"].flatMap { $0.isEmpty ? nil : $0 } ?? NSUserName()
        return .init(name: "\(user)@\(ProcessInfo.processInfo.hostName) (command line)", tokenID: "-")
    }

    /// The review desk on the local store, under the site's policy.
    static func desk(_ options: StoreOptions, _ policy: ReportCommand.PolicyOptions) throws -> SelfReportDesk {
        let store = try options.open(mustExist: true)
        let site = try policy.site(in: store)
        return SelfReportDesk(
            store: store,
            flagging: try policy.engine(site: site),
            policy: site.map { VerificationPolicy($0.verification) } ?? VerificationPolicy(),
            trustList: try site.flatMap { try TrustList($0.verification) },
            images: options.reviewImages
        )
    }

    /// One report for the health team, in lines: who, when, why it waits, the evidence.
    static func text(_ r: Value) -> [String] {
        var lines = [
            "\(r["reportId"]?.stringValue ?? "?")  device \(r["deviceId"]?.stringValue ?? "?")  received \(r["createdAt"]?.stringValue ?? "?")  collected \(r["collectedAt"]?.stringValue ?? "unknown")  image \(r["image"] == .bool(true) ? "kept" : "not kept")"
        ]
        if case .array(let doubts)? = r["doubts"] {
            for d in doubts { lines.append("  why: \(d.stringValue ?? "")") }
        }
        if case .array(let evidence)? = r["evidence"] {
            for e in evidence {
                let mark = e["passed"] == .bool(true) ? "pass" : e["doubtful"] == .bool(true) ? "DOUBT" : "FAIL"
                var line = "  \(mark)  \(e["rule"]?.stringValue ?? ""): \(e["detail"]?.stringValue ?? "")"
                if case .array(let words)? = e["words"], !words.isEmpty {
                    line +=
                        "  ["
                        + words.prefix(3).map {
                            "\"\($0["text"]?.stringValue ?? "")\" \(Int($0["confidence"]?.doubleValue ?? 0))%"
                        }.joined(separator: ", ") + "]"
                }
                lines.append(line)
            }
        }
        if let by = r["decidedBy"]?.stringValue {
            lines.append(
                "  \(r["status"]?.stringValue ?? "") by \(by) at \(r["decidedAt"]?.stringValue ?? "?")"
                    + (r["note"]?.stringValue.map { ": \($0)" } ?? "")
            )
        }
        return lines
    }

    static func path(_ id: String, _ action: String) -> String {
        "/v1/reports/\(id.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? id)/\(action)"
    }

    struct Pending: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The reports waiting for the health team: who, when, why, and the evidence.",
            discussion: """
                A report waits when the site's `review` setting says so: `doubtful` (the default) holds what the \
                rules cannot decide with confidence, `all` every report. Its image is kept for the reviewer until \
                the decision, 72 hours at most: GET /v1/reports/{id}/image, or the dashboard.
                """
        )
        @OptionGroup var options: StoreOptions
        @OptionGroup var policy: ReportCommand.PolicyOptions
        @OptionGroup(title: "Against the site server") var serverOptions: ServerOptions
        @Flag(help: "Print JSON: {\"reports\": [...], \"review\": MODE}.") var json = false

        func run() async throws {
            let value: Value = try await serverOptions.withUpstream { up in
                guard let up else { return try ReviewCommands.desk(options, policy).reviewList() }
                let answer = try await RemoteAnswer.send { try await up.request(.GET, "/v1/reports?status=pending") }
                guard answer.status == 200, let parsed = try? JSON.parse(String(decoding: answer.body, as: UTF8.self))
                else { throw RemoteAnswer.failure(answer, up) }
                return parsed
            }
            if json {
                Output.line(ExposureJSON.json(value))
                return
            }
            guard case .array(let reports)? = value["reports"], !reports.isEmpty else {
                Output.line("no reports wait for review (review: \(value["review"]?.stringValue ?? "doubtful"))")
                return
            }
            Output.line("\(reports.count) report\(reports.count == 1 ? "" : "s") waiting for review:")
            for r in reports { ReviewCommands.text(r).forEach(Output.line) }
        }
    }

    /// Approve and deny, alike but for the decision.
    struct Decision: ParsableArguments {
        @OptionGroup var options: StoreOptions
        @OptionGroup var policy: ReportCommand.PolicyOptions
        @OptionGroup(title: "Against the site server") var serverOptions: ServerOptions
        @Argument(help: "The report id (tracer report pending lists them).") var id: String
        @Option(help: "A note for the record (and, on a denial, for the reporter).") var note: String?
        @Option(help: "Who decides (default: the user and host; with --server, the token's name).") var by: String?
        @Flag(help: "Print JSON: {\"report\": {...}, \"outcome\": LINE}.") var json = false

        func decide(approve: Bool) async throws {
            try await serverOptions.withUpstream { up in
                if let up { try await remote(up, approve: approve) } else { try local(approve: approve) }
            }
        }

        func remote(_ up: Upstream, approve: Bool) async throws {
            let action = approve ? "approve" : "deny"
            if by != nil {
                throw ValidationError("--by is for the local store; the server records the token's name")
            }
            var body: [String: Value] = [:]
            if let note { body["note"] = .string(note) }
            let answer = try await RemoteAnswer.send {
                try await up.request(
                    .POST,
                    ReviewCommands.path(id, action),
                    body: .bytes(ByteBuffer(string: JSON.string(.map(body)))),
                    headers: [("Content-Type", "application/json")]
                )
            }
            guard answer.status == 200, let value = try? JSON.parse(String(decoding: answer.body, as: UTF8.self))
            else {
                if answer.status == 404 || answer.status == 409 { throw ValidationError(answer.message) }
                throw RemoteAnswer.failure(answer, up)
            }
            show(value)
        }

        func local(approve: Bool) throws {
            let desk = try ReviewCommands.desk(options, policy)
            let decided: SelfReportDesk.Decided
            do {
                decided = try desk.decide(id, approve: approve, by: ReviewCommands.reviewer(by), note: note)
            } catch let e as ReviewError {
                throw ValidationError(e.message)
            }
            show(decided.value)
            guard decided.flagged else { throw ExitCode.failure }
        }

        func show(_ value: Value) {
            if json {
                Output.line(ExposureJSON.json(value))
                return
            }
            let report = value["report"] ?? .null
            Output.line(
                "report \(report["reportId"]?.stringValue ?? id) \(report["status"]?.stringValue ?? "?") by \(report["decidedBy"]?.stringValue ?? "?")"
            )
            Output.line(value["outcome"]?.stringValue ?? "")
        }
    }

    struct Approve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Approve a report held for review: the reporter is positive and exposures are flagged."
        )
        @OptionGroup var decision: Decision
        func run() async throws { try await decision.decide(approve: true) }
    }

    struct Deny: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Deny a report held for review: nothing is flagged; the reporter's status says so, with the note."
        )
        @OptionGroup var decision: Decision
        func run() async throws { try await decision.decide(approve: false) }
    }
}

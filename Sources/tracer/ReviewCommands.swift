import ArgumentParser
import Foundation
import NIOCore
import TracerAPI
import TracerCertificate
import TracerExposure
import TracerModel
import TracerReplication
import TracerReports
@_spi(Blocking) import TracerStore
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
    static func desk(
        _ options: StoreOptions,
        _ policy: ReportCommand.PolicyOptions
    ) throws -> (SelfReportDesk, DocumentStore) {
        let store = try options.open(remote: true)
        let site = try policy.site(in: store)
        let desk = SelfReportDesk(
            flagging: try policy.engine(site: site),
            policy: site.map { VerificationPolicy($0.verification) } ?? VerificationPolicy(),
            trustList: try site.flatMap { try TrustList($0.verification) },
            images: options.reviewImages
        )
        return (desk, store)
    }

    /// A report as the health team reads it, and the list and decision bodies: the contract's
    /// types (generated from the OpenAPI document), whether from the server or the store here.
    typealias Reviewed = Components.Schemas.ReviewedReport
    typealias ReviewList = Operations.ReviewList.Output.Ok.Body.JsonPayload
    typealias Decided = Components.Responses.Decided.Body.JsonPayload

    /// One report for the health team, in lines: who, when, why it waits, the evidence.
    static func text(_ r: Reviewed) -> [String] {
        var lines = [
            "\(r.reportId)  device \(r.deviceId)  received \(r.createdAt ?? "?")  collected \(r.collectedAt ?? "unknown")  image \(r.image ? "kept" : "not kept")"
        ]
        for d in r.doubts { lines.append("  why: \(d)") }
        for e in r.evidence {
            let mark = e.passed ? "pass" : e.doubtful ? "DOUBT" : "FAIL"
            var line = "  \(mark)  \(e.rule): \(e.detail)"
            if !e.words.isEmpty {
                line +=
                    "  [" + e.words.prefix(3).map { "\"\($0.text)\" \(Int($0.confidence))%" }.joined(separator: ", ")
                    + "]"
            }
            lines.append(line)
        }
        if let by = r.decidedBy {
            lines.append("  \(r.status.rawValue) by \(by) at \(r.decidedAt ?? "?")" + (r.note.map { ": \($0)" } ?? ""))
        }
        return lines
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
        // Only the site (its review setting): listing flags nobody, so the exposure policy's
        // options (--radius, --window, --separation) are not taken here.
        @Option(help: "The site's BeaconMap (default: the site published in the store, if any).") var map: String?
        @OptionGroup(title: "Against the site server") var serverOptions: ServerOptions
        @Flag(help: "Print JSON: {\"reports\": [...], \"review\": MODE}.") var json = false

        func run() async throws {
            let list: ReviewCommands.ReviewList = try await serverOptions.withSite { site in
                guard let site else {
                    let policy = try ReportCommand.PolicyOptions.parse(map.map { ["--map", $0] } ?? [])
                    let (desk, store) = try ReviewCommands.desk(options, policy)
                    let listed = try await store.reading { db in try desk.reviewList(in: db) }
                    return ReviewCommands.ReviewList(listed, review: desk.policy.review.rawValue)
                }
                return try await site.run { try await $0.reviewList(query: .init(status: .pending)).ok.body.json }
            }
            if json {
                Output.line(try APIJSON.string(list))
                return
            }
            guard !list.reports.isEmpty else {
                Output.line("no reports wait for review (review: \(list.review.rawValue))")
                return
            }
            let reports = list.reports
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
            try await serverOptions.withSite { site in
                if let site { try await remote(site, approve: approve) } else { try local(approve: approve) }
            }
        }

        func remote(_ site: SiteClient, approve: Bool) async throws {
            if by != nil {
                throw ValidationError("--by is for the local store; the server records the token's name")
            }
            let body = note.map { Components.RequestBodies.Decision.json(.init(note: $0)) }
            let decided = try await site.run { client in
                approve
                    ? try await client.approveReport(path: .init(id: id), body: body).ok.body.json
                    : try await client.denyReport(path: .init(id: id), body: body).ok.body.json
            }
            try show(decided)
        }

        func local(approve: Bool) throws {
            let (desk, store) = try ReviewCommands.desk(options, policy)
            let decided: SelfReportDesk.Decided
            do {
                decided = try store.write { db in
                    try desk.decide(id, approve: approve, by: ReviewCommands.reviewer(by), note: note, in: db)
                }
            } catch let e as ReviewError {
                throw ValidationError(e.message)
            }
            try show(ReviewCommands.Decided(decided.report, outcome: decided.line))
            guard decided.flagged else { throw ExitCode.failure }
        }

        func show(_ decided: ReviewCommands.Decided) throws {
            if json {
                Output.line(try APIJSON.string(decided))
                return
            }
            let report = decided.report
            Output.line("report \(report.reportId) \(report.status.rawValue) by \(report.decidedBy ?? "?")")
            Output.line(decided.outcome)
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

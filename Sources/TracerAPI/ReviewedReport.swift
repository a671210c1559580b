import TracerModel
import TracerStore

extension Components.Schemas.ReviewedReport {
    /// The report as the health team reviews it (`GET /v1/reports`, `tracer report pending
    /// --json`): the evidence and why it waits, never the image; `image` says whether it is kept.
    public init(_ r: Report, image: Bool) {
        self.init(
            reportId: r.id,
            deviceId: r.deviceID,
            status: .init(rawValue: r.status.rawValue) ?? .pending,
            createdAt: r.createdAt?.iso8601Seconds,
            collectedAt: r.collectedAt.map { String($0.iso8601.prefix(10)) },
            doubts: r.doubts,
            evidence: r.evidence.compactMap(Components.Schemas.Evidence.init(stored:)),
            image: image,
            answers: r.answers.isEmpty ? nil : .init(additionalProperties: r.answers),
            decidedBy: r.decidedBy,
            decidedAt: r.decidedAt?.iso8601Seconds,
            note: r.note,
            flaggingFailed: r.flaggingFailed
        )
    }
}

extension Components.Schemas.Evidence {
    /// One rule as the report stores it (`SelfReport.evidence`); nil for another shape.
    init?(stored v: Value) {
        guard let rule = v["rule"]?.stringValue, case .bool(let passed)? = v["passed"] else { return nil }
        self.init(
            rule: rule,
            passed: passed,
            detail: v["detail"]?.stringValue ?? "",
            message: v["message"].flatMap(Components.Schemas.RuleMessage.init(stored:)),
            doubtful: v["doubtful"] == .bool(true),
            words: (v["words"]?.arrayValue ?? []).compactMap { w in
                w["text"]?.stringValue.map { .init(text: $0, confidence: w["confidence"]?.doubleValue ?? 0) }
            }
        )
    }
}

extension Operations.ReviewList.Output.Ok.Body.JsonPayload {
    /// `{"reports": [...], "review": MODE}`.
    public init(_ listed: [(report: Report, image: Bool)], review: String) {
        self.init(
            reports: listed.map { .init($0.report, image: $0.image) },
            review: .init(rawValue: review) ?? .doubtful
        )
    }
}

extension Components.Responses.Decided.Body.JsonPayload {
    /// `{"report": {...}, "outcome": LINE}`: the report as decided, and what became of it.
    public init(_ report: Report, outcome: String) {
        self.init(report: .init(report, image: false), outcome: outcome)
    }
}

extension Components.Schemas.RuleMessage {
    /// A rule's message as the report stores it (`SelfReport.evidence`); nil for another shape.
    init?(stored v: Value) {
        guard let key = v["key"]?.stringValue else { return nil }
        var values: [String: String] = [:]
        for (name, value) in v["values"]?.mapValue ?? [:] { values[name] = value.stringValue }
        var terms: [String: [String]] = [:]
        for (name, keys) in v["terms"]?.mapValue ?? [:] { terms[name] = keys.arrayValue?.compactMap(\.stringValue) }
        self.init(key: key, values: .init(additionalProperties: values), terms: .init(additionalProperties: terms))
    }
}

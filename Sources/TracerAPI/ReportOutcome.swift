import TracerVerification

extension Components.Schemas.Rule {
    /// A verification rule as the API shows it (confidences to a tenth).
    public init(_ rule: VerificationRule) {
        self.init(
            name: rule.name,
            passed: rule.passed,
            detail: rule.detail,
            message: rule.message.map {
                .init(
                    key: $0.key,
                    values: .init(additionalProperties: $0.values),
                    terms: .init(additionalProperties: $0.terms)
                )
            },
            doubtful: rule.doubtful,
            evidence: rule.evidence.map {
                .init(text: $0.text, confidence: ($0.confidence * 10).rounded() / 10, context: $0.context)
            }
        )
    }
}

import TracerVerification

extension Responses {
    /// `POST /v1/reports`: what became of the report (201, 200) or why not (in a 422's body).
    public struct ReportOutcome: Codable, Sendable {
        public var accepted: Bool
        public var reportId: String?
        public var deviceId: String?
        public var created: Bool?
        public var status: String?
        public var flagging: String?
        /// False when the report is recorded but flagging failed: nobody near is told yet.
        public var flagged: Bool?
        /// True when nothing was recorded on purpose (`dryRun`).
        public var dryRun: Bool?
        /// `accepted`, `pending` (held for the health team's review) or `rejected`.
        public var decision: String?
        /// Why it waits for review (the doubtful rules).
        public var doubts: [String]?
        public var rules: [Rule]
        @Null public var collectedAt: String?

        public init(
            accepted: Bool,
            reportId: String? = nil,
            deviceId: String? = nil,
            created: Bool? = nil,
            status: String? = nil,
            flagging: String? = nil,
            flagged: Bool? = nil,
            dryRun: Bool? = nil,
            decision: String? = nil,
            doubts: [String]? = nil,
            rules: [Rule],
            collectedAt: String? = nil
        ) {
            self.accepted = accepted
            self.reportId = reportId
            self.deviceId = deviceId
            self.created = created
            self.status = status
            self.flagging = flagging
            self.flagged = flagged
            self.dryRun = dryRun
            self.decision = decision
            self.doubts = doubts
            self.rules = rules
            self.collectedAt = collectedAt
        }
    }

    /// A verification rule as the API shows it (confidences to a tenth).
    public struct Rule: Codable, Sendable {
        public struct Evidence: Codable, Sendable {
            public var text: String
            public var confidence: Double
            public var context: String

            public init(
                text: String,
                confidence: Double,
                context: String
            ) {
                self.text = text
                self.confidence = confidence
                self.context = context
            }
        }

        public var name: String
        public var passed: Bool
        public var detail: String
        /// The detail as a key of the verifier's texts and its values, for a page to say in the
        /// person's language.
        public var message: RuleMessage?
        /// A failure a reviewer could overrule.
        public var doubtful: Bool
        public var evidence: [Evidence]

        public init(_ rule: VerificationRule) {
            name = rule.name
            passed = rule.passed
            detail = rule.detail
            message = rule.message
            doubtful = rule.doubtful
            evidence = rule.evidence.map {
                Evidence(text: $0.text, confidence: ($0.confidence * 10).rounded() / 10, context: $0.context)
            }
        }
    }
}

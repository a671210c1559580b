import ArgumentParser
import Foundation
import TracerExposure
import TracerModel
import TracerOCR
import TracerReports
import TracerStore
import TracerVerification

/// The verification shared by `tracer verify` and `tracer self-report`: read, decide, show.
struct VerifyOptions: ParsableArguments {
    @Argument(help: "The photographed or screenshotted test result: PNG, JPEG, TIFF or WebP.") var image: String
    @Flag(help: "Print JSON instead of text.") var json = false
    @Option(help: "Minimum OCR confidence (0–100) of the deciding words (default: the site's, else 70).")
    var minConfidence: Double?

    /// The site's policy (or the defaults), with this command's overrides.
    func policy(_ site: VerificationPolicy = VerificationPolicy()) -> VerificationPolicy {
        var p = site
        if let minConfidence { p.minConfidence = minConfidence }
        return p
    }

    /// Reads the image; its bytes stay in memory only (its digest is all that is kept).
    func read() throws -> (OCRPage, sha256: String) {
        let data = try OCREngine.loadChecked(file: image)
        let engine = try OCREngine()
        if Output.stderrIsTerminal { Output.error("reading \(image)…") }
        return (try engine.read(data: data, name: image), Digest.sha256Hex(data))
    }

    /// Reads and decides under `policy`.
    func verify(_ policy: VerificationPolicy) throws -> (Verification, sha256: String) {
        let (page, sha) = try read()
        return (Verifier.verify(page, policy: policy, now: Date()), sha)
    }

    static func show(_ v: Verification) {
        Output.line(v.accepted ? "ACCEPTED: a recent positive COVID-19 test" : "REJECTED")
        for rule in v.rules {
            Output.line("  \(rule.passed ? "pass" : "FAIL")  \(rule.name): \(rule.detail)")
            for e in rule.evidence.prefix(3) {
                Output.line("          \"\(e.text)\" (\(Int(e.confidence))%) in \"\(e.context)\"")
            }
        }
    }

    static func json(_ v: Verification, extra: [String: Any] = [:]) -> String {
        var object: [String: Any] = extra
        object["accepted"] = v.accepted
        object["collectedAt"] =
            v.collectedAt.map { Timestamp(seconds: $0.timeIntervalSince1970).iso8601Seconds } ?? NSNull()
        object["rules"] = v.ruleObjects
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}

/// `tracer verify IMAGE`: the decision on an image, and nothing stored.
struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "OCR-verify a test-result image and show the decision; nothing is stored.",
        discussion: "Exit 0 when it would be accepted, 2 when rejected (the failed rules on stderr), 1 for bad input."
    )

    @OptionGroup var options: VerifyOptions

    func run() throws {
        let (v, _) = try options.verify(options.policy())
        if options.json { Output.line(VerifyOptions.json(v)) } else { VerifyOptions.show(v) }
        if !v.accepted {
            Output.error("rejected: " + v.failed.map { "\($0.name) (\($0.detail))" }.joined(separator: "; "))
            throw ExitCode(2)
        }
    }
}

/// `tracer self-report IMAGE`: a person who tested positive reports it.
struct SelfReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "self-report",
        abstract: "Report a positive test: OCR-verify the image, confirm, record it, and flag exposures.",
        discussion: """
            Nothing is stored or sent until you confirm (or pass --yes). The image is read in memory and \
            never kept: the report holds its SHA-256 and the words that decided. The same image for the same \
            device is the same report. Exit 0 accepted, 2 rejected (the failed rules on stderr), 1 bad input \
            or not confirmed.
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
    @Option(help: "Questionnaire: have you symptoms? (yes or no)") var symptoms: YesNo?
    @Option(help: "Questionnaire: were you tested because of symptoms or contact? (yes or no)") var tested: YesNo?

    enum YesNo: String, ExpressibleByArgument {
        case yes, no
        var bool: Bool { self == .yes }
    }

    func validate() throws {
        if device == nil && anchor == nil {
            throw ValidationError("give --device ID, or --anchor KEY on a kiosk to take the device at immediate range")
        }
        if let device, device.isEmpty || device.contains("/") {
            throw ValidationError("--device takes an anonymous device id (like uuid:major:minor), not '\(device)'")
        }
    }

    func run() throws {
        // The person is at the kiosk when they start, not when the OCR is done reading.
        let started = Date()
        let engine = try policy.engine  // a bad map or option is an error before anything is read
        let site = try policy.site.map { VerificationPolicy($0.verification) } ?? VerificationPolicy()
        let (v, sha) = try options.verify(options.policy(site))
        if !v.accepted {
            if options.json { Output.line(VerifyOptions.json(v)) } else { VerifyOptions.show(v) }
            Output.error(
                "rejected: " + v.failed.map { "\($0.name) (\($0.detail))" }.joined(separator: "; ")
                    + "; nothing was recorded"
            )
            throw ExitCode(2)
        }
        let desk = SelfReportDesk(store: try storeOptions.open(), flagging: engine, policy: options.policy(site))
        let deviceID: String
        do {
            deviceID = try desk.reporter(device: device, kiosk: anchor, since: started)
        } catch let e as SelfReportError {
            throw ValidationError(
                e.code == .noDeviceAtKiosk
                    ? "\(e.message) in the 30 s before this began: hold the phone or badge at the kiosk, or give --device ID"
                    : "\(e.message): give --device ID"
            )
        }
        if !options.json { VerifyOptions.show(v) }
        if !yes {
            guard isatty(0) == 1 else {
                throw ValidationError(
                    "no terminal to confirm on: add --yes to record the report (nothing was recorded)"
                )
            }
            FileHandle.standardOutput.write(
                Data("Record a positive report for device \(deviceID) and flag those exposed? [y/N] ".utf8)
            )
            let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
            guard answer == "y" || answer == "yes" else {
                Output.error("not confirmed: nothing was recorded")
                throw ExitCode.failure
            }
        }
        var answers: [String: Bool] = [:]
        if let symptoms { answers["symptoms"] = symptoms.bool }
        if let tested { answers["tested"] = tested.bool }
        guard
            case .recorded(let report, _, let flagged, let ok) = try desk.submit(
                v,
                imageSHA256: sha,
                device: deviceID,
                answers: answers
            )
        else { throw ExitCode(2) }  // accepted above: submit records it
        guard ok else { throw ValidationError(flagged) }
        if options.json {
            Output.line(
                VerifyOptions.json(
                    v,
                    extra: [
                        "reportId": report.id, "deviceId": deviceID, "created": report.created,
                        "status": Report.Status.accepted.rawValue, "flagging": flagged,
                    ]
                )
            )
        } else {
            Output.line(
                report.created
                    ? "recorded report \(report.id) for device \(deviceID); the device is marked positive"
                    : "already reported: report \(report.id) for device \(deviceID) (nothing doubled)"
            )
            Output.line(flagged)
        }
    }
}

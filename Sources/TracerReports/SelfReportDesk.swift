import Foundation
import TracerSite
import TracerStore
import TracerVerification

/// The one self-report path, for `tracer self-report` and `POST /v1/reports` alike: decide on
/// the page under the site's policy, find the reporter, record the report, flag exposures. The
/// command and the API read the image their own way and only render the outcome.
public struct SelfReportDesk: Sendable {
    public let store: DocumentStore
    public let flagging: any ExposureFlagging
    public let policy: VerificationPolicy

    public init(store: DocumentStore, flagging: any ExposureFlagging, policy: VerificationPolicy) {
        self.store = store
        self.flagging = flagging
        self.policy = policy
    }

    /// What became of a report.
    public enum Outcome: Sendable {
        /// Verification failed: nothing was recorded.
        case rejected(Verification)
        /// Recorded (or already recorded: `report.created` is false), with the flagging's line for
        /// the reporter; `flagged` is false when flagging failed (the line says how to retry).
        case recorded(RecordedReport, Verification, flagging: String, flagged: Bool)
    }

    /// The decision on a page, at `now`.
    public func verify(_ page: OCRPage, now: Date = Date()) -> Verification {
        Verifier.verify(page, policy: policy, now: now)
    }

    /// The reporter: the device given, else the one device the kiosk `anchor` saw at immediate
    /// range in the 30 s before `since` (the person holds it there when they begin).
    public func reporter(device: String?, kiosk anchor: String?, since: Date) throws -> String {
        if let device { return device }
        guard let anchor else { throw SelfReportError(.noReporter, "no device id and no kiosk to find one at") }
        let seen = try SelfReport.immediateDevices(at: anchor, now: since, store: store)
        switch seen.count {
        case 1: return seen[0]
        case 0: throw SelfReportError(.noDeviceAtKiosk, "no device at immediate range of \(anchor)", anchor: anchor)
        default:
            throw SelfReportError(
                .severalDevicesAtKiosk,
                "\(seen.count) devices at immediate range of \(anchor) (\(seen.joined(separator: ", ")))",
                anchor: anchor
            )
        }
    }

    /// Records an accepted verification for `device` and flags those exposed; a rejected one
    /// records nothing. A flagging failure leaves the report recorded and says how to retry.
    public func submit(
        _ verification: Verification,
        imageSHA256: String,
        device: String,
        answers: [String: Bool] = [:]
    ) throws -> Outcome {
        guard verification.accepted else { return .rejected(verification) }
        let report = try SelfReport.record(
            deviceID: device,
            imageSHA256: imageSHA256,
            verification: verification,
            answers: answers,
            store: store
        )
        do {
            let line = try flagging.reportAccepted(report, store: store)
            return .recorded(report, verification, flagging: line, flagged: true)
        } catch {
            let line =
                "report \(report.id) is recorded, but flagging failed (\(error)): run `tracer report flag \(report.id)`"
            return .recorded(report, verification, flagging: line, flagged: false)
        }
    }
}

/// Why a self-report could not go ahead (other than a rejected verification, an outcome).
public struct SelfReportError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// Neither a device nor a kiosk was given.
        case noReporter
        /// The kiosk saw no device at immediate range.
        case noDeviceAtKiosk
        /// The kiosk saw more than one.
        case severalDevicesAtKiosk
    }

    public var code: Code
    public var message: String
    /// The kiosk's anchor key.
    public var anchor: String?

    public init(_ code: Code, _ message: String, anchor: String? = nil) {
        self.code = code
        self.message = message
        self.anchor = anchor
    }

    public var description: String { message }
}

extension VerificationPolicy {
    /// A site's verification settings (the BeaconMap's `settings:`).
    public init(_ settings: VerificationSettings) {
        self.init()
        minConfidence = settings.minConfidence
        maxAgeDays = settings.maxAgeDays
    }
}

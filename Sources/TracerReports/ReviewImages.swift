import Foundation
import TracerModel

/// The images of reports waiting for the health team: a reviewer has to see the page the policy
/// could not decide on, and nobody else ever does.
///
/// Each image is a file `{reportId}` of mode 0600 in a directory of mode 0700 of its own, never
/// in the document store (so never in `tracer db export`, a replica or a backup of the store). It
/// is deleted when its report is decided, and at the latest `keep` (72 hours) after it came in,
/// whether decided or not: a report still pending then is decided on its evidence alone.
public struct ReviewImages: Sendable {
    public let directory: String
    /// How long an image is kept at most.
    public let keep: TimeInterval

    public static let defaultKeep: TimeInterval = 72 * 3600

    public init(directory: String, keep: TimeInterval = Self.defaultKeep) {
        self.directory = directory
        self.keep = keep
    }

    /// Where a report's image is (report ids are 20 hex digits: never a path of their own).
    func file(_ reportID: String) throws -> String {
        guard !reportID.isEmpty, reportID.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x7A).contains($0) })
        else { throw ReviewError(.notFound, "no report \(reportID.prefix(40))") }
        return (directory as NSString).appendingPathComponent(reportID)
    }

    /// Keeps `data` for `reportID`, readable by this user only. Written to a temporary name and
    /// renamed, so that a reader never sees half an image.
    public func keep(_ data: Data, for reportID: String) throws {
        let fm = FileManager.default
        try fm.createDirectory(
            atPath: directory,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700]
        )
        // An existing directory keeps its mode: make it this one's.
        try fm.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory)
        let path = try file(reportID)
        let temporary = path + ".partial"
        guard fm.createFile(atPath: temporary, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw ReviewError(.io, "cannot write the review image \(temporary)")
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: temporary))
        defer { try? handle.close() }
        try handle.write(contentsOf: data)
        try handle.synchronize()
        guard rename(temporary, path) == 0 else {
            throw ReviewError(.io, "cannot rename \(temporary) to \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// A pending report's image, or nil when it is not kept (decided, past its time, or received
    /// by another server of the site).
    public func image(_ reportID: String, now: Date = Date()) throws -> Data? {
        let path = try file(reportID)
        guard let received = Self.modified(path) else { return nil }
        guard now.timeIntervalSince(received) < keep else {
            try? FileManager.default.removeItem(atPath: path)
            return nil
        }
        return FileManager.default.contents(atPath: path)
    }

    /// Whether a report's image is kept and within its time (its file's date only: nothing read).
    public func has(_ reportID: String, now: Date = Date()) -> Bool {
        guard let path = try? file(reportID), let received = Self.modified(path) else { return false }
        return now.timeIntervalSince(received) < keep
    }

    /// Deletes a report's image (a decision was made); false when there was none.
    @discardableResult
    public func remove(_ reportID: String) -> Bool {
        guard let path = try? file(reportID) else { return false }
        return (try? FileManager.default.removeItem(atPath: path)) != nil
    }

    /// Deletes every image older than `keep` (and any half-written one older than that), and
    /// returns how many went. With `status` (a report's status, or nil when there is no such
    /// report), also the images whose reports are no longer pending: decided by another server of
    /// the site (several `tracer serve` on one PostgreSQL store each keep the images they
    /// received, and a decision deletes only the deciding server's), or revoked; and an image
    /// whose report does not exist once `orphanAge` old: its report was never recorded (a crash
    /// between keeping the image and recording the report), or the image is on its way in (kept
    /// a moment before its report is recorded, so not at once). An image whose status cannot be
    /// read stays.
    @discardableResult
    public func purge(
        now: Date = Date(),
        orphanAge: TimeInterval = 3600,
        status: ((String) throws -> Report.Status?)? = nil
    ) -> Int {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return 0 }
        var removed = 0
        for name in names {
            let path = (directory as NSString).appendingPathComponent(name)
            guard let received = Self.modified(path) else { continue }
            let age = now.timeIntervalSince(received)
            if age < keep {
                guard let status, !name.hasSuffix(".partial") else { continue }
                let current: Report.Status?
                do { current = try status(name) } catch { continue }  // the store did not answer: kept
                if let current {
                    guard current != .pending else { continue }
                } else {
                    guard age >= orphanAge else { continue }
                }
            }
            if (try? FileManager.default.removeItem(atPath: path)) != nil { removed += 1 }
        }
        return removed
    }

    /// When a file was written (its modification time), or nil when there is no such file.
    static func modified(_ path: String) -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
    }
}

/// Why a review could not be done.
public struct ReviewError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// No such report.
        case notFound
        /// The report is not pending (decided already, or never held).
        case notPending
        /// The review images' directory could not be written.
        case io
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

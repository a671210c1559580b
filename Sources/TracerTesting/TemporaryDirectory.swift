import Foundation

/// A fresh directory under the system's temporary directory, removed when released.
public final class TemporaryDirectory: Sendable {
    /// The directory's path.
    public let path: String

    public init(_ label: String = "tracer") {
        let base = (NSTemporaryDirectory() as NSString).appendingPathComponent(
            "\(label)-\(UUID().uuidString.prefix(8))"
        )
        try! FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        self.path = base
    }

    /// A path inside the directory.
    public func file(_ name: String) -> String {
        (path as NSString).appendingPathComponent(name)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

import Foundation
import TracerStore

/// Test-result images rendered by `Tools/testing/make_fixtures.py` (dated relative to today,
/// UTC), once per test process, with the manifest of what the verifier should say about each.
public enum ResultImages {
    public static let directory: TemporaryDirectory = {
        let directory = TemporaryDirectory("tracer-fixtures")
        let tool = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Tools/testing/make_fixtures.py").path
        // The OCR fixtures, then the signed certificates (Tools/testing/make_certificates.py).
        for script in [tool, (tool as NSString).deletingLastPathComponent + "/make_certificates.py"] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: script)
            process.arguments = [directory.path, "--today", String(Timestamp.now().iso8601.prefix(10))]
            process.standardError = FileHandle.nullDevice
            try? process.run()
            process.waitUntilExit()
        }
        // A static is never released: the directory goes when the test process exits.
        atexit { try? FileManager.default.removeItem(atPath: ResultImages.directory.path) }
        return directory
    }()

    /// Renders the images (once) on a thread of its own: an async test that is first to ask
    /// would otherwise hold one of Swift Testing's few cooperative threads for the seconds
    /// ImageMagick takes, and every other test asking would hold one more, waiting for it.
    public static func ready() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread {
                _ = directory
                continuation.resume()
            }.start()
        }
    }

    /// The path of one rendered file.
    public static func file(_ name: String) -> String { directory.file(name) }

    /// The signed certificates' manifest (`certificates.json`, the same shape as the manifest);
    /// `trust.pem` beside it is the trust list they were made for.
    public static var certificates: Data {
        (try? Data(contentsOf: URL(fileURLWithPath: directory.file("certificates.json")))) ?? Data()
    }

    /// The manifest's bytes (`[{"file", "expect", "failed", "collected", "about"}]`).
    public static var manifest: Data {
        (try? Data(contentsOf: URL(fileURLWithPath: directory.file("manifest.json")))) ?? Data()
    }
}

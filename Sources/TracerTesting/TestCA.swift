import Foundation

/// A certificate authority made for one test with openssl, and a server certificate it signed for
/// 127.0.0.1 and localhost: what a site with its own CA hands its kiosks and webhooks.
public struct TestCA: Sendable {
    public let directory: TemporaryDirectory
    /// The CA's certificate (PEM): what clients are told to trust.
    public var caFile: String { directory.file("ca.pem") }
    /// The server's certificate (PEM), signed by the CA.
    public var certificateFile: String { directory.file("server.pem") }
    /// The server's private key (PEM).
    public var keyFile: String { directory.file("server.key") }

    public init() throws {
        directory = TemporaryDirectory("tracer-ca")
        let d = directory.path
        try Self.openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
            "-subj", "/CN=tracer test CA", "-keyout", "\(d)/ca.key", "-out", "\(d)/ca.pem",
        ])
        try Self.openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", "\(d)/server.key", "-out", "\(d)/server.csr",
        ])
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(
            toFile: "\(d)/san.ext",
            atomically: true,
            encoding: .utf8
        )
        try Self.openssl([
            "x509", "-req", "-in", "\(d)/server.csr", "-CA", "\(d)/ca.pem", "-CAkey", "\(d)/ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", "\(d)/san.ext", "-out", "\(d)/server.pem",
        ])
    }

    static func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let said = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CocoaError(
                .executableLoad,
                userInfo: [
                    NSLocalizedDescriptionKey: "openssl \(arguments[0]): " + String(decoding: said, as: UTF8.self)
                ]
            )
        }
    }
}

import Foundation
import Testing
import TracerTesting

/// The store's rule for async code, held by the compiler (docs/development.md, "The store from
/// async code"): snippets compiled against the built `TracerStore` as a library module of the
/// product is (no `@_spi(Blocking)`) and as the command line is (with it). Each wrong one must
/// fail with the error that names the rule; the right one must compile.
@Suite struct BlockingCallsTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var source: String
        /// What the compiler must say; nil: it must compile.
        var error: String?
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "a read through reading compiles",
            source: """
                import TracerStore
                func f(_ s: DocumentStore) async throws -> Bool { try await s.reading { db in try db.get("a/b").exists } }
                """,
            error: nil
        ),
        Case(
            name: "a library module cannot reach a blocking call",
            source: """
                import TracerStore
                func f(_ s: DocumentStore) throws -> Bool { try s.get("a/b").exists }
                """,
            error: "'get' is inaccessible due to '@_spi' protection level"
        ),
        Case(
            name: "the command line cannot block in async code",
            source: """
                @_spi(Blocking) import TracerStore
                func f(_ s: DocumentStore) async throws -> Bool { try s.read { db in try db.get("a/b").exists } }
                """,
            error: "instance method 'read' is unavailable from asynchronous contexts"
        ),
        Case(
            name: "a handle is not sent to a task",
            source: """
                import TracerStore
                func f(_ s: DocumentStore) async throws { try await s.reading { db in Task { _ = try db.get("a/b") } } }
                """,
            error: "risks causing data races"
        ),
        Case(
            name: "a handle is not kept past its closure",
            source: """
                import TracerStore
                func f(_ s: DocumentStore) async throws { _ = try await s.reading { db in db } }
                """,
            error: "type 'StoreReader' does not conform to the 'Sendable' protocol"
        ),
    ]

    @Test(arguments: cases) func theCompilerHoldsTheRule(_ c: Case) async throws {
        let build = Chromium.package + "/.build/debug"
        let dir = TemporaryDirectory("tracer-blocking")
        let file = dir.file("snippet.swift")
        try c.source.write(toFile: file, atomically: true, encoding: .utf8)
        // The C modules the store's interface reaches (its own and its packages'), as SwiftPM
        // hands them to the compiler.
        var arguments = ["swiftc", "-emit-sil", "-o", "/dev/null", "-swift-version", "6", "-I", build + "/Modules"]
        for root in [build, Chromium.package + "/Sources"] {
            for map in Self.paths(named: "module.modulemap", under: root, depth: 2) {
                arguments += ["-Xcc", "-fmodule-map-file=" + map]
            }
        }
        for include in Self.paths(named: "include", under: Chromium.package + "/.build/checkouts", depth: 8) {
            arguments += ["-Xcc", "-I" + include]
        }
        let r = try await TracerProcess.running(arguments + [file], program: "/usr/bin/env")
        if let error = c.error {
            #expect(r.status != 0 && r.stderr.contains(error), "\(r.stderr.suffix(2000))")
        } else {
            #expect(r.status == 0, "\(r.stderr.suffix(2000))")
        }
    }

    /// Paths named `name` under `root`, at most `depth` levels down (a file or a directory).
    static func paths(named name: String, under root: String, depth: Int) -> [String] {
        let fm = FileManager.default
        var found: [String] = []
        var level = [URL(fileURLWithPath: root).resolvingSymlinksInPath().path]
        for _ in 0..<depth {
            var next: [String] = []
            for dir in level {
                for entry in (try? fm.contentsOfDirectory(atPath: dir)) ?? [] {
                    let path = dir + "/" + entry
                    if entry == name { found.append(path) }
                    var isDirectory: ObjCBool = false
                    if fm.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
                        next.append(path)
                    }
                }
            }
            level = next
        }
        return found
    }
}

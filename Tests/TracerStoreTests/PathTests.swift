import Testing
import TracerTesting

@_spi(Blocking) @testable import TracerStore

@Suite struct PathTests {
    @Test func splitsAndNames() throws {
        let p = try DocumentPath("beacons/b-101/interactions/Xy3")
        #expect(p.id == "Xy3")
        #expect(p.collectionID == "interactions")
        #expect(p.parent.description == "beacons/b-101/interactions")
        #expect(try DocumentPath("/beacons/b-101/") == DocumentPath("beacons/b-101"))
    }

    @Test(arguments: [
        ("beacons", "names a collection"),
        ("", "empty"),
        ("a//b", "empty segment"),
        ("a/./b/c", "'.' is not a valid id"),
        ("a/../b/c", "'..' is not a valid id"),
        ("a/__id__", "reserved"),
        ("a/" + String(repeating: "x", count: 1501), "1,500 bytes"),
        (Array(repeating: "c/d", count: 101).joined(separator: "/"), "deeper than 100"),
        ("a/b\u{1}c", "control characters"),
        // A '/' with a combining mark after it is one character, so splitting by characters
        // leaves it inside an id: refused, or the id would split apart once stored.
        ("a/\u{301}b/c/d", "may not contain '/'"),
    ])
    func rejectsDocumentPaths(_ path: String, _ reason: String) {
        #expect {
            try DocumentPath(path)
        } throws: { error in
            guard let e = error as? StoreError else { return false }
            return e.code == .invalidPath && e.description.contains(reason)
        }
    }

    /// Paths of ASCII are split by their bytes (`PathRules.split`): the segments, and the error
    /// for each bad one, must be those of splitting by characters and checking each segment as
    /// the rules read, on random paths of the characters that matter.
    @Test func asciiPathsSplitAsTheirCharactersDo() {
        var g = SplitMix64(seed: 46)
        let alphabet: [Character] = ["a", "b", "/", "/", ".", "_", "\u{1}", "\u{7F}", " "]
        for _ in 0..<20_000 {
            let path = String((0..<Int.random(in: 0...12, using: &g)).map { _ in alphabet.randomElement(using: &g)! })
            let got: [String]
            do { got = try PathRules.split(path) } catch { got = ["error: " + error.message] }
            #expect(got == Self.reference(path), "\(path.debugDescription)")
            // A stored parent's path read back with a document's id (every group query's row).
            if let parent = try? PathRules.split(path), parent.count % 2 == 1 {
                let read = DocumentPath(parentText: parent.joined(separator: "/"), id: "d")
                #expect(read.segments == parent + ["d"], "\(path.debugDescription)")
            }
        }
    }

    /// The rules read plainly: split by characters, each segment checked in turn; an error as
    /// its message.
    static func reference(_ path: String) -> [String] {
        var text = Substring(path)
        if text.first == "/" { text = text.dropFirst() }
        if text.last == "/" { text = text.dropLast() }
        if text.isEmpty { return ["error: the path is empty"] }
        let segments = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        for s in segments {
            if s.isEmpty { return ["error: the path has an empty segment"] }
            if s.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                return ["error: an id may not contain control characters"]
            }
            if s == "." || s == ".." { return ["error: '\(s)' is not a valid id"] }
            if s.count >= 4, s.hasPrefix("__"), s.hasSuffix("__") {
                return ["error: ids of the form __x__ are reserved ('\(s)')"]
            }
        }
        return segments
    }

    @Test func acceptsTheDeepestAllowedPath() throws {
        let path = Array(repeating: "c/d", count: 100).joined(separator: "/")
        #expect(try DocumentPath(path).segments.count == 200)
    }

    @Test func collectionPathsNeedOddSegments() {
        #expect(throws: StoreError.self) { try CollectionPath("beacons/b-101") }
        #expect((try? CollectionPath("beacons/b-101/interactions"))?.id == "interactions")
    }

    @Test func randomIDsAreTwentyAlphanumerics() {
        let ids = (0..<1000).map { _ in DocumentID.random() }
        #expect(Set(ids).count == 1000)
        #expect(ids.allSatisfy { $0.count == 20 && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } })
    }

    @Test(arguments: [
        ("a", ["a"]), ("a.b_c.d1", ["a", "b_c", "d1"]), ("`a.b`.c", ["a.b", "c"]), ("`x\\`y`", ["x`y"]),
        ("`1st`", ["1st"]), ("`odd name`.`é`", ["odd name", "é"]),
    ])
    func parsesFieldPaths(_ text: String, _ segments: [String]) throws {
        let path = try FieldPath(parsing: text)
        #expect(path.segments == segments)
        #expect(try FieldPath(parsing: path.description) == path)
    }

    @Test(arguments: ["", "a.", ".a", "a..b", "a b", "`a", "1st", "a`b`", "`a`b", "é"])
    func rejectsFieldPaths(_ text: String) {
        #expect(throws: StoreError.self) { try FieldPath(parsing: text) }
    }
}

import Testing

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
    ])
    func rejectsDocumentPaths(_ path: String, _ reason: String) {
        #expect {
            try DocumentPath(path)
        } throws: { error in
            guard let e = error as? StoreError else { return false }
            return e.code == .invalidPath && e.description.contains(reason)
        }
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

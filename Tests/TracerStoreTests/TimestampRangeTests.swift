import Foundation
import Testing
import TracerTesting

@_spi(Blocking) @testable import TracerStore

/// Times are Firestore's, 0001-01-01 through 9999-12-31: checked where they are decoded, and
/// what tracer computes saturates instead of trapping (each case here crashed a process before).
@Suite struct TimestampRangeTests {
    @Test(arguments: [
        "9999999999999", "-9999999999999", "1e300", "-1e300", "inf", "2026-02-30", "2025-02-29", "2026-04-31",
        "0000-01-01T00:00:00Z", "9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00",
    ])
    func outOfRangeOrNoSuchDayIsRefused(_ text: String) {
        #expect(Timestamp(parsing: text) == nil, "\(text)")
    }

    @Test func theEndsOfTheRangeParseAndPrintBothWays() {
        #expect(Timestamp(parsing: "0001-01-01T00:00:00Z") == .min)
        #expect(Timestamp(parsing: "9999-12-31T23:59:59.999999Z") == .max)
        #expect(Timestamp(parsing: "2024-02-29") != nil && Timestamp(parsing: "2000-02-29") != nil)
        #expect(Timestamp(parsing: "1900-02-29") == nil)
        for t in [Timestamp.min, .max] { #expect(Timestamp(parsing: t.iso8601) == t) }
        #expect(Timestamp(checkedSeconds: .nan) == nil && Timestamp(checkedSeconds: 1e300) == nil)
        #expect(Timestamp(checkedSeconds: 1_795_168_800)?.microseconds == 1_795_168_800_000_000)
    }

    @Test func whatTracerComputesSaturates() {
        #expect(Timestamp(seconds: 1e300) == .max && Timestamp(seconds: -1e300) == .min)
        #expect(Timestamp(seconds: .nan) == Timestamp(microseconds: 0))
        #expect(Timestamp.now().adding(seconds: -999_999_999 * 86_400) == .min)
        #expect(Timestamp.max.adding(seconds: 300) == .max)
        #expect(Timestamp(microseconds: .max).adding(seconds: 300) == .max)
        #expect(Timestamp(microseconds: .min).adding(seconds: -300) == .min)
        #expect(Int(saturating: 1e300) == .max && Int(saturating: -.infinity) == .min && Int(saturating: .nan) == 0)
        #expect(Int(saturating: 42.9) == 42)
    }

    @Test(arguments: [
        #"{"t": {"__time__": 1e300}}"#, #"{"t": {"__time__": -1e300}}"#, #"{"t": {"__time__": 9223372036854775807}}"#,
        #"{"t": {"__time__": "10000-01-01T00:00:00Z"}}"#, #"{"t": {"__time__": "2026-02-30"}}"#,
    ])
    func aTimeOutOfRangeInJSONIsAnErrorNamingIt(_ text: String) {
        #expect {
            try JSON.parse(text)
        } throws: { error in
            "\(error)".contains("__time__")
        }
    }

    /// What export writes, import reads: at both ends of the range too.
    @Test func exportAndImportRoundTripTheRangesEnds() throws {
        let (store, dir) = try DocumentStore.temporary()
        _ = dir
        try store.set(DocumentPath("a/b"), ["first": .timestamp(.min), "last": .timestamp(.max)])
        let line = DocumentStore.exportLine(try store.get(DocumentPath("a/b")))
        let (path, data) = try DocumentStore.parseImportLine(line)
        #expect(path.description == "a/b")
        #expect(data["first"] == .timestamp(.min) && data["last"] == .timestamp(.max))
    }

    @Test(arguments: ["a\u{0}b", "tab\there", "del\u{7F}"])
    func idsWithControlCharactersAreRefused(_ id: String) {
        #expect(throws: StoreError.self) { try DocumentPath("c/" + id) }
    }

    @Test func invalidUTF8IsRefusedNotReplaced() {
        var bytes = Array(#"{"k": ""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)
        #expect(throws: StoreError.self) { try JSON.parse(bytes: &bytes, allowSentinels: false) }
        var escaped = Array(#"{"k": "é\u00e9"}"#.utf8)
        #expect((try? JSON.parse(bytes: &escaped, allowSentinels: false)) == .map(["k": "éé"]))
    }
}

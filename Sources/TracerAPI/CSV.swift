/// CSV for the health authority's spreadsheets.
public enum CSV {
    /// A text cell, quoted where CSV needs it and inert in a spreadsheet: one that starts with
    /// `=`, `+`, `-`, `@`, a tab or a carriage return (a formula to Excel, LibreOffice and Google
    /// Sheets) gets a leading `'` and quotes, as OWASP's advice on CSV injection says. Ids come
    /// from kiosks: text a token holder chose.
    public static func text(_ s: String) -> String {
        var cell = s
        var quoted = cell.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" })
        if let first = cell.unicodeScalars.first, "=+-@\t\r".unicodeScalars.contains(first) {
            cell = "'" + cell
            quoted = true
        }
        return quoted ? "\"" + cell.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : cell
    }
}

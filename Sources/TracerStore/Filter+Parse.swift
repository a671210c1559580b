extension Filter {
    /// Parses `FIELD OP VALUE`, where VALUE is JSON: `start >= {"__time__": "2026-11-22T10:00:00Z"}`,
    /// `proximity in ["near", "immediate"]`, `` `odd field` == 3 ``.
    public static func parse(_ text: String) throws -> Filter {
        func fail(_ why: String) -> StoreError {
            StoreError(.invalidQuery, "cannot read the filter '\(text)': \(why)")
        }
        let trimmed = text.drop(while: \.isWhitespace)
        // The field path runs to the first space outside backticks.
        var inQuotes = false
        var escaped = false
        var end = trimmed.endIndex
        for i in trimmed.indices {
            let c = trimmed[i]
            if escaped {
                escaped = false
                continue
            }
            if c == "\\" && inQuotes {
                escaped = true
                continue
            }
            if c == "`" {
                inQuotes.toggle()
                continue
            }
            if c.isWhitespace && !inQuotes {
                end = i
                break
            }
        }
        let fieldText = String(trimmed[..<end])
        guard !fieldText.isEmpty, end != trimmed.endIndex else { throw fail("expected FIELD OP VALUE") }
        let field = fieldText == "__name__" ? FieldPath.documentID : try FieldPath(parsing: fieldText)
        let rest = trimmed[end...].drop(while: \.isWhitespace)
        guard let opEnd = rest.firstIndex(where: \.isWhitespace) else { throw fail("expected an operator and a value") }
        let opText = String(rest[..<opEnd])
        guard let op = Operator(rawValue: opText) else {
            throw fail("unknown operator '\(opText)' (use \(Operator.allCases.map(\.rawValue).joined(separator: " ")))")
        }
        let valueText = String(rest[opEnd...].drop(while: \.isWhitespace))
        let value: Value
        do {
            value = try JSON.parse(valueText)
        } catch {
            throw fail("the value is JSON: write strings in double quotes, e.g. \"near\" (\(error))")
        }
        let filter = Filter.field(field, op, value)
        try filter.validate()
        return filter
    }
}

extension IndexDefinition.Field {
    /// Parses `start`, `start:asc` or `start:desc`.
    public init(parsing text: String) throws {
        var name = Substring(text)
        var descending = false
        if name.hasSuffix(":desc") {
            descending = true
            name = name.dropLast(5)
        } else if name.hasSuffix(":asc") {
            name = name.dropLast(4)
        }
        self.init(try FieldPath(parsing: String(name)), descending: descending)
    }
}

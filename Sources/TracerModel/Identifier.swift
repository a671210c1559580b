/// The one rule for the ids people and kiosks give tracer (a device id, a beacon key, a report
/// id): letters, digits and `-_.:`, 1 to 128 of them, never `.` or `..`. The API takes ids from
/// URLs by it, `/v1/sync` takes interactions' device ids by it, and flagging skips a stored
/// window whose device id breaks it: such an id could never be a document's id, so a kiosk that
/// sent one could otherwise stop other people's reports from flagging anyone.
public enum Identifier {
    public static let maxLength = 128

    /// An id of a path taken over HTTP (`/v1/sync`, `/v1/watch`): `isValid`, and a letter, digit,
    /// `-` or `:` first (the OpenAPI document's `DocumentPath`), as every id the product makes is.
    public static func isPathID(_ id: String) -> Bool {
        guard let first = id.utf8.first, first != UInt8(ascii: "."), first != UInt8(ascii: "_") else { return false }
        return isValid(id)
    }

    public static func isValid(_ id: String) -> Bool {
        let utf8 = id.utf8
        guard !utf8.isEmpty, utf8.count <= maxLength, id != ".", id != ".." else { return false }
        return utf8.allSatisfy {
            ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A)
                || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".")
                || $0 == UInt8(ascii: ":")
        }
    }
}

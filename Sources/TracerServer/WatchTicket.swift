import Foundation
import TracerModel
import TracerStore

/// A watch ticket: what a page puts in its stream's URL instead of its token
/// (`POST /v1/watch/ticket?path=…`, then `GET /v1/watch?path=…&ticket=…`). EventSource cannot
/// send an Authorization header, and a URL ends up in logs (the reverse proxy's first): a ticket
/// there opens one path's stream for 10 minutes, for as long as its token is not revoked, and
/// nothing else. It is `{token id}.{expiry}.{mac}`, the MAC an HMAC-SHA256 under the site's
/// `config/watchKey` (made on first use, in the store: every server of a site takes every
/// ticket), so no server keeps a list of them.
enum WatchTicket {
    /// Seconds a ticket opens streams for (a reconnect within it needs no new one).
    static let lifetime = 600.0

    static func make(tokenID: String, path: String, now: Double, key: [UInt8]) -> String {
        let expiry = Int64(now + lifetime)
        return "\(tokenID).\(expiry).\(mac(tokenID, expiry, path, key))"
    }

    /// The token id a good ticket for `path` carries, or nil (forged, expired, another path's).
    static func tokenID(_ ticket: String, path: String, now: Double, key: [UInt8]) -> String? {
        let parts = ticket.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, TokenStore.isID(parts[0]), let expiry = Int64(parts[1]),
            Double(expiry) >= now, Double(expiry) <= now + lifetime + 5
        else { return nil }
        let id = String(parts[0])
        guard TokenStore.constantTimeEqual(Array(parts[2].utf8), Array(mac(id, expiry, path, key).utf8)) else {
            return nil
        }
        return id
    }

    static func mac(_ tokenID: String, _ expiry: Int64, _ path: String, _ key: [UInt8]) -> String {
        String(Digest.hmacSHA256Hex(key: key, message: Array("watch\n\(tokenID)\n\(expiry)\n\(path)".utf8)).prefix(43))
    }

    /// The site's ticket key, made on first use.
    static func key(in db: StoreWriter) throws -> [UInt8] {
        try db.runTransaction { t in
            let doc = try t.get(Collections.watchKey)
            if let text = doc["key"]?.stringValue, text.utf8.count == 64 { return Array(text.utf8) }
            let key = TokenStore.random(64)
            t.set(Collections.watchKey, ["key": .string(key)])
            return Array(key.utf8)
        }
    }
}

import TracerStore

/// The data model as people read it: every collection's path, what writes it and its fields. It
/// is the table in docs/design.md and docs/store.md (`tracer db collections --markdown`, put there
/// by `Tools/docs/reference`, which a test keeps current), and tests hold it to `Collections`
/// (every path they build is here, and nothing else) and to the documents the models write (no
/// field they write is missing here).
public enum DataModel {
    public struct Entry: Sendable, Equatable {
        /// The path, ids in braces: `beacons/{anchorKey}/interactions/{id}`.
        public var path: String
        public var writtenBy: String
        /// Top-level fields, each with what it holds in parentheses where its name does not say.
        public var fields: [String]

        /// The fields' names alone.
        public var names: [String] { fields.map { String($0.prefix { $0 != " " }) } }

        /// Whether a concrete path is one of this entry's (ids in braces match any one segment).
        public func matches(_ concrete: String) -> Bool {
            let pattern = path.split(separator: "/")
            let segments = concrete.split(separator: "/")
            guard pattern.count == segments.count else { return false }
            return zip(pattern, segments).allSatisfy { p, s in p.hasPrefix("{") || p == s }
        }
    }

    public static let entries: [Entry] = [
        Entry(
            path: "beacons/{anchorKey}",
            writtenBy:
                "the daemon at start, from the BeaconMap (merged); a kiosk's running calibration, or the site server's fit it follows",
            fields: [
                "kind (kiosk, beacon)", "room", "name", "position ([x, y] m)", "site", "uuid", "major", "minor",
                "measuredPower", "ts",
                "calibration ({receiverOffset dB, windows, references, source: kiosks for the site server's fit, movedFrom, shift and movedAt while it follows a move, mapOffset: the map's offset it was made under, updatedAt})",
            ]
        ),
        Entry(
            path: "beacons/{anchorKey}/interactions/{id}",
            writtenBy: "the daemon, one per device per 30 s window",
            fields: [
                "deviceId", "anchor", "beacon ({uuid, major, minor})", "proximity (immediate, near, far)",
                "proximityCode (1, 2, 3)", "distance (m)", "minDistance (m)", "rssi (smoothed dBm)", "measuredPower",
                "start", "end (the window it sums up)", "samples", "testResult", "ts (the commit time)",
            ]
        ),
        Entry(
            path: "beacons/{kioskKey}/hearings/{emitter}-{start}",
            writtenBy: "a kiosk's daemon, one per anchor of the map heard per 5 minutes; no person in it",
            fields: [
                "emitter (the anchor heard)", "rssi (mean dBm)", "spread (dB)", "weakest (dBm)", "count (adverts)",
                "measuredPower", "start", "end",
            ]
        ),
        Entry(
            path: "reports/{id}",
            writtenBy: "`tracer self-report`, `POST /v1/reports`; the health team's review",
            fields: [
                "deviceId", "status (pending, accepted, denied, revoked)", "collectedAt",
                "evidence (lines matched, or the certificate's issuer)", "imageSHA256", "answers", "doubts",
                "createdAt", "decidedBy", "decidedAt", "note", "revokedAt", "flaggingFailed", "flaggingFailedAt",
            ]
        ),
        Entry(
            path: "flaggings/{reportId}",
            writtenBy: "the exposure engine, flagging a report for the desk that recorded it or the flagger",
            fields: ["input (the report as decided)", "claimedBy", "claimedAt", "doneAt", "windows"]
        ),
        Entry(
            path: "devices/{deviceId}",
            writtenBy: "the exposure engine",
            fields: [
                "status (clear, exposed, positive)",
                "risk (low, medium, high: exposed by 0, 1–2, 3 or more distinct reports)", "exposureCount",
                "colocatedMinutes",
                "updatedAt", "report (the device's own report: its id, status and whether flagging failed)",
            ]
        ),
        Entry(
            path: "devices/{deviceId}/exposures/{id}",
            writtenBy: "the exposure engine, per report, device, anchor and episode",
            fields: [
                "reportId", "deviceId", "beaconKey", "from", "to", "separation ({min, max} m)", "overlapSeconds",
                "rule", "chance (the pair decision's, under positions)", "flaggedAt",
            ]
        ),
        Entry(
            path: "devices/{deviceId}/push/{id}",
            writtenBy: "`POST /v1/devices/{id}/push` (a browser's Web Push subscription); the push notifier",
            fields: ["endpoint", "p256dh", "auth", "createdAt", "tokenId", "owedAt", "failingSince", "failures"]
        ),
        Entry(
            path: "tokens/{id}",
            writtenBy: "`tracer token create`, `tracer badge issue --link`; `POST /v1/links`",
            fields: [
                "role (admin, kiosk, device)", "hash (SHA-256 of the secret)", "name", "deviceId", "anchor",
                "link", "createdAt", "linkedAt", "linkAttempt", "revokedAt",
            ]
        ),
        Entry(
            path: "audit/{id}",
            writtenBy: "`tracer serve`, one per admin request",
            fields: ["tokenId", "tokenName", "role", "method", "path", "at", "outcome"]
        ),
        Entry(
            path: "kiosks/{anchorKey}",
            writtenBy: "the site server, per replicating kiosk",
            fields: [
                "tokenId", "acknowledged", "backlog", "backlogOldest", "documents", "refused", "lastSeen",
                "clockOffset (s)", "refusedBatches", "lastRefusal", "lastRefusedAt",
            ]
        ),
        Entry(
            path: "config/site",
            writtenBy: "`tracer map publish`, `serve --map`, `daemon --map`",
            fields: [
                "site", "file", "source (the BeaconMap's text)", "digest", "deviceUUIDs", "rooms", "anchors",
                "publishedAt",
            ]
        ),
        Entry(
            path: "config/badgeKeys",
            writtenBy: "`tracer badge issue|rekey|reprovision|revoke` (the site server's store only)",
            fields: ["keys (generation → 32 bytes)", "generation", "version", "nextNumber", "updatedAt"]
        ),
        Entry(
            path: "config/push",
            writtenBy: "the site server, once (its Web Push key)",
            fields: ["privateKey", "publicKey"]
        ),
        Entry(
            path: "config/watchKey",
            writtenBy: "the site server, once (the key watch tickets are signed with; never leaves it)",
            fields: ["key"]
        ),
        Entry(
            path: "badges/{serial}",
            writtenBy: "`tracer badge …`",
            fields: ["number", "generation", "deviceId (badge:SERIAL)", "issuedAt", "reprovisionedAt", "revokedAt"]
        ),
        Entry(
            path: "badgeIDs/{day}",
            writtenBy: "a kiosk's daemon, from its site server (never replicated)",
            fields: [
                "day (YYYY-MM-DD)", "epochBits", "version", "serials", "numbers", "firstEpoch", "epochs",
                "ids (bytes)", "storedAt",
            ]
        ),
    ]

    /// The entry a concrete document path belongs to.
    public static func entry(for path: DocumentPath) -> Entry? {
        entries.first { $0.matches(path.description) }
    }

    /// The table, as docs/design.md and docs/store.md carry it.
    public static var markdown: String {
        var lines = ["| path | written by | fields |", "|---|---|---|"]
        for e in entries {
            let fields = e.fields.map { f in
                let name = f.prefix { $0 != " " }
                return "`\(name)`" + f.dropFirst(name.count)
            }
            lines.append(
                "| `\(e.path)` | \(e.writtenBy.replacingOccurrences(of: "|", with: "\\|")) | \(fields.joined(separator: ", ")) |"
            )
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The same for a terminal: each path, what writes it, and its fields' names.
    public static var text: String {
        entries.map { "\($0.path)\n  written by: \($0.writtenBy)\n  fields: \($0.names.joined(separator: ", "))" }
            .joined(separator: "\n\n") + "\n"
    }
}

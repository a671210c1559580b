import Foundation
import TracerModel
import TracerSite
import TracerStore

/// One replication exchange on the wire (`POST /v1/sync`), in the store's own JSON (timestamps
/// tagged, so that a document arrives exactly as it was stored).
///
/// ```
/// {"kiosk": "kiosk-lab", "through": 1234, "sentAt": 1795341600.125, "clock": {"offset": 0.002, "delay": 0.004},
///  "backlog": {"changes": 0, "oldest": null},
///  "documents": [{"path": "beacons/kiosk-lab/interactions/Xy3…", "data": {…}},
///                {"path": "beacons/kiosk-lab/interactions/Ab1…", "deleted": true}]}
/// ```
public struct SyncBatch: Sendable, Equatable {
    /// The anchor the kiosk ranges as.
    public var kiosk: String
    /// The kiosk's change token this batch reaches.
    public var through: Int64
    /// The kiosk's clock when it sent the batch (Unix seconds).
    public var sentAt: Double
    /// The kiosk's clock against the server's as the kiosk measured it (NTP's way, from its
    /// exchanges so far: kiosk minus server, and the round trip of the exchange it comes from).
    public var clock: ClockSample?
    /// Changes still queued at the kiosk after this batch, and the time of the oldest.
    public var backlog: Int64
    public var backlogOldest: Double?
    public var documents: [Replica]

    public init(
        kiosk: String,
        through: Int64,
        sentAt: Double,
        clock: ClockSample?,
        backlog: Int64,
        backlogOldest: Double?,
        documents: [Replica]
    ) {
        self.kiosk = kiosk
        self.through = through
        self.sentAt = sentAt
        self.clock = clock
        self.backlog = backlog
        self.backlogOldest = backlogOldest
        self.documents = documents
    }

    /// The documents' part of a request body (`[{"path", "data"}, …]`), with each entry's JSON
    /// (`Outbox.Entry.json`) copied in as it is.
    public static func documents(_ entries: [Outbox.Entry]) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "[")]
        out.reserveCapacity(entries.reduce(2) { $0 + ($1.json?.count ?? 0) + 100 })
        let pathKey = Array("{\"path\": ".utf8)
        let dataKey = Array(", \"data\": ".utf8)
        let deleted = Array(", \"deleted\": true".utf8)
        for (i, e) in entries.enumerated() {
            if i > 0 { out += [UInt8(ascii: ","), UInt8(ascii: " ")] }
            out += pathKey
            out += JSON.string(.string(e.path.description)).utf8
            if let json = e.json {
                out += dataKey
                out += json
            } else {
                out += deleted
            }
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "]"))
        return out
    }

    /// The request body around its documents' part (`documents(_:)`).
    public static func body(
        kiosk: String,
        through: Int64,
        sentAt: Double,
        clock: ClockSample?,
        backlog: Int64,
        backlogOldest: Double?,
        documents: [UInt8]
    ) -> [UInt8] {
        var head = "{\"kiosk\": " + JSON.string(.string(kiosk)) + ", \"through\": \(through), \"sentAt\": "
        head += JSON.string(.double(sentAt))
        if let clock {
            head += ", \"clock\": {\"offset\": " + JSON.string(.double(clock.offset)) + ", \"delay\": "
            head += JSON.string(.double(clock.delay)) + "}"
        }
        head += ", \"backlog\": {\"changes\": \(backlog), \"oldest\": "
        head += backlogOldest.map { JSON.string(.double($0)) } ?? "null"
        head += "}, \"documents\": "
        var out = Array(head.utf8)
        out.reserveCapacity(out.count + documents.count + 1)
        out += documents
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// An integer, written as one or as a number with no fraction (`66.0`: JSON's integers).
    static func count(_ value: Value) -> Int64? {
        switch value {
        case .integer(let n): return n
        case .double(let d) where d == d.rounded() && abs(d) < 9e15: return Int64(d)
        default: return nil
        }
    }

    /// Unix seconds within years 0001–9999, the document's bounds exactly (a Double's rounding
    /// near 9999 would let 10000-01-01 through `Timestamp(checkedSeconds:)`).
    static func isTime(_ seconds: Double) -> Bool {
        seconds >= -62_135_596_800 && seconds < 253_402_300_800 && Timestamp(checkedSeconds: seconds) != nil
    }

    /// Parses a request body; every problem is a `SyncError.badRequest` naming the document.
    public init(json bytes: [UInt8]) throws(SyncError) {
        var bytes = bytes
        let value: Value
        do {
            // Sentinels are refused: a replica carries stored values, never increments.
            value = try JSON.parse(bytes: &bytes, allowSentinels: false)
        } catch {
            throw SyncError(.badRequest, "the body is not a sync batch: \(error.description)")
        }
        guard case .map(let top) = value else { throw SyncError(.badRequest, "the body is not a JSON object") }
        guard case .string(let kiosk)? = top["kiosk"], !kiosk.isEmpty else {
            throw SyncError(.badRequest, "kiosk: the kiosk's anchor key is needed")
        }
        guard let through = top["through"].flatMap(Self.count), through >= 0 else {
            throw SyncError(.badRequest, "through: a change token (0 or more) is needed")
        }
        guard let sentAt = top["sentAt"]?.doubleValue, Self.isTime(sentAt) else {
            throw SyncError(.badRequest, "sentAt: Unix seconds are needed")
        }
        guard case .array(let docs)? = top["documents"] else {
            throw SyncError(.badRequest, "documents: an array is needed")
        }
        var entries: [Replica] = []
        entries.reserveCapacity(docs.count)
        for (i, doc) in docs.enumerated() {
            guard case .map(let fields) = doc, case .string(let raw)? = fields["path"] else {
                throw SyncError(.badRequest, "documents[\(i)]: {\"path\", \"data\"} or {\"path\", \"deleted\": true}")
            }
            let path: DocumentPath
            do { path = try DocumentPath(raw) } catch {
                throw SyncError(.badRequest, "documents[\(i)]: \(error.description)")
            }
            // Ids as the API writes them (the document's DocumentPath): what the product makes.
            guard path.segments.allSatisfy(Identifier.isPathID) else {
                throw SyncError(
                    .badRequest,
                    "documents[\(i)]: each id of the path is a letter, digit, - or : then letters, digits and - _ . : (at most 128), not \(raw.prefix(120).debugDescription)"
                )
            }
            switch (fields["data"], fields["deleted"]) {
            case (.map(let data)?, nil): entries.append(.init(path: path, data: data))
            case (nil, .bool(true)?): entries.append(.init(path: path, data: nil))
            default:
                throw SyncError(.badRequest, "documents[\(i)] (\(raw.prefix(120))): data (an object) or deleted: true")
            }
        }
        var backlog: Int64 = 0
        var oldest: Double?
        if let b = top["backlog"], b.mapValue == nil {
            throw SyncError(.badRequest, "backlog: {\"changes\", \"oldest\"} is needed")
        }
        var clock: ClockSample?
        if let c = top["clock"], c != .null {
            guard case .map(let fields) = c, let o = fields["offset"]?.doubleValue,
                let d = fields["delay"]?.doubleValue,
                abs(o) <= 1e9, d >= 0, d <= 1e9
            else {
                throw SyncError(.badRequest, "clock: {\"offset\", \"delay\"} in seconds (delay 0 or more) is needed")
            }
            clock = ClockSample(offset: o, delay: d)
        }
        if case .map(let b)? = top["backlog"] {
            if let changes = b["changes"] {
                guard let n = Self.count(changes), n >= 0 else {
                    throw SyncError(.badRequest, "backlog.changes: a count of changes, 0 or more")
                }
                backlog = n
            }
            if let o = b["oldest"], o != .null {
                guard let seconds = o.doubleValue, Self.isTime(seconds) else {
                    throw SyncError(.badRequest, "backlog.oldest: Unix seconds between years 0001 and 9999 are needed")
                }
                oldest = seconds
            }
        }
        self.init(
            kiosk: kiosk,
            through: through,
            sentAt: sentAt,
            clock: clock,
            backlog: backlog,
            backlogOldest: oldest,
            documents: entries
        )
    }
}

/// The server's answer to a batch: what it acknowledged (committed before it answered), what it
/// refused and why, and its clock.
public struct SyncAnswer: Sendable, Equatable {
    /// A document the server will not take from this token (403): not retried.
    public struct Refusal: Sendable, Equatable {
        public var path: String
        public var reason: String

        public init(path: String, reason: String) {
            self.path = path
            self.reason = reason
        }
    }

    public var acknowledged: Int64
    public var applied: Int
    public var unchanged: Int
    public var refused: [Refusal]
    /// The server's clock when the batch arrived and when it answered (Unix seconds): with the
    /// kiosk's send and receive times, an NTP-style measure of the kiosk's clock.
    public var receivedAt: Double
    public var serverTime: Double
    /// The kiosk's clock offset as the server measured it (kiosk minus server), seconds.
    public var clockOffset: Double?

    public init(
        acknowledged: Int64,
        applied: Int,
        unchanged: Int,
        refused: [Refusal],
        receivedAt: Double,
        serverTime: Double,
        clockOffset: Double?
    ) {
        self.acknowledged = acknowledged
        self.applied = applied
        self.unchanged = unchanged
        self.refused = refused
        self.receivedAt = receivedAt
        self.serverTime = serverTime
        self.clockOffset = clockOffset
    }

    public var json: String {
        let refusals = refused.map { r in
            Value.map(["path": .string(r.path), "reason": .string(r.reason), "status": .integer(403)])
        }
        var fields: [String: Value] = [
            "acknowledged": .integer(acknowledged), "applied": .integer(Int64(applied)),
            "unchanged": .integer(Int64(unchanged)), "refused": .array(refusals), "serverTime": .double(serverTime),
            "receivedAt": .double(receivedAt),
        ]
        if let clockOffset { fields["clockOffset"] = .double(clockOffset) }
        return JSON.string(.map(fields))
    }

    public init(json bytes: [UInt8]) throws(SyncError) {
        var bytes = bytes
        guard case .map(let top)? = try? JSON.parse(bytes: &bytes),
            case .integer(let acknowledged)? = top["acknowledged"],
            let serverTime = top["serverTime"]?.doubleValue
        else { throw SyncError(.protocolError, "the server's answer is not a sync acknowledgement") }
        var refused: [Refusal] = []
        if case .array(let list)? = top["refused"] {
            for case .map(let r) in list {
                refused.append(.init(path: r["path"]?.stringValue ?? "?", reason: r["reason"]?.stringValue ?? ""))
            }
        }
        self.init(
            acknowledged: acknowledged,
            applied: top["applied"]?.doubleValue.map { Int(saturating: $0) } ?? 0,
            unchanged: top["unchanged"]?.doubleValue.map { Int(saturating: $0) } ?? 0,
            refused: refused,
            receivedAt: top["receivedAt"]?.doubleValue ?? serverTime,
            serverTime: serverTime,
            clockOffset: top["clockOffset"]?.doubleValue
        )
    }
}

/// One measure of a kiosk's clock: kiosk minus server, seconds, and the round trip it was
/// taken over (less the server's own time); its error is at most half that.
public struct ClockSample: Sendable, Equatable {
    public var offset: Double
    public var delay: Double

    public init(offset: Double, delay: Double) {
        self.offset = offset
        self.delay = delay
    }

    /// NTP's on-wire calculation from the kiosk's send (t0) and receive (t3) and the server's
    /// receive (t1) and answer (t2).
    public init(sent t0: Double, serverReceived t1: Double, serverAnswered t2: Double, received t3: Double) {
        offset = ((t0 - t1) + (t3 - t2)) / 2
        delay = max(0, (t3 - t0) - (t2 - t1))
    }
}

/// The best of a kiosk's recent clock samples: the one with the shortest round trip (NTP's
/// clock filter), so that a batch that waited behind others on a busy server does not count.
public struct ClockFilter: Sendable {
    var samples: [ClockSample] = []
    let keep: Int

    public init(keep: Int = 8) { self.keep = keep }

    public mutating func add(_ s: ClockSample) {
        samples.append(s)
        if samples.count > keep { samples.removeFirst() }
    }

    public var best: ClockSample? { samples.min { $0.delay < $1.delay } }
}

/// What a kiosk token may write: `beacons/{anchor}` and `beacons/{anchor}/interactions/*`.
public enum SyncScope {
    /// Nil when the token may write `path`, else why not (one line, for the audit log and the kiosk).
    public static func refusal(of path: DocumentPath, anchor: String?) -> String? {
        guard let anchor else { return "a kiosk token without --anchor may not replicate" }
        let s = path.segments
        if s.count == 2, s[0] == Beacon.collectionID, s[1] == anchor { return nil }
        if s.count == 4, s[0] == Beacon.collectionID, s[1] == anchor,
            s[2] == Interaction.collectionID || s[2] == Hearing.collectionID
        {
            return nil
        }
        return "outside \(Beacon.collectionID)/\(anchor), its \(Interaction.collectionID) and \(Hearing.collectionID)"
    }

    /// Whether a path is an interaction's: `beacons/{key}/interactions/{id}`.
    public static func isInteraction(_ path: DocumentPath) -> Bool {
        Collections.anchor(ofInteraction: path) != nil
    }

    /// Nil when a replicated document is one the site can use, else why not (one line): an
    /// interaction (`beacons/{key}/interactions/{id}`) must have a device id by the API's own
    /// rule (`Identifier`), a start and an end in `Timestamp.range`, in order and at most a day
    /// apart, and a distance, when it has one, of finite metres; a kiosk's calibration
    /// (`beacons/{key}.calibration`) a receiver offset a map could give. Checked for every token, an
    /// admin's too: stored data must never be able to stop flagging.
    public static func problem(with entry: Replica) -> String? {
        if entry.path.segments.count == 2, entry.path.segments[0] == Beacon.collectionID,
            let calibration = entry.data?["calibration"]
        {
            // Flagging places people with it (where the kiosk stops hearing).
            guard case .map(let m) = calibration, let offset = m["receiverOffset"]?.doubleValue,
                Anchor.receiverOffsets.contains(offset)
            else {
                return "a kiosk's calibration has a receiverOffset from -40 to 40 dB"
            }
            return nil
        }
        if entry.path.segments.count == 4, entry.path.segments[2] == Hearing.collectionID, entry.data != nil {
            return Hearing.hearing(DocumentSnapshot(path: entry.path, data: entry.data)) == nil
                ? "a hearing has an emitter, a finite rssi and measuredPower, a count above 0, a start and an end"
                : nil
        }
        guard isInteraction(entry.path), let data = entry.data else { return nil }
        guard case .string(let device)? = data["deviceId"] else {
            return "an interaction's deviceId is a string"
        }
        guard Identifier.isValid(device) else {
            return
                "an interaction's deviceId takes letters, digits and - _ . : (1 to 128, not . or ..), not '\(device.prefix(40).unicodeScalars.map { $0.properties.isWhitespace || $0.value < 0x20 ? "?" : String($0) }.joined())'"
        }
        guard let start = data["start"]?.timestampValue, let end = data["end"]?.timestampValue,
            start.isInRange, end.isInRange, start <= end, end.seconds - start.seconds <= Presence.longestWindow
        else {
            return "an interaction's start and end are times in order, at most a day apart"
        }
        if let distance = data["distance"], distance != .null {
            guard let metres = distance.doubleValue, metres.isFinite, metres >= 0 else {
                return "an interaction's distance is metres (a number, 0 or more)"
            }
        }
        return nil
    }
}

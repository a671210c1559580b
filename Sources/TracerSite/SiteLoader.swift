import Foundation
import TracerRanging
import Yams

/// A BeaconMap file that cannot be used: which file, which line, what is wrong.
public struct SiteError: Error, Sendable, CustomStringConvertible {
    public var file: String
    public var line: Int?
    public var message: String

    public var description: String {
        line.map { "\(file):\($0): \(message)" } ?? "\(file): \(message)"
    }
}

extension Site {
    /// Reads and checks a BeaconMap file.
    public static func load(file: String) throws -> Site {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw SiteError(file: file, line: nil, message: "cannot read the file")
        }
        var site = try parse(String(decoding: data, as: UTF8.self), file: file)
        try site.readTrustList(besides: file)
        return site
    }

    /// Reads the trust list the map names (relative to `mapFile`'s directory) into
    /// `verification.trustListPEM`; an error names the map's line.
    public mutating func readTrustList(besides mapFile: String) throws {
        guard let name = verification.trustListFile else { return }
        let path =
            name.hasPrefix("/")
            ? name
            : ((mapFile as NSString).deletingLastPathComponent as NSString).appendingPathComponent(name)
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SiteError(
                file: mapFile,
                line: verification.trustListLine,
                message: "settings: trustList: cannot read \(path)"
            )
        }
        verification.trustListPEM = String(decoding: data, as: UTF8.self)
    }

    /// Parses and checks BeaconMap YAML; `file` names it in errors.
    public static func parse(_ text: String, file: String) throws -> Site {
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let e as YamlError {
            throw SiteError(file: file, line: Self.line(of: e), message: "not valid YAML: \(Self.problem(of: e))")
        }
        guard let root, let top = root.mapping else {
            throw SiteError(
                file: file,
                line: root?.mark?.line,
                message: "expected a mapping with site, deviceUUIDs, rooms and anchors"
            )
        }
        var reader = Reader(file: file)
        return try reader.site(top, mark: root.mark)
    }

    private static func line(of e: YamlError) -> Int? {
        switch e {
        case .scanner(_, _, let mark, _), .parser(_, _, let mark, _), .composer(_, _, let mark, _): mark.line
        default: nil
        }
    }

    private static func problem(of e: YamlError) -> String {
        switch e {
        case .scanner(_, let p, _, _), .parser(_, let p, _, _), .composer(_, let p, _, _): p
        default: "\(e)".split(separator: "\n").first.map(String.init) ?? "\(e)"
        }
    }
}

/// Walks the YAML nodes, keeping the file for errors.
private struct Reader {
    let file: String

    func fail(_ node: Node?, _ message: String) -> SiteError {
        SiteError(file: file, line: node?.mark?.line, message: message)
    }

    func fail(_ mark: Mark?, _ message: String) -> SiteError {
        SiteError(file: file, line: mark?.line, message: message)
    }

    /// The fields of a mapping by name; unknown names are errors (a typo must not pass silently).
    func fields(_ node: Node, _ what: String, allowed: Set<String>) throws -> [String: Node] {
        guard let mapping = node.mapping else { throw fail(node, "\(what) must be a mapping") }
        var out: [String: Node] = [:]
        for (k, v) in mapping {
            guard let key = k.string else { throw fail(k, "\(what): keys must be names") }
            guard allowed.contains(key) else {
                throw fail(k, "\(what): unknown field '\(key)' (expected \(allowed.sorted().joined(separator: ", ")))")
            }
            out[key] = v
        }
        return out
    }

    func string(_ node: Node?, _ what: String, parent: Mark?) throws -> String {
        guard let node else { throw fail(parent, "\(what) is missing") }
        guard let s = node.scalar?.string, !s.isEmpty else { throw fail(node, "\(what) must be text") }
        return s
    }

    func number(_ node: Node?, _ what: String, parent: Mark?) throws -> Double {
        guard let node else { throw fail(parent, "\(what) is missing") }
        guard let s = node.scalar?.string, let d = Double(s), d.isFinite else {
            throw fail(node, "\(what) must be a number")
        }
        return d
    }

    func integer(_ node: Node?, _ what: String, in range: ClosedRange<Int>, parent: Mark?) throws -> Int {
        guard let node else { throw fail(parent, "\(what) is missing") }
        guard let s = node.scalar?.string, let i = Int(s) else { throw fail(node, "\(what) must be a whole number") }
        guard range.contains(i) else {
            throw fail(node, "\(what) must be from \(range.lowerBound) to \(range.upperBound), not \(i)")
        }
        return i
    }

    func uuid(_ node: Node?, _ what: String, parent: Mark?) throws -> UUIDBytes {
        let text = try string(node, what, parent: parent)
        guard let u = UUIDBytes(text) else {
            throw fail(node, "\(what) '\(text)' is not a UUID (like f7826da6-4fa2-4e98-8024-bc5b71e0893e)")
        }
        return u
    }

    func point(_ node: Node?, _ what: String, parent: Mark?) throws -> Point {
        guard let node else { throw fail(parent, "\(what) is missing") }
        guard let seq = node.sequence, seq.count == 2 else { throw fail(node, "\(what) must be [x, y] in metres") }
        return Point(try number(seq[0], what, parent: node.mark), try number(seq[1], what, parent: node.mark))
    }

    mutating func site(_ top: Node.Mapping, mark: Mark?) throws -> Site {
        let root = Node.mapping(top)
        let f = try fields(root, "the map", allowed: ["site", "deviceUUIDs", "rooms", "anchors", "settings"])
        let name = try string(f["site"], "site", parent: mark)
        let (deviceUUIDs, deviceUUIDOrder) = try self.deviceUUIDs(f["deviceUUIDs"] ?? nil, mark: mark)
        let rooms = try self.rooms(f["rooms"] ?? nil)
        let anchors = try self.anchors(f["anchors"] ?? nil, rooms: rooms, deviceUUIDs: deviceUUIDs)
        var ranging = RangingSettings()
        var exposure = ExposureSettings()
        var verification = VerificationSettings()
        var guidance: Guidance?
        var pushServices: Set<String>?
        var badges: (uuid: UUIDBytes, bits: Int)?
        if let s = f["settings"] {
            (ranging, exposure, verification) = try settings(s)
            guidance = try self.guidance(s)
            pushServices = try self.pushServices(s)
            badges = try self.badges(s, deviceUUIDs: deviceUUIDs, anchors: anchors)
        }
        var site = Site(
            name: name,
            deviceUUIDs: deviceUUIDs,
            rooms: rooms,
            anchors: anchors,
            ranging: ranging,
            file: file
        )
        site.exposure = exposure
        site.verification = verification
        site.guidance = guidance
        site.pushServices = pushServices
        if let badges {
            site.badgeUUID = badges.uuid
            site.badgeEpochBits = badges.bits
        }
        site.deviceUUIDOrder = deviceUUIDOrder
        return site
    }

    /// `deviceUUIDs`: at least one; each once, in the map's order.
    func deviceUUIDs(_ node: Node?, mark: Mark?) throws -> (Set<UUIDBytes>, [UUIDBytes]) {
        guard let uuidNodes = node?.sequence, !uuidNodes.isEmpty else {
            throw fail(node, "deviceUUIDs must list at least one proximity UUID")
        }
        var deviceUUIDs = Set<UUIDBytes>()
        var deviceUUIDOrder: [UUIDBytes] = []
        for n in uuidNodes {
            let u = try uuid(n, "a device UUID", parent: mark)
            if deviceUUIDs.insert(u).inserted { deviceUUIDOrder.append(u) }
        }
        return (deviceUUIDs, deviceUUIDOrder)
    }

    /// `rooms`: at least one, each key once.
    func rooms(_ node: Node?) throws -> [Room] {
        guard let roomNodes = node?.sequence, !roomNodes.isEmpty else {
            throw fail(node, "rooms must list at least one room")
        }
        var rooms: [Room] = []
        var roomLines: [String: Int] = [:]
        for n in roomNodes { rooms.append(try room(n, seen: &roomLines)) }
        return rooms
    }

    /// One room: its key (not one of `seen`'s: key → line), name, building, floor, outline (three
    /// corners or more) and use.
    func room(_ n: Node, seen roomLines: inout [String: Int]) throws -> Room {
        let r = try fields(n, "a room", allowed: ["key", "name", "building", "floor", "outline", "use"])
        let key = try string(r["key"], "a room's key", parent: n.mark)
        if let first = roomLines[key] {
            throw fail(r["key"], "duplicate room key '\(key)' (first on line \(first))")
        }
        roomLines[key] = n.mark?.line ?? 0
        guard let outlineNode = r["outline"], let corners = outlineNode.sequence, corners.count >= 3 else {
            throw fail(r["outline"] ?? n, "room '\(key)': outline must list at least three [x, y] corners")
        }
        let outline = try corners.map { try point($0, "room '\(key)': a corner", parent: outlineNode.mark) }
        var use = Room.Use.work
        if let u = r["use"] {
            let text = try string(u, "room '\(key)': use", parent: n.mark)
            guard let value = Room.Use(rawValue: text) else {
                throw fail(
                    u,
                    "room '\(key)': use must be one of \(Room.Use.allCases.map(\.rawValue).joined(separator: ", ")), not '\(text)'"
                )
            }
            use = value
        }
        return Room(
            key: key,
            name: try r["name"].map { try string($0, "room '\(key)': name", parent: n.mark) } ?? key,
            building: r["building"]?.scalar?.string,
            floor: try r["floor"].map {
                try integer($0, "room '\(key)': floor", in: -20...200, parent: n.mark)
            },
            outline: outline,
            use: use
        )
    }

    /// `anchors`: at least one, each key once, no two advertising the same identity.
    func anchors(_ node: Node?, rooms: [Room], deviceUUIDs: Set<UUIDBytes>) throws -> [Anchor] {
        guard let anchorNodes = node?.sequence, !anchorNodes.isEmpty else {
            throw fail(node, "anchors must list at least one kiosk or beacon")
        }
        var anchors: [Anchor] = []
        var anchorLines: [String: Int] = [:]
        var identities: [String: String] = [:]
        for n in anchorNodes {
            anchors.append(
                try anchor(n, rooms: rooms, deviceUUIDs: deviceUUIDs, seen: &anchorLines, identities: &identities)
            )
        }
        return anchors
    }

    /// One anchor: a kiosk or a beacon in a room, where it is, what it advertises, and a kiosk's
    /// receiver tuning. `seen`: the keys before it (key → line); `identities`: what the anchors
    /// before it advertise (uuid:major:minor → key).
    func anchor(
        _ n: Node,
        rooms: [Room],
        deviceUUIDs: Set<UUIDBytes>,
        seen anchorLines: inout [String: Int],
        identities: inout [String: String]
    ) throws -> Anchor {
        let a = try fields(
            n,
            "an anchor",
            allowed: [
                "key", "kind", "room", "position", "uuid", "major", "minor", "measuredPower", "receiverOffset",
                "pathLossExponent",
            ]
        )
        let key = try string(a["key"], "an anchor's key", parent: n.mark)
        if let first = anchorLines[key] {
            throw fail(a["key"], "duplicate anchor key '\(key)' (first on line \(first))")
        }
        anchorLines[key] = n.mark?.line ?? 0
        let kindText = try string(a["kind"], "anchor '\(key)': kind", parent: n.mark)
        guard let kind = Anchor.Kind(rawValue: kindText) else {
            throw fail(a["kind"], "anchor '\(key)': kind must be kiosk or beacon, not '\(kindText)'")
        }
        let roomKey = try string(a["room"], "anchor '\(key)': room", parent: n.mark)
        guard let room = rooms.first(where: { $0.key == roomKey }) else {
            throw fail(a["room"], "anchor '\(key)': unknown room '\(roomKey)'")
        }
        let position = try point(a["position"], "anchor '\(key)': position", parent: n.mark)
        guard room.contains(position) else {
            throw fail(
                a["position"],
                "anchor '\(key)': position [\(position.x), \(position.y)] is outside room '\(roomKey)'"
            )
        }
        var identity: (uuid: UUIDBytes, major: UInt16, minor: UInt16)?
        // A beacon always advertises; a kiosk may too (`tracer advertise` beside its daemon),
        // so that the kiosks hear each other and the site calibrates itself.
        if kind == .beacon || a["uuid"] != nil || a["major"] != nil || a["minor"] != nil {
            let u = try uuid(a["uuid"], "\(kind) '\(key)': uuid", parent: n.mark)
            let major = try integer(a["major"], "\(kind) '\(key)': major", in: 0...65535, parent: n.mark)
            let minor = try integer(a["minor"], "\(kind) '\(key)': minor", in: 0...65535, parent: n.mark)
            if deviceUUIDs.contains(u) {
                throw fail(
                    a["uuid"],
                    "\(kind) '\(key)': uuid \(u) is one of deviceUUIDs: its adverts would be taken for a person's"
                )
            }
            let text = "\(u):\(major):\(minor)"
            if let other = identities[text] {
                throw fail(n, "\(kind) '\(key)' advertises the same uuid, major and minor as '\(other)'")
            }
            identities[text] = key
            identity = (u, UInt16(major), UInt16(minor))
        }
        let power = try a["measuredPower"].map {
            try integer($0, "anchor '\(key)': measuredPower", in: -127...(-1), parent: n.mark)
        }
        let (offset, exponent) = try receiverTuning(a, kind: kind, key: key, mark: n.mark)
        return Anchor(
            key: key,
            kind: kind,
            room: roomKey,
            position: position,
            identity: identity,
            measuredPower: power,
            receiverOffset: offset,
            pathLossExponent: exponent
        )
    }

    /// A kiosk's `receiverOffset` (-40 to 40 dB) and `pathLossExponent` (1 to 6); a beacon has neither.
    func receiverTuning(_ a: [String: Node], kind: Anchor.Kind, key: String, mark: Mark?) throws -> (Double?, Double?) {
        var offset: Double?
        if let o = a["receiverOffset"] {
            guard kind == .kiosk else { throw fail(o, "beacon '\(key)': receiverOffset is for kiosks (receivers)") }
            offset = try number(o, "kiosk '\(key)': receiverOffset", parent: mark)
            guard Anchor.receiverOffsets.contains(offset!) else {
                throw fail(o, "kiosk '\(key)': receiverOffset must be from -40 to 40 dB, not \(offset!)")
            }
        }
        var exponent: Double?
        if let o = a["pathLossExponent"] {
            guard kind == .kiosk else {
                throw fail(o, "beacon '\(key)': pathLossExponent is for kiosks (receivers)")
            }
            exponent = try number(o, "kiosk '\(key)': pathLossExponent", parent: mark)
            guard Anchor.pathLossExponents.contains(exponent!) else {
                throw fail(o, "kiosk '\(key)': pathLossExponent must be from 1 to 6, not \(exponent!)")
            }
        }
        return (offset, exponent)
    }

    /// `settings: guidance: {text: …, link: https://…}`: what the person's page says to do next.
    func guidance(_ settings: Node) throws -> Guidance? {
        guard let node = settings.mapping?[Node("guidance")] else { return nil }
        let f = try fields(node, "settings: guidance", allowed: ["text", "link"])
        let text = try string(f["text"], "settings: guidance: text", parent: node.mark)
        guard text.count <= 2000 else {
            throw fail(f["text"], "settings: guidance: text is longer than 2,000 characters")
        }
        var link: String?
        if let n = f["link"] {
            let l = try string(n, "settings: guidance: link", parent: node.mark)
            guard let url = URL(string: l), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil
            else {
                throw fail(n, "settings: guidance: link must be an http:// or https:// address, not '\(l.prefix(80))'")
            }
            link = l
        }
        return Guidance(text: text, link: link)
    }

    /// `settings: badgeUUID: …` (and `badgeEpochBits: K`): the site's rotating badges. Their
    /// UUID is theirs alone: a static device's or a fixed beacon's would make its adverts two
    /// things at once.
    func badges(_ settings: Node, deviceUUIDs: Set<UUIDBytes>, anchors: [Anchor]) throws -> (UUIDBytes, Int)? {
        let map = settings.mapping
        let bitsNode = map?[Node("badgeEpochBits")]
        guard let node = map?[Node("badgeUUID")] else {
            if let bitsNode {
                throw fail(bitsNode, "settings: badgeEpochBits goes with badgeUUID (the rotating badges' UUID)")
            }
            return nil
        }
        let uuid = try self.uuid(node, "settings: badgeUUID", parent: settings.mark)
        if deviceUUIDs.contains(uuid) {
            throw fail(
                node,
                "settings: badgeUUID \(uuid) is also in deviceUUIDs: rotating badges need a UUID of their own"
            )
        }
        if let beacon = anchors.first(where: { $0.identity?.uuid == uuid }) {
            throw fail(
                node,
                "settings: badgeUUID \(uuid) is also fixed beacon \(beacon.key)'s: rotating badges need a UUID of their own"
            )
        }
        var bits = 10
        if let bitsNode { bits = Int(try bounded(bitsNode, "badgeEpochBits", 6...16)) }
        if let bitsNode, Double(bits) != (try number(bitsNode, "settings: badgeEpochBits", parent: bitsNode.mark)) {
            throw fail(bitsNode, "settings: badgeEpochBits takes a whole number (10: epochs of 1,024 s)")
        }
        return (uuid, bits)
    }

    /// `settings: pushServices: [fcm.googleapis.com, …]`: the only hosts Web Push goes to.
    func pushServices(_ settings: Node) throws -> Set<String>? {
        guard let node = settings.mapping?[Node("pushServices")] else { return nil }
        guard let items = node.sequence else {
            throw fail(node, "settings: pushServices must be a list of host names (like [fcm.googleapis.com])")
        }
        var hosts: Set<String> = []
        for item in items {
            let host = try string(item, "settings: pushServices: a host", parent: node.mark).lowercased()
            guard !host.contains("/"), !host.contains(":") || host == "::1", !host.contains("@"), !host.contains(" ")
            else {
                throw fail(
                    item,
                    "settings: pushServices takes host names (like fcm.googleapis.com), not '\(host.prefix(80))'"
                )
            }
            hosts.insert(host)
        }
        return hosts
    }

    func settings(_ node: Node) throws -> (RangingSettings, ExposureSettings, VerificationSettings) {
        let f = try fields(
            node,
            "settings",
            allowed: [
                "filter", "armaCoefficient", "filterWindow", "outlierClamp", "distanceModel", "pathLossExponent",
                "receiverOffset", "immediate", "near", "window", "lostAfter", "exposureRadius", "exposureWindow",
                "lookbackDays", "separation", "separationLikelihood", "minConfidence", "resultMaxAgeDays",
                "calibration", "positions", "review", "trustList", "guidance", "pushServices", "badgeUUID",
                "badgeEpochBits", "retentionDays", "wallLoss", "exposureChance",
            ]
        )
        var e = ExposureSettings()
        if let n = f["exposureRadius"] { e.radius = try bounded(n, "exposureRadius", 0.5...50) }
        if let n = f["exposureWindow"] { e.windowMinutes = try bounded(n, "exposureWindow", 0...120) }
        if let n = f["lookbackDays"] { e.lookbackDays = try bounded(n, "lookbackDays", 1...60) }
        if let n = f["retentionDays"] { e.retentionDays = try bounded(n, "retentionDays", 1...60) }
        if let n = f["wallLoss"] { e.wallLoss = try bounded(n, "wallLoss", ExposureSettings.wallLosses) }
        // Looking back further than the site keeps would find nothing there, quietly.
        if e.lookbackDays > e.retentionDays {
            let given = f["lookbackDays"] == nil ? " (the default)" : ""
            func days(_ d: Double) -> String { d == d.rounded() ? String(Int(d)) : String(d) }
            throw fail(
                f["lookbackDays"] ?? f["retentionDays"] ?? node,
                "settings: lookbackDays \(days(e.lookbackDays))\(given) looks back further than retentionDays \(days(e.retentionDays)) keeps: lower lookbackDays or raise retentionDays"
            )
        }
        if let n = f["separation"] {
            let text = try string(n, "settings: separation", parent: node.mark)
            guard ["sum", "possible", "geometric"].contains(text) else {
                throw fail(n, "settings: separation must be sum, possible or geometric, not '\(text)'")
            }
            e.separation = text
        }
        if let n = f["separationLikelihood"] { e.likelihood = try bounded(n, "separationLikelihood", 0.01...1) }
        if let n = f["exposureChance"] { e.chance = try bounded(n, "exposureChance", 0.01...1) }
        if let n = f["calibration"] {
            switch try string(n, "settings: calibration", parent: node.mark) {
            case "running": e.runningCalibration = true
            case "map": e.runningCalibration = false
            case let other: throw fail(n, "settings: calibration must be running or map, not '\(other)'")
            }
        }
        if let n = f["positions"] {
            switch try string(n, "settings: positions", parent: node.mark) {
            case "on": e.positions = true
            case "off": e.positions = false
            case let other: throw fail(n, "settings: positions must be on or off, not '\(other)'")
            }
        }
        var v = VerificationSettings()
        if let n = f["minConfidence"] { v.minConfidence = try bounded(n, "minConfidence", 0...100) }
        if let n = f["resultMaxAgeDays"] { v.maxAgeDays = Int(try bounded(n, "resultMaxAgeDays", 1...60)) }
        if let n = f["review"] {
            let text = try string(n, "settings: review", parent: node.mark)
            guard VerificationSettings.reviewModes.contains(text) else {
                throw fail(n, "settings: review must be none, doubtful or all, not '\(text)'")
            }
            v.review = text
        }
        if let n = f["trustList"] {
            v.trustListFile = try string(n, "settings: trustList", parent: node.mark)
            v.trustListLine = n.mark?.line
        }
        var r = RangingSettings()
        if let n = f["filter"] {
            let text = try string(n, "settings: filter", parent: node.mark)
            guard let kind = RSSIFilterKind(rawValue: text) else {
                throw fail(
                    n,
                    "settings: filter must be one of \(RSSIFilterKind.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            r.filter.kind = kind
        }
        if let n = f["armaCoefficient"] { r.filter.coefficient = try bounded(n, "armaCoefficient", 0.01...1) }
        if let n = f["filterWindow"] { r.filter.window = try bounded(n, "filterWindow", 1...300) }
        if let n = f["outlierClamp"] { r.filter.outlierClamp = try bounded(n, "outlierClamp", 0...100) }
        var exponent = 2.0
        if let n = f["pathLossExponent"] {
            exponent = try bounded(n, "pathLossExponent", Anchor.pathLossExponents)
            e.exponentGiven = true
        }
        r.model = .logDistance(exponent: exponent)
        if let n = f["distanceModel"] {
            switch try string(n, "settings: distanceModel", parent: node.mark) {
            case "log-distance": break
            case "altbeacon": r.model = .altBeaconCurve
            case let other: throw fail(n, "settings: distanceModel must be log-distance or altbeacon, not '\(other)'")
            }
        }
        if let n = f["receiverOffset"] { r.receiverOffset = try bounded(n, "receiverOffset", -40...40) }
        if let n = f["immediate"] { r.thresholds.immediate = try bounded(n, "immediate", 0.01...10) }
        if let n = f["near"] { r.thresholds.near = try bounded(n, "near", 0.1...50) }
        guard r.thresholds.immediate < r.thresholds.near else {
            throw fail(node, "settings: immediate must be less than near")
        }
        if let n = f["window"] { r.window = try bounded(n, "window", 1...3600) }
        if let n = f["lostAfter"] { r.lostAfter = try bounded(n, "lostAfter", 1...3600) }
        return (r, e, v)
    }

    func bounded(_ n: Node, _ name: String, _ range: ClosedRange<Double>) throws -> Double {
        let v = try number(n, "settings: \(name)", parent: n.mark)
        guard range.contains(v) else {
            throw fail(n, "settings: \(name) must be from \(range.lowerBound) to \(range.upperBound), not \(v)")
        }
        return v
    }
}

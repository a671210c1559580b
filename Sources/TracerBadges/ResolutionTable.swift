import Crypto

/// A badge as resolution knows it: its serial, the number the site gave it when it was issued
/// (unique in the site, stable: it keys a badge's ranging across its ids), and its key.
public struct BadgeKey: Sendable {
    public var serial: String
    public var number: UInt32
    public var key: SymmetricKey

    public init(serial: String, number: UInt32, key: SymmetricKey) {
        self.serial = serial
        self.number = number
        self.key = key
    }
}

/// Every badge's ids for the epochs around now (e−2 … e+2: a badge's clock without a network
/// drifts), to resolve an advert's major/minor to its badge in one dictionary lookup. Built off
/// the advert path, and again as epochs pass. An id no badge has is unknown; an id two badges
/// share in those epochs resolves to neither.
public struct ResolutionTable: Sendable {
    public enum Resolution: Sendable, Equatable {
        case badge(serial: String)
        case unknown
        case collision
    }

    /// The epoch the table is centred on, and K.
    public let epochStart: UInt32
    public let bits: Int
    /// major << 16 | minor → index into the badges, or -1 for a collision.
    private let ids: [UInt32: Int32]
    /// Each badge's `badge:SERIAL`, made once here rather than once an advert.
    public let deviceIDs: [String]
    /// Each badge's number (`BadgeKey.number`).
    public let numbers: [UInt32]
    /// The epochs (of the five) the table has ids for: all five from keys; from a kiosk's days,
    /// those its site server sent.
    public let epochsKnown: Int

    /// A table for `badges` centred on the epoch of `now`, `margin` epochs each side.
    public init(badges: [BadgeKey], now: Double, bits: Int = RotatingID.defaultBits, margin: Int = 2) {
        self.init(
            centre: RotatingID.epochStart(now, bits: bits),
            bits: bits,
            margin: margin,
            badges: badges.map { ($0.serial, $0.number) }
        ) { start in
            badges.map { b -> UInt32? in
                let id = RotatingID.id(key: b.key, epochStart: start, bits: bits)
                return UInt32(id.major) << 16 | UInt32(id.minor)
            }
        }
    }

    /// A table from days of ids a site server sent (a kiosk holds ids, not keys): the epochs
    /// the days cover.
    public init(days: [BadgeIDDay], now: Double, bits: Int = RotatingID.defaultBits, margin: Int = 2) {
        // One list of badges over the days (a badge issued or revoked between two days' versions
        // is in one and not the other).
        var index: [String: Int] = [:]
        var badges: [(serial: String, number: UInt32)] = []
        for day in days where day.bits == bits {
            for (serial, number) in zip(day.serials, day.numbers) where index[serial] == nil {
                index[serial] = badges.count
                badges.append((serial, number))
            }
        }
        let remap = days.map { day in day.serials.map { index[$0] ?? 0 } }
        self.init(centre: RotatingID.epochStart(now, bits: bits), bits: bits, margin: margin, badges: badges) { start in
            for (d, day) in days.enumerated() where day.bits == bits {
                guard let row = day.ids(ofEpoch: start) else { continue }
                // A badge missing from this day's list has no id in its epochs.
                var out = [UInt32?](repeating: nil, count: badges.count)
                for (i, id) in row.enumerated() { out[remap[d][i]] = id }
                return out
            }
            return nil
        }
    }

    /// `idsOfEpoch(start)` gives every badge's id in that epoch, in `badges`' order, or nil
    /// when the epoch is not known.
    init(
        centre: UInt32,
        bits: Int,
        margin: Int,
        badges: [(serial: String, number: UInt32)],
        idsOfEpoch: (UInt32) -> [UInt32?]?
    ) {
        epochStart = centre
        self.bits = bits
        var ids: [UInt32: Int32] = [:]
        ids.reserveCapacity(badges.count * (2 * margin + 1))
        var known = 0
        for step in -margin...margin {
            let start = Int64(centre) + Int64(step) << Int64(bits)
            guard start >= 0, start <= Int64(UInt32.max), let row = idsOfEpoch(UInt32(start)) else { continue }
            known += 1
            for (index, id) in row.enumerated() {
                guard let id else { continue }
                // A badge whose id repeats across its own epochs is still itself.
                if let other = ids[id], other != Int32(index) {
                    ids[id] = -1
                } else {
                    ids[id] = Int32(index)
                }
            }
        }
        self.ids = ids
        epochsKnown = known
        deviceIDs = badges.map { RotatingID.deviceID(serial: $0.serial) }
        numbers = badges.map(\.number)
    }

    /// The badge advertising `major`/`minor`, if exactly one does in the table's epochs.
    public func resolve(major: UInt16, minor: UInt16) -> Resolution {
        guard let index = index(major: major, minor: minor) else { return .unknown }
        return index < 0 ? .collision : .badge(serial: String(deviceIDs[Int(index)].dropFirst(6)))
    }

    /// The advert path's lookup: the badge's index (into `deviceIDs`, `numbers`), -1 for an id two
    /// badges share, nil for one no badge has.
    @inline(__always)
    public func index(major: UInt16, minor: UInt16) -> Int32? {
        ids[UInt32(major) << 16 | UInt32(minor)]
    }

    /// Ids in the table (each badge's, for each epoch, less those shared).
    public var count: Int { ids.count }

    /// Badges in the table.
    public var badges: Int { deviceIDs.count }
}

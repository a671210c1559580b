import Synchronization

/// What a daemon resolves badges with, and the tables it has built: the keys (a store that
/// holds the site's badge key: the site server, or a simulated site) or the days of ids a kiosk
/// holds. A table is built once an epoch (the first advert of an epoch asks; a live daemon asks
/// ahead, a minute before the epoch starts, so that no advert waits) and kept for the epochs
/// around now.
public final class BadgeResolver: Sendable {
    public enum Material: Sendable {
        case keys([BadgeKey], version: Int64)
        case days([BadgeIDDay])
    }

    public let bits: Int
    struct State {
        var material: Material
        var tables: [UInt32: ResolutionTable] = [:]
        var revision = 0
    }
    private let state: Mutex<State>

    public init(_ material: Material, bits: Int = RotatingID.defaultBits) {
        self.bits = bits
        state = Mutex(State(material: material))
    }

    /// New material (a badge issued or revoked, the kiosk's next days): tables are built again
    /// from it. With `around`, the table of that time's epoch is built first, here, and swapped in
    /// with the material: a live daemon that sees the new revision finds its table ready.
    public func replace(_ material: Material, around time: Double? = nil) {
        let ready = time.map { (RotatingID.epochStart($0, bits: bits), Self.build(material, at: $0, bits: bits)) }
        state.withLock {
            $0.material = material
            $0.tables.removeAll()
            if let (epoch, table) = ready { $0.tables[epoch] = table }
            $0.revision += 1
        }
    }

    static func build(_ material: Material, at time: Double, bits: Int) -> ResolutionTable {
        switch material {
        case .keys(let badges, _): ResolutionTable(badges: badges, now: time, bits: bits)
        case .days(let days): ResolutionTable(days: days, now: time, bits: bits)
        }
    }

    /// Changes each time the material does: a daemon holding a table asks again when it moves.
    public var revision: Int { state.withLock { $0.revision } }

    /// The table for the epoch of `time`: built now unless it was before (building at 10,000
    /// badges takes about 10 ms from keys; `Tools/bench/badges`).
    public func table(at time: Double) -> ResolutionTable {
        let epoch = RotatingID.epochStart(time, bits: bits)
        let (material, cached, revision) = state.withLock { ($0.material, $0.tables[epoch], $0.revision) }
        if let cached { return cached }
        let table = Self.build(material, at: time, bits: bits)
        state.withLock { s in
            // Not kept when the material changed while it was built.
            guard s.revision == revision else { return }
            s.tables[epoch] = table
            // The epochs around this one only.
            let span = UInt32(4) << UInt32(bits)
            s.tables = s.tables.filter { $0.key + span >= epoch && $0.key <= epoch + span }
        }
        return table
    }

    /// The days held (a kiosk's), for its status.
    public var days: [UInt32] {
        state.withLock { s in
            if case .days(let days) = s.material { return days.map(\.day).sorted() }
            return []
        }
    }
}

import Crypto
import Foundation
import TracerBadges
import TracerRanging
import TracerSite

/// A simulation error: what is wrong with the request.
public struct SimulationError: Error, CustomStringConvertible, Sendable {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}

/// A site with people moving between its rooms, the adverts each kiosk hears, and the truth:
/// where everyone really was and who was really near whom.
public struct Simulation: Sendable {
    public let site: Site
    public let parameters: SimulationParameters
    public let people: [Person]
    /// Each person's segments, in time order.
    public let segments: [[Segment]]
    /// The site's kiosks (the receivers), in map order.
    public let kiosks: [Anchor]
    let radio: Radio

    /// With `badges`, person i wears badge i, rotating (the site must have `settings: badgeUUID`).
    public init(site: Site, parameters: SimulationParameters, badges: [BadgeKey]? = nil) throws {
        guard parameters.people >= 1, parameters.people <= 100_000 else {
            throw SimulationError("--people must be from 1 to 100000, not \(parameters.people)")
        }
        guard parameters.hours > 0, parameters.hours <= 24 * 14 else {
            throw SimulationError("--hours must be more than 0 and at most 336, not \(parameters.hours)")
        }
        guard parameters.noise >= 0, parameters.noise <= 30 else {
            throw SimulationError("--noise must be from 0 to 30 dB, not \(parameters.noise)")
        }
        guard parameters.loss >= 0, parameters.loss < 1 else {
            throw SimulationError("--loss must be at least 0 and below 1, not \(parameters.loss)")
        }
        let kiosks = site.anchors.filter { $0.kind == .kiosk }
        guard !kiosks.isEmpty else {
            throw SimulationError("\(site.file): the site has no kiosk to hear anyone")
        }
        if parameters.phones {
            guard site.anchors.contains(where: { $0.kind == .beacon }) else {
                throw SimulationError("\(site.file): the site has no fixed beacon for phones to hear")
            }
            guard parameters.beaconInterval > 0 else {
                throw SimulationError("phones hear the fixed beacons: their advert interval must be above 0")
            }
        }
        if let badges {
            guard site.badgeUUID != nil else {
                throw SimulationError("\(site.file): rotating badges need settings: badgeUUID in the map")
            }
            guard badges.count >= parameters.people else {
                throw SimulationError(
                    "\(parameters.people) people need as many badges: the store has \(badges.count) (tracer badge issue --count \(parameters.people - badges.count))"
                )
            }
        }
        self.site = site
        self.parameters = parameters
        self.kiosks = kiosks
        radio = Radio(site: site, parameters: parameters)

        var rng = SeededGenerator(seed: parameters.seed, stream: "people")
        let uuids =
            (site.deviceUUIDOrder.isEmpty
            ? site.deviceUUIDs.sorted { $0.description < $1.description } : site.deviceUUIDOrder).map(\.description)
        var people: [Person] = []
        for i in 0..<parameters.people {
            let r = rng.unit()
            let role: Person.Role = r < 0.1 ? .visitor : r < 0.4 ? .staff : .student
            let uuid = role == .visitor && uuids.count > 1 ? uuids[1] : uuids[0]
            let major: UInt16 = role == .student ? 1 : role == .staff ? 2 : 3
            let interval =
                (rng.uniform(parameters.badgeIntervals.lowerBound, parameters.badgeIntervals.upperBound) * 100)
                .rounded() / 100
            var bytes = (0..<6).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            bytes[0] |= 0xC0  // a static random address, as badges use
            people.append(
                Person(
                    index: i,
                    role: role,
                    uuid: uuid,
                    major: major,
                    minor: UInt16(i + 1),
                    interval: interval,
                    phase: rng.uniform(0, interval),
                    offset: parameters.badgeOffsetBound.map { rng.uniform(-$0, $0) }
                        ?? rng.gaussian(parameters.badgeSpread),
                    address: bytes.map { String(format: "%02X", $0) }.joined(separator: ":")
                )
            )
            if let badges, let uuid = site.badgeUUID {
                people[i].badge = badges[i]
                people[i].uuid = uuid.description
            }
        }
        self.people = people
        var planner = Planner(site: site, parameters: parameters)
        segments = planner.plan(people: people)
    }

    /// One advert a kiosk heard.
    public struct Heard: Sendable {
        public var time: Double
        /// A person's index, or −1 − a fixed beacon's index among the site's anchors.
        public var emitter: Int32
        public var rssi: Int16
    }

    func roomIndex(_ key: String) -> Int {
        site.rooms.firstIndex { $0.key == key } ?? 0
    }

    /// Everything one kiosk hears, in time order. Deterministic for the seed and the kiosk.
    public func heard(by kiosk: Anchor) -> [Heard] {
        var rng = SeededGenerator(seed: parameters.seed, stream: "radio:\(kiosk.key)")
        let kioskRoom = roomIndex(kiosk.room)
        let building = site.rooms[kioskRoom].building
        let sigma = parameters.noise
        let loss = parameters.kioskLoss[kiosk.key] ?? parameters.loss
        var noise = Noise(sigma: sigma, drift: parameters.drift, seconds: parameters.driftSeconds)
        var out: [Heard] = []
        let remounted = parameters.remounts[kiosk.key] != nil
        func hear(_ t: Double, _ emitter: Int32, _ mean: Double) {
            let slow = noise.slow(at: t, &rng)
            if loss > 0, rng.chance(loss) { return }
            let shift = remounted ? parameters.remount(kiosk.key, at: t) : 0
            let rssi = (mean + shift + slow + rng.gaussian(noise.fast)).rounded()
            guard rssi >= parameters.sensitivity, rssi < 0 else { return }
            out.append(Heard(time: t, emitter: emitter, rssi: Int16(rssi)))
        }
        for person in people {
            noise.restart()
            let power = Double(person.measuredPower) + person.offset
            for s in segments[person.index] {
                guard let room = s.room, site.rooms[room].building == building else { continue }
                let mean = radio.meanRSSI(
                    power: power,
                    at: s.position,
                    room: room,
                    facing: s.facing,
                    kiosk: kiosk,
                    kioskRoom: kioskRoom
                )
                guard mean + 3 * sigma >= parameters.sensitivity else { continue }
                var k = ((s.from - person.phase) / person.interval).rounded(.up)
                while true {
                    // Each advert a few milliseconds late, as BLE's advertising delay has it.
                    let t = person.phase + k * person.interval + rng.uniform(0, 0.01)
                    k += 1
                    if t >= s.to { break }
                    if t < s.from { continue }
                    hear(t, Int32(person.index), mean)
                }
            }
        }
        if parameters.beaconInterval > 0 {
            // A kiosk's calibration references: the fixed beacons in its own room.
            for (i, b) in site.anchors.enumerated() where b.kind == .beacon && b.room == kiosk.room {
                let room = roomIndex(b.room)
                let power = Double(b.measuredPower ?? -59)
                let mean = radio.meanRSSI(
                    power: power,
                    at: b.position,
                    room: room,
                    facing: nil,
                    kiosk: kiosk,
                    kioskRoom: kioskRoom
                )
                guard mean + 3 * sigma >= parameters.sensitivity else { continue }
                noise.restart()
                var t = parameters.start + rng.uniform(0, parameters.beaconInterval)
                while t < parameters.end {
                    hear(t, Int32(-1 - i), mean)
                    t += parameters.beaconInterval + rng.uniform(0, 0.01)
                }
            }
        }
        if parameters.kioskInterval > 0 {
            // The other advertising kiosks, each every `kioskInterval` over the run.
            let interval = parameters.kioskInterval
            for (emitter, key, mean) in kioskEmitters(heardBy: kiosk, kioskRoom: kioskRoom) {
                guard mean + 3 * sigma >= parameters.sensitivity else { continue }
                noise.restart()
                var t = parameters.start + rng.uniform(0, interval)
                while t < parameters.end {
                    hear(t, emitter, mean + parameters.remount(key, at: t))
                    t += interval + rng.uniform(0, 0.01)
                }
            }
        }
        out.sort { $0.time < $1.time }
        return out
    }

    /// The other advertising kiosks of `kiosk`'s building as it hears them: each one's emitter
    /// number, key and mean RSSI — the model's, with its transmit error and the pair's own
    /// fading (re-mounting is added per advert).
    private func kioskEmitters(heardBy kiosk: Anchor, kioskRoom: Int) -> [(Int32, String, Double)] {
        site.anchors.enumerated().compactMap { i, other in
            guard other.kind == .kiosk, other.identity != nil, other.key != kiosk.key else { return nil }
            let room = roomIndex(other.room)
            guard site.rooms[room].building == site.rooms[kioskRoom].building else { return nil }
            let pair = [kiosk.key, other.key].sorted().joined(separator: "|")
            var fading = SeededGenerator(seed: parameters.seed, stream: "fading:\(pair)")
            let mean =
                radio.meanRSSI(
                    power: Double(other.measuredPower ?? -59) + (parameters.transmitErrors[other.key] ?? 0),
                    at: other.position,
                    room: room,
                    facing: nil,
                    kiosk: kiosk,
                    kioskRoom: kioskRoom
                ) + fading.gaussian(parameters.linkFading)
            return (Int32(-1 - i), other.key, mean)
        }
    }

    /// Everything the phone of one person hears of the site's fixed beacons (scanner mode), in
    /// time order: each beacon's adverts every `beaconInterval` while the person is in its
    /// building, at the kiosk model's mean with the roles swapped (the beacon transmits; the phone,
    /// carried like a badge, receives, its wearer's body shadowing it from beacons behind), plus
    /// the phone's own offset (the person's, as for their badge). Deterministic for the seed and
    /// the person.
    public func heard(byPhoneOf person: Person) -> [Heard] {
        var rng = SeededGenerator(seed: parameters.seed, stream: "phone:\(person.index)")
        let sigma = parameters.noise
        let interval = parameters.beaconInterval
        let beacons = site.anchors.enumerated().filter { $0.element.kind == .beacon }
        let phases = beacons.map { _ in rng.uniform(0, interval) }
        var out: [Heard] = []
        for s in segments[person.index] {
            guard let room = s.room else { continue }
            for (j, (i, beacon)) in beacons.enumerated() {
                let beaconRoom = roomIndex(beacon.room)
                guard site.rooms[beaconRoom].building == site.rooms[room].building else { continue }
                let mean =
                    radio.meanRSSI(
                        power: Double(beacon.measuredPower ?? -59),
                        at: s.position,
                        room: room,
                        facing: s.facing,
                        kiosk: beacon,
                        kioskRoom: beaconRoom
                    ) + person.offset
                guard mean + 3 * sigma >= parameters.sensitivity else { continue }
                var k = ((s.from - phases[j]) / interval).rounded(.up)
                while true {
                    let t = phases[j] + k * interval + rng.uniform(0, 0.01)
                    k += 1
                    if t >= s.to { break }
                    if t < s.from { continue }
                    if parameters.loss > 0, rng.chance(parameters.loss) { continue }
                    let rssi = (mean + rng.gaussian(sigma)).rounded()
                    guard rssi >= parameters.sensitivity, rssi < 0 else { continue }
                    out.append(Heard(time: t, emitter: Int32(-1 - i), rssi: Int16(rssi)))
                }
            }
        }
        out.sort { $0.time < $1.time }
        return out
    }

    /// The iBeacon payload after the company id, as hex: type, length, UUID, major, minor, power.
    static func payload(uuid: String, major: UInt16, minor: UInt16, power: Int) -> String {
        "0215" + uuid.replacingOccurrences(of: "-", with: "").lowercased()
            + String(format: "%04x%04x%02x", major, minor, UInt8(truncatingIfNeeded: power))
    }

    /// Writes one kiosk's replay in docs/design.md's format; returns the adverts written.
    @discardableResult
    public func writeReplay(for kiosk: Anchor, to path: String) throws -> Int {
        try writeReplay(heard(by: kiosk), to: path)
    }

    /// Writes what one person's phone hears (`heard(byPhoneOf:)`) as a replay; returns the
    /// adverts written.
    @discardableResult
    public func writePhoneReplay(for person: Person, to path: String) throws -> Int {
        try writeReplay(heard(byPhoneOf: person), to: path)
    }

    func writeReplay(_ heard: [Heard], to path: String) throws -> Int {
        // Each emitter's line, but for the time and the RSSI.
        var beaconAddress: [Int: String] = [:]
        var rng = SeededGenerator(seed: parameters.seed, stream: "beacon-addresses")
        for (i, a) in site.anchors.enumerated() where a.kind == .beacon || a.identity != nil {
            beaconAddress[i] = (0..<6).map { _ in String(format: "%02X", UInt8(truncatingIfNeeded: rng.next())) }
                .joined(separator: ":")
        }
        func tail(_ address: String, _ payload: String) -> ([UInt8], [UInt8]) {
            (
                Array(", \"address\": \"\(address)\", \"rssi\": ".utf8),
                Array(", \"manufacturerData\": {\"76\": \"\(payload)\"}}\n".utf8)
            )
        }
        var personParts = people.map {
            tail($0.address, Self.payload(uuid: $0.uuid, major: $0.major, minor: $0.minor, power: $0.measuredPower))
        }
        var beaconParts: [Int: ([UInt8], [UInt8])] = [:]
        for (i, a) in site.anchors.enumerated() {
            guard let id = a.identity else { continue }
            beaconParts[i] = tail(
                beaconAddress[i]!,
                Self.payload(uuid: id.uuid.description, major: id.major, minor: id.minor, power: a.measuredPower ?? -59)
            )
        }
        guard FileManager.default.createFile(atPath: path, contents: nil),
            let handle = FileHandle(forWritingAtPath: path)
        else { throw SimulationError("cannot write \(path)") }
        defer { try? handle.close() }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(1 << 20)
        let head = Array("{\"t\": ".utf8)
        // A rotating badge's advert: its id and its address change with each epoch.
        var epochOf = [UInt32?](repeating: nil, count: people.count)
        let bits = site.badgeEpochBits
        for h in heard {
            if h.emitter >= 0, let badge = people[Int(h.emitter)].badge {
                let i = Int(h.emitter)
                let epoch = RotatingID.epochStart(h.time, bits: bits)
                if epochOf[i] != epoch {
                    epochOf[i] = epoch
                    personParts[i] = Self.rotating(people[i], badge, epoch: epoch, bits: bits, tail: tail)
                }
            }
            let parts = h.emitter >= 0 ? personParts[Int(h.emitter)] : beaconParts[Int(-1 - h.emitter)]!
            buffer += head
            let ms = Int64((h.time * 1000).rounded())
            Self.appendDecimal(ms / 1000, to: &buffer)
            buffer.append(UInt8(ascii: "."))
            let frac = Int(ms % 1000)
            buffer.append(UInt8(48 + frac / 100))
            buffer.append(UInt8(48 + frac / 10 % 10))
            buffer.append(UInt8(48 + frac % 10))
            buffer += parts.0
            Self.appendDecimal(Int64(h.rssi), to: &buffer)
            buffer += parts.1
            if buffer.count >= 1 << 20 {
                try handle.write(contentsOf: buffer)
                buffer.removeAll(keepingCapacity: true)
            }
        }
        try handle.write(contentsOf: buffer)
        return heard.count
    }

    /// A rotating badge's line parts in one epoch: its id (docs/design.md's construction) and an
    /// address drawn from it (a non-resolvable private address changes with the id, as a badge
    /// that rotates both would: keeping one address would link the ids for any listener).
    static func rotating(
        _ person: Person,
        _ badge: BadgeKey,
        epoch: UInt32,
        bits: Int,
        tail: (String, String) -> ([UInt8], [UInt8])
    ) -> ([UInt8], [UInt8]) {
        let id = RotatingID.id(key: badge.key, epochStart: epoch, bits: bits)
        var bytes = Array(SHA256.hash(data: Array("address \(badge.serial) \(epoch)".utf8)).prefix(6))
        bytes[0] &= 0x3F  // the two top bits 00: a non-resolvable private address
        let address = bytes.map { String(format: "%02X", $0) }.joined(separator: ":")
        return tail(address, payload(uuid: person.uuid, major: id.major, minor: id.minor, power: person.measuredPower))
    }

    static func appendDecimal(_ value: Int64, to buffer: inout [UInt8]) {
        if value < 0 { buffer.append(UInt8(ascii: "-")) }
        var v = value.magnitude
        var digits: [UInt8] = []
        repeat {
            digits.append(UInt8(48 + v % 10))
            v /= 10
        } while v > 0
        buffer += digits.reversed()
    }
}

import Foundation
import TracerSite

extension Simulation {
    /// Everyone's segments in the truth's terms.
    public var truthSegments: [TruthSegment] {
        segments.flatMap { list in
            list.map { s in
                TruthSegment(
                    deviceID: people[s.person].deviceID,
                    room: s.room.map { site.rooms[$0].key },
                    from: s.from,
                    to: s.to,
                    position: s.position
                )
            }
        }
    }

    /// The true co-location pairs at the site's kiosk rooms.
    public func truePairs(radius: Double = 6, window: Double = 300) -> [TruthPair] {
        truePairs(truthSegments, radius: radius, window: window)
    }

    func truePairs(_ segments: [TruthSegment], radius: Double, window: Double) -> [TruthPair] {
        GroundTruth.pairs(
            segments,
            rooms: Set(kiosks.map(\.room)),
            radius: radius,
            window: window
        )
    }

    /// What `write` wrote.
    public struct Written: Sendable {
        /// Kiosks' replays.
        public var replays: Int
        /// Phones' replays (`SimulationParameters.phones`).
        public var phones: Int
        public var adverts: Int
        public var segments: Int
        public var pairs: Int
    }

    /// Writes the replays (`replays/KIOSK.jsonl`, and `phones/phone-N.jsonl` for person N with
    /// `phones`) and the truth (`truth/*.jsonl`, `manifest.json`) into a directory, two replays
    /// at a time; `progress` hears of each replay done.
    @discardableResult
    public func write(
        to directory: String,
        mapPath: String,
        radius: Double = 6,
        window: Double = 300,
        progress: @Sendable (_ done: Int, _ total: Int, _ adverts: Int) -> Void = { _, _, _ in }
    ) throws -> Written {
        let fm = FileManager.default
        let replays = (directory as NSString).appendingPathComponent("replays")
        let truth = (directory as NSString).appendingPathComponent("truth")
        do {
            try fm.createDirectory(atPath: replays, withIntermediateDirectories: true)
            try fm.createDirectory(atPath: truth, withIntermediateDirectories: true)
        } catch {
            throw SimulationError("cannot create \(directory): \(error.localizedDescription)")
        }

        // Truth first: people, positions, pairs.
        try Self.writeLines(
            people.map {
                [
                    "deviceId": $0.deviceID, "role": $0.role.rawValue,
                    "intervalMs": Int(($0.interval * 1000).rounded()),
                    "offsetDb": Self.round($0.offset, 1),
                ]
            },
            to: (truth as NSString).appendingPathComponent("people.jsonl")
        )
        let positions = truthSegments
        try Self.writeLines(
            positions.map {
                [
                    "deviceId": $0.deviceID, "room": $0.room ?? NSNull(), "from": Self.round($0.from, 3),
                    "to": Self.round($0.to, 3), "x": Self.round($0.position.x, 2), "y": Self.round($0.position.y, 2),
                ]
            },
            to: (truth as NSString).appendingPathComponent("positions.jsonl")
        )
        let pairs = truePairs(positions, radius: radius, window: window)
        try Self.writeLines(
            pairs.map {
                [
                    "a": $0.a, "b": $0.b, "room": $0.room, "from": Self.round($0.from, 3), "to": Self.round($0.to, 3),
                    "closest": Self.round($0.closest, 2),
                ]
            },
            to: (truth as NSString).appendingPathComponent("pairs.jsonl")
        )

        // Calibration truth per kiosk, in docs/design.md's format: the spans in which a badge sat still
        // in the kiosk's room, at its true distance (for `tracer calibrate --truth`).
        let calibration = (truth as NSString).appendingPathComponent("calibration")
        try? fm.createDirectory(atPath: calibration, withIntermediateDirectories: true)
        for kiosk in kiosks {
            let room = roomIndex(kiosk.room)
            var spans: [[String: Any]] = []
            for list in segments {
                for seg in list where seg.room == room && seg.to - seg.from >= 60 {
                    spans.append([
                        "deviceId": people[seg.person].deviceID, "from": Self.round(seg.from, 3),
                        "to": Self.round(seg.to, 3),
                        "distance": Self.round(Radio.range(seg.position, kiosk.position), 2),
                    ])
                }
            }
            spans.sort { ($0["from"] as! Double) < ($1["from"] as! Double) }
            try Self.writeLines(spans, to: (calibration as NSString).appendingPathComponent("\(kiosk.key).jsonl"))
        }

        // The replays, two at a time (the machine this was written for has two cores): the
        // kiosks', then the phones'.
        let phones = parameters.phones ? people : []
        if !phones.isEmpty {
            do {
                try fm.createDirectory(
                    atPath: (directory as NSString).appendingPathComponent("phones"),
                    withIntermediateDirectories: true
                )
            } catch {
                throw SimulationError("cannot create \(directory)/phones: \(error.localizedDescription)")
            }
        }
        @Sendable func phoneReplay(_ person: Person) -> String { "phones/phone-\(person.index + 1).jsonl" }
        let lock = NSLock()
        let jobs = kiosks.count + phones.count
        nonisolated(unsafe) var counts = Array(repeating: 0, count: jobs)
        nonisolated(unsafe) var failure: (any Error)?
        nonisolated(unsafe) var done = 0
        nonisolated(unsafe) var total = 0
        let kiosks = self.kiosks
        DispatchQueue.concurrentPerform(iterations: jobs) { i in
            do {
                let n =
                    i < kiosks.count
                    ? try writeReplay(
                        for: kiosks[i],
                        to: (replays as NSString).appendingPathComponent("\(kiosks[i].key).jsonl")
                    )
                    : try writePhoneReplay(
                        for: phones[i - kiosks.count],
                        to: (directory as NSString).appendingPathComponent(phoneReplay(phones[i - kiosks.count]))
                    )
                lock.lock()
                counts[i] = n
                done += 1
                total += n
                progress(done, jobs, total)
                lock.unlock()
            } catch {
                lock.lock()
                failure = error
                lock.unlock()
            }
        }
        if let failure { throw failure }

        var manifest: [String: Any] = [
            "site": site.name, "map": mapPath, "seed": NSNumber(value: parameters.seed), "people": parameters.people,
            "hours": parameters.hours, "start": parameters.start, "end": parameters.end, "noise": parameters.noise,
            "loss": parameters.loss, "shadow": parameters.shadow, "wallLoss": parameters.wallLoss,
            "exponent": radio.exponent, "radius": radius, "window": window, "truePairs": pairs.count,
            "drift": parameters.drift, "driftSeconds": parameters.driftSeconds,
            "badgeIntervals": [parameters.badgeIntervals.lowerBound, parameters.badgeIntervals.upperBound],
            "movement": parameters.movement, "kioskInterval": parameters.kioskInterval,
            "linkFading": parameters.linkFading,
            "kiosks": kiosks.enumerated().map { i, k in
                [
                    "anchor": k.key, "room": k.room, "replay": "replays/\(k.key).jsonl", "adverts": counts[i],
                    "receiverError": parameters.receiverErrors[k.key] ?? 0,
                    "transmitError": parameters.transmitErrors[k.key] ?? 0,
                    "remount": parameters.remounts[k.key].map { ["at": $0.at, "dB": $0.dB] } ?? NSNull(),
                    "loss": parameters.kioskLoss[k.key] ?? parameters.loss,
                ]
            },
        ]
        if !phones.isEmpty {
            manifest["phones"] = phones.enumerated().map { j, person in
                ["device": person.deviceID, "replay": phoneReplay(person), "adverts": counts[kiosks.count + j]]
            }
        }
        let data = try JSONSerialization.data(withJSONObject: manifest, options: [.prettyPrinted, .sortedKeys])
        guard
            fm.createFile(
                atPath: (directory as NSString).appendingPathComponent("manifest.json"),
                contents: data + [10]
            )
        else { throw SimulationError("cannot write \(directory)/manifest.json") }
        return Written(
            replays: kiosks.count,
            phones: phones.count,
            adverts: total,
            segments: positions.count,
            pairs: pairs.count
        )
    }

    static func round(_ x: Double, _ places: Int) -> Double {
        let f = pow(10, Double(places))
        return (x * f).rounded() / f
    }

    static func writeLines(_ objects: [[String: Any]], to path: String) throws {
        var data = Data()
        for o in objects {
            data += try JSONSerialization.data(withJSONObject: o, options: [.sortedKeys])
            data.append(10)
        }
        guard FileManager.default.createFile(atPath: path, contents: data) else {
            throw SimulationError("cannot write \(path)")
        }
    }
}

extension GroundTruth {
    /// Reads what `Simulation.write` wrote; errors name the file and line.
    public static func load(directory: String) throws -> GroundTruth {
        let manifestPath = (directory as NSString).appendingPathComponent("manifest.json")
        guard let data = FileManager.default.contents(atPath: manifestPath) else {
            throw SimulationError("\(manifestPath): not found (is \(directory) a tracer simulate --out directory?)")
        }
        guard let m = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw SimulationError("\(manifestPath): not a JSON object")
        }
        func number(_ key: String) throws -> Double {
            guard let v = m[key] as? NSNumber else { throw SimulationError("\(manifestPath): no number '\(key)'") }
            return v.doubleValue
        }
        let kiosks = (m["kiosks"] as? [[String: Any]] ?? []).compactMap { k -> Kiosk? in
            guard let a = k["anchor"] as? String, let r = k["room"] as? String, let p = k["replay"] as? String else {
                return nil
            }
            return Kiosk(anchor: a, room: r, replay: p, adverts: (k["adverts"] as? NSNumber)?.intValue ?? 0)
        }
        let truth = (directory as NSString).appendingPathComponent("truth")
        var roles: [String: String] = [:]
        for (o, _) in try lines((truth as NSString).appendingPathComponent("people.jsonl")) {
            if let d = o["deviceId"] as? String { roles[d] = o["role"] as? String ?? "" }
        }
        var segments: [String: [TruthSegment]] = [:]
        let positions = (truth as NSString).appendingPathComponent("positions.jsonl")
        for (o, line) in try lines(positions) {
            guard let d = o["deviceId"] as? String, let from = (o["from"] as? NSNumber)?.doubleValue,
                let to = (o["to"] as? NSNumber)?.doubleValue, let x = (o["x"] as? NSNumber)?.doubleValue,
                let y = (o["y"] as? NSNumber)?.doubleValue
            else { throw SimulationError("\(positions):\(line): needs deviceId, from, to, x and y") }
            segments[d, default: []].append(
                TruthSegment(deviceID: d, room: o["room"] as? String, from: from, to: to, position: Point(x, y))
            )
        }
        for k in segments.keys { segments[k]!.sort { $0.from < $1.from } }
        var pairs: [TruthPair] = []
        let pairsPath = (truth as NSString).appendingPathComponent("pairs.jsonl")
        for (o, line) in try lines(pairsPath) {
            guard let a = o["a"] as? String, let b = o["b"] as? String, let room = o["room"] as? String,
                let from = (o["from"] as? NSNumber)?.doubleValue, let to = (o["to"] as? NSNumber)?.doubleValue
            else { throw SimulationError("\(pairsPath):\(line): needs a, b, room, from and to") }
            pairs.append(
                TruthPair(
                    a: a,
                    b: b,
                    room: room,
                    from: from,
                    to: to,
                    closest: (o["closest"] as? NSNumber)?.doubleValue ?? 0
                )
            )
        }
        return GroundTruth(
            map: m["map"] as? String ?? "",
            seed: (m["seed"] as? NSNumber)?.uint64Value ?? 0,
            start: try number("start"),
            end: try number("end"),
            noise: try number("noise"),
            loss: try number("loss"),
            radius: try number("radius"),
            window: try number("window"),
            kiosks: kiosks,
            roles: roles,
            segments: segments,
            pairs: pairs
        )
    }

    static func lines(_ path: String) throws -> [([String: Any], Int)] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SimulationError("\(path): not found")
        }
        var out: [([String: Any], Int)] = []
        for (i, line) in data.split(separator: 10, omittingEmptySubsequences: false).enumerated() where !line.isEmpty {
            guard let o = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] else {
                throw SimulationError("\(path):\(i + 1): not a JSON object")
            }
            out.append((o, i + 1))
        }
        return out
    }
}

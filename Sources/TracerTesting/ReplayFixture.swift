import Foundation
import TracerStore

/// Writes replay files (docs/design.md's format) with known ground truth, for tests and demos.
public struct ReplayFixture {
    /// A badge that stays at one distance from the receiver for a while.
    public struct Badge: Sendable {
        public var uuid: String
        public var major: UInt16
        public var minor: UInt16
        public var address: String
        public var distance: Double
        public var from: Double
        public var to: Double
        public var measuredPower: Int8 = -59

        public init(
            uuid: String,
            major: UInt16,
            minor: UInt16,
            address: String,
            distance: Double,
            from: Double,
            to: Double
        ) {
            self.uuid = uuid
            self.major = major
            self.minor = minor
            self.address = address
            self.distance = distance
            self.from = from
            self.to = to
        }

        public var deviceID: String { "\(uuid.lowercased()):\(major):\(minor)" }
    }

    public var badges: [Badge] = []
    /// Adverts per second per badge.
    public var rate: Double = 2
    /// Gaussian RSSI noise σ (dB).
    public var noise: Double = 2
    public var pathLossExponent: Double = 2
    /// Added to every reading: a receiver that hears weaker (negative) or stronger than adverts claim.
    public var receiverBias: Double = 0
    public var seed: UInt64 = 1
    /// Extra lines: another company's advert every second, and one line that is not JSON.
    public var clutter = true

    public init() {}

    /// iBeacon manufacturer data after the company id, as hex.
    public static func payload(uuid: String, major: UInt16, minor: UInt16, power: Int8) -> String {
        let u = uuid.replacingOccurrences(of: "-", with: "").lowercased()
        return "0215" + u + String(format: "%04x%04x%02x", major, minor, UInt8(bitPattern: power))
    }

    /// The lines, in time order.
    public func lines() -> [String] {
        var g = SplitMix64(seed: seed)
        var events: [(Double, String)] = []
        for b in badges {
            let data = Self.payload(uuid: b.uuid, major: b.major, minor: b.minor, power: b.measuredPower)
            // Counted in steps, not summed: 60 s at 10 Hz is 600 adverts, not 601.
            for k in 0..<Int(((b.to - b.from) * rate).rounded()) {
                let t = b.from + Double(k) / rate
                let u1 = max(Double(g.next() % 1_000_000) / 1_000_000, 1e-9)
                let u2 = Double(g.next() % 1_000_000) / 1_000_000
                let n = noise * sqrt(-2 * log(u1)) * cos(2 * .pi * u2)
                let rssi = Int(
                    (Double(b.measuredPower) + receiverBias - 10 * pathLossExponent * log10(b.distance) + n).rounded()
                )
                events.append(
                    (
                        t,
                        #"{"t": \#(t), "address": "\#(b.address)", "rssi": \#(rssi), "manufacturerData": {"76": "\#(data)"}}"#
                    )
                )
            }
        }
        if clutter, let start = badges.map(\.from).min(), let end = badges.map(\.to).max() {
            var t = start
            while t < end {
                events.append(
                    (
                        t + 0.01,
                        #"{"t": \#(t + 0.01), "address": "11:22:33:44:55:66", "rssi": -70, "manufacturerData": {"89": "0102"}}"#
                    )
                )
                t += 1
            }
            events.append((start + 0.02, "this line is not an advert"))
        }
        return events.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// Writes the file.
    public func write(to path: String) throws {
        try (lines().joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }
}

extension ReplayFixture.Badge {
    /// The example campus's three lab beacons (b-lab-door, b-lab-bench, b-lab-shelf) heard by
    /// kiosk-lab at their plan distances, 7.5, 7.5 and 2.5 m: its calibration references.
    public static func exampleLabBeacons(from: Double, to: Double) -> [Self] {
        [(7, 7.5), (8, 7.5), (13, 2.5)].map { minor, d in
            Self(
                uuid: "e2c56db5-dffb-48d2-b060-d0f5a71096e0",
                major: 2,
                minor: UInt16(minor),
                address: "BB:00:00:00:00:\(minor)",
                distance: d,
                from: from,
                to: to
            )
        }
    }
}

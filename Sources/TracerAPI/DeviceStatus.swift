import TracerStore

extension Responses {
    /// One exposure, as a device and the health team are told of it (`Exposure` in the document).
    public struct Exposure: Codable, Sendable, Equatable {
        /// The least and most the two could have been apart, metres.
        public struct Separation: Codable, Sendable, Equatable {
            public var min: Double
            public var max: Double

            public init(min: Double, max: Double) {
                self.min = min
                self.max = max
            }
        }

        public var deviceId: String
        public var reportId: String
        public var beaconKey: String
        /// When they were together, RFC 3339 with milliseconds (null when unknown).
        @Null public var from: String?
        @Null public var to: String?
        public var separation: Separation
        public var overlapSeconds: Int64
        /// The chance that the two were within the radius (the pair decision's), where it decided.
        public var chance: Double?

        public init(
            deviceId: String,
            reportId: String,
            beaconKey: String,
            from: String?,
            to: String?,
            separation: Separation,
            overlapSeconds: Int64,
            chance: Double? = nil
        ) {
            self.deviceId = deviceId
            self.reportId = reportId
            self.beaconKey = beaconKey
            self.from = from
            self.to = to
            self.separation = separation
            self.overlapSeconds = overlapSeconds
            self.chance = chance
        }
    }

    /// `GET /v1/devices/{id}`: what a device is told (`DeviceStatus` in the document).
    public struct DeviceStatus: Codable, Sendable, Equatable {
        /// The device's own latest report, while the health team has it and once decided.
        public struct Report: Codable, Sendable, Equatable {
            public var id: String
            public var status: String
            public var note: String?
            /// `failed`: recorded, but nobody near is told yet (until a flagging succeeds).
            public var flagging: String?

            public init(id: String, status: String, note: String? = nil, flagging: String? = nil) {
                self.id = id
                self.status = status
                self.note = note
                self.flagging = flagging
            }
        }

        public var deviceId: String
        public var status: String
        public var risk: String
        public var colocatedMinutes: Double
        public var exposures: [Exposure]
        public var report: Report?

        public init(
            deviceId: String,
            status: String,
            risk: String,
            colocatedMinutes: Double,
            exposures: [Exposure],
            report: Report? = nil
        ) {
            self.deviceId = deviceId
            self.status = status
            self.risk = risk
            self.colocatedMinutes = colocatedMinutes
            self.exposures = exposures
            self.report = report
        }
    }

    /// `GET /v1/beacons/{key}/exposures`.
    public struct BeaconExposures: Codable, Sendable, Equatable {
        public var beaconKey: String
        public var exposures: [Exposure]

        public init(beaconKey: String, exposures: [Exposure]) {
            self.beaconKey = beaconKey
            self.exposures = exposures
        }
    }
}

// The hot routes' bodies are written by the store's own JSON writer, not JSONEncoder: these
// types say what they hold, and `value` is the one place each is spelled as the store's values
// (a round-trip test holds the two together: `DeviceStatusTests`).

extension Responses {
    /// `GET /v1/reports/{id}/exposures`: who was flagged for one report, and where.
    public struct ReportExposures: Codable, Sendable, Equatable {
        /// The reporter at one anchor, windows within 5 minutes of each other joined.
        public struct Visit: Codable, Sendable, Equatable {
            public var beaconKey: String
            public var from: String
            public var to: String

            public init(beaconKey: String, from: String, to: String) {
                (self.beaconKey, self.from, self.to) = (beaconKey, from, to)
            }
        }

        public var reportId: String
        /// The reporter's device, and where the report stands.
        public var deviceId: String
        public var status: String
        public var exposures: [Exposure]
        /// Where the reporter was over the lookback (the rooms over time), oldest first.
        public var visits: [Visit]

        public init(reportId: String, deviceId: String, status: String, exposures: [Exposure], visits: [Visit] = []) {
            (self.reportId, self.deviceId, self.status, self.exposures, self.visits) =
                (reportId, deviceId, status, exposures, visits)
        }

        public var value: Value {
            .map([
                "reportId": .string(reportId), "deviceId": .string(deviceId), "status": .string(status),
                "exposures": .array(exposures.map(\.value)),
                "visits": .array(
                    visits.map {
                        .map(["beaconKey": .string($0.beaconKey), "from": .string($0.from), "to": .string($0.to)])
                    }
                ),
            ])
        }
    }
}

extension Responses.Exposure {
    public var value: Value {
        var fields: [String: Value] = [
            "deviceId": .string(deviceId), "reportId": .string(reportId), "beaconKey": .string(beaconKey),
            "from": from.map(Value.string) ?? .null, "to": to.map(Value.string) ?? .null,
            "separation": .map(["min": .double(separation.min), "max": .double(separation.max)]),
            "overlapSeconds": .integer(overlapSeconds),
        ]
        if let chance { fields["chance"] = .double(chance) }
        return .map(fields)
    }
}

extension Responses.DeviceStatus {
    public var value: Value {
        var fields: [String: Value] = [
            "deviceId": .string(deviceId), "status": .string(status), "risk": .string(risk),
            "colocatedMinutes": .double(colocatedMinutes), "exposures": .array(exposures.map(\.value)),
        ]
        if let report {
            var r: [String: Value] = ["id": .string(report.id), "status": .string(report.status)]
            if let note = report.note { r["note"] = .string(note) }
            if let flagging = report.flagging { r["flagging"] = .string(flagging) }
            fields["report"] = .map(r)
        }
        return .map(fields)
    }
}

extension Responses.BeaconExposures {
    public var value: Value {
        .map(["beaconKey": .string(beaconKey), "exposures": .array(exposures.map(\.value))])
    }
}

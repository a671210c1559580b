import TracerStore

/// `devices/{id}`: what the exposure engine says of a device.
public struct DeviceStatus: Sendable, Equatable {
    public static let collectionID = "devices"

    /// A device's state.
    public enum Status: String, Sendable, CaseIterable {
        /// Nothing known against it.
        case clear
        /// Near a positive reporter.
        case exposed
        /// Its owner reported a positive test.
        case positive
    }

    /// How many distinct positive reports it was exposed by: none, one or two, three or more.
    public enum Risk: String, Sendable, CaseIterable {
        case low, medium, high

        /// The risk from a number of distinct reports.
        public init(reports: Int) {
            self = reports >= 3 ? .high : reports == 0 ? .low : .medium
        }
    }

    public var deviceID: String
    public var status: Status
    public var risk: Risk
    public var exposureCount: Int
    /// Minutes spent within the radius of reporters, to a tenth.
    public var colocatedMinutes: Double
    public var updatedAt: Timestamp?

    public init(
        deviceID: String,
        status: Status = .clear,
        risk: Risk = .low,
        exposureCount: Int = 0,
        colocatedMinutes: Double = 0,
        updatedAt: Timestamp? = nil
    ) {
        self.deviceID = deviceID
        self.status = status
        self.risk = risk
        self.exposureCount = exposureCount
        self.colocatedMinutes = colocatedMinutes
        self.updatedAt = updatedAt
    }

    /// A stored device; a device nobody has written of (or written oddly) is clear, at low risk.
    public init(_ doc: DocumentSnapshot) {
        let data = doc.data ?? [:]
        self.init(
            deviceID: doc.id,
            status: data["status"]?.stringValue.flatMap(Status.init(rawValue:)) ?? .clear,
            risk: data["risk"]?.stringValue.flatMap(Risk.init(rawValue:)) ?? .low,
            exposureCount: Int(saturating: data["exposureCount"]?.doubleValue ?? 0),
            colocatedMinutes: data["colocatedMinutes"]?.doubleValue ?? 0,
            updatedAt: data["updatedAt"]?.timestampValue
        )
    }

    /// Whether a stored device is positive.
    public static func isPositive(_ doc: DocumentSnapshot) -> Bool {
        doc["status"] == .string(Status.positive.rawValue)
    }

    /// The merge that marks a device positive.
    public static var positive: DocumentData {
        ["status": .string(Status.positive.rawValue), "updatedAt": .serverTimestamp]
    }

    /// The summary the engine merges after flagging: risk, counts and, unless the device is
    /// positive (it stays so), its status.
    public static func summary(exposures: [Exposure], keepsStatus: Bool) -> DocumentData {
        let reports = Set(exposures.map(\.reportID))
        let seconds = exposures.map { Double($0.overlapSeconds) }.reduce(0, +)
        var data: DocumentData = [
            "risk": .string(Risk(reports: reports.count).rawValue),
            "exposureCount": .integer(Int64(exposures.count)),
            "colocatedMinutes": .double((seconds / 6).rounded() / 10),
            "updatedAt": .serverTimestamp,
        ]
        if !keepsStatus { data["status"] = .string((reports.isEmpty ? Status.clear : .exposed).rawValue) }
        return data
    }
}

import TracerModel
import TracerStore

// A device's status and its exposures: the generated types (`Components.Schemas`), made from
// the stored documents here, for the server and for the command line's own reading of a store.
//
// The hot routes (`GET /v1/devices/{id}`, a beacon's and a report's exposures) write these
// through `value`, the store's own values and JSON writer, not through `Codable`: a device's
// status is asked for on every page load and after every change (BENCHMARKS.md, "API"). `value`
// is the one other place each shape is spelled; `DeviceStatusTests` holds the two together by
// decoding what `value` writes with the generated types, which refuse a field they do not list.

extension Components.Schemas.Exposure {
    /// `devices/{id}/exposures/{x}`. Fields are read by key, not parsed as field paths: this
    /// runs for every exposure served.
    public init(_ doc: DocumentSnapshot) {
        let data = doc.data ?? [:]
        let separation = data["separation"]?.mapValue ?? [:]
        self.init(
            deviceId: Collections.device(ofExposure: doc.path) ?? "",
            reportId: data["reportId"]?.stringValue ?? "",
            beaconKey: data["beaconKey"]?.stringValue ?? "",
            from: data["from"]?.timestampValue?.iso8601Milliseconds,
            to: data["to"]?.timestampValue?.iso8601Milliseconds,
            separation: .init(
                min: separation["min"]?.doubleValue ?? 0,
                max: separation["max"]?.doubleValue ?? 0
            ),
            overlapSeconds: Int(saturating: data["overlapSeconds"]?.doubleValue ?? 0),
            chance: data["chance"]?.doubleValue
        )
    }

    public var value: Value {
        var fields: [String: Value] = [
            "deviceId": .string(deviceId), "reportId": .string(reportId), "beaconKey": .string(beaconKey),
            "from": from.map(Value.string) ?? .null, "to": to.map(Value.string) ?? .null,
            "separation": .map(["min": .double(separation.min), "max": .double(separation.max)]),
            "overlapSeconds": .integer(Int64(overlapSeconds)),
        ]
        if let chance { fields["chance"] = .double(chance) }
        return .map(fields)
    }
}

extension Components.Schemas.DeviceStatus {
    /// What a device is told. A device nobody has written of is clear, at low risk.
    public init(_ device: String, document doc: DocumentSnapshot, exposures: [DocumentSnapshot]) {
        let d = TracerModel.DeviceStatus(doc)
        // The device's own latest report, while the health team reviews it and once decided.
        let report = doc["report"].flatMap { r -> ReportPayload? in
            guard let id = r["id"]?.stringValue,
                let status = r["status"]?.stringValue.flatMap(ReportPayload.StatusPayload.init)
            else { return nil }
            return .init(
                id: id,
                status: status,
                note: r["note"]?.stringValue,
                flagging: r["flagging"]?.stringValue.flatMap(ReportPayload.FlaggingPayload.init)
            )
        }
        self.init(
            deviceId: device,
            status: StatusPayload(rawValue: d.status.rawValue) ?? .clear,
            risk: RiskPayload(rawValue: d.risk.rawValue) ?? .low,
            colocatedMinutes: d.colocatedMinutes,
            exposures: exposures.map(Components.Schemas.Exposure.init),
            report: report
        )
    }

    public var value: Value {
        var fields: [String: Value] = [
            "deviceId": .string(deviceId), "status": .string(status.rawValue), "risk": .string(risk.rawValue),
            "colocatedMinutes": .double(colocatedMinutes), "exposures": .array(exposures.map(\.value)),
        ]
        if let report {
            var r: [String: Value] = ["id": .string(report.id), "status": .string(report.status.rawValue)]
            if let note = report.note { r["note"] = .string(note) }
            if let flagging = report.flagging { r["flagging"] = .string(flagging.rawValue) }
            fields["report"] = .map(r)
        }
        return .map(fields)
    }
}

extension Components.Schemas.BeaconExposures {
    public var value: Value {
        .map(["beaconKey": .string(beaconKey), "exposures": .array(exposures.map(\.value))])
    }
}

extension Components.Schemas.ReportExposures {
    public var value: Value {
        var fields: [String: Value] = [
            "reportId": .string(reportId), "deviceId": .string(deviceId), "status": .string(status.rawValue),
            "exposures": .array(exposures.map(\.value)),
            "visits": .array(
                visits.map {
                    .map(["beaconKey": .string($0.beaconKey), "from": .string($0.from), "to": .string($0.to)])
                }
            ),
        ]
        if let told {
            fields["told"] = .array(
                told.map { t in
                    var one: [String: Value] = ["deviceId": .string(t.deviceId), "cardOpened": .bool(t.cardOpened)]
                    if let seen = t.seenAt { one["seenAt"] = .string(seen) }
                    if let pushed = t.pushedAt { one["pushedAt"] = .string(pushed) }
                    return .map(one)
                }
            )
        }
        return .map(fields)
    }
}

// The document's required properties that may be null, which the generated types would leave
// out when nil (apple/swift-openapi-generator#934): `APIJSON` writes these as null. The list
// is held to the document by a test (`NullsTests`): every required property that may be null,
// and no other.

extension APIJSON {
    /// Each type's keys written as null, by where the document defines the type (a schema, a
    /// path inside one, or an operation's answer).
    public static let nullable: [(place: String, keys: any NullWhenNil.Type)] = [
        ("Health", Components.Schemas.Health.CodingKeys.self),
        ("Features", Components.Schemas.Features.CodingKeys.self),
        ("Beacons.site.rooms[]", Components.Schemas.Beacons.SitePayload.RoomsPayloadPayload.CodingKeys.self),
        ("Exposure", Components.Schemas.Exposure.CodingKeys.self),
        ("ReportOutcome", Components.Schemas.ReportOutcome.CodingKeys.self),
        ("Page", Components.Schemas.Page.CodingKeys.self),
        ("Page.guidance", Components.Schemas.Page.GuidancePayload.CodingKeys.self),
        ("ReviewedReport", Components.Schemas.ReviewedReport.CodingKeys.self),
        ("SiteCalibration.kiosks[]", Components.Schemas.SiteCalibration.KiosksPayloadPayload.CodingKeys.self),
        ("Kiosks.kiosks[]", Components.Schemas.Kiosks.KiosksPayloadPayload.CodingKeys.self),
        ("WatchDocument", Components.Schemas.WatchDocument.CodingKeys.self),
        ("WatchChange", Components.Schemas.WatchChange.CodingKeys.self),
        ("DeviceStatusChange", Components.Schemas.DeviceStatusChange.CodingKeys.self),
        ("ownToken#200", Operations.OwnToken.Output.Ok.Body.JsonPayload.CodingKeys.self),
    ]
}

extension Components.Schemas.Health.CodingKeys: NullWhenNil {
    public static let nullWhenNil: Set<String> = ["site"]
}

extension Components.Schemas.Features.CodingKeys: NullWhenNil {
    public static let nullWhenNil: Set<String> = ["site"]
}

extension Components.Schemas.Beacons.SitePayload.RoomsPayloadPayload.CodingKeys: NullWhenNil {
    public static let nullWhenNil: Set<String> = ["building", "floor"]
}

extension Components.Schemas.Exposure.CodingKeys: NullWhenNil {
    public static let nullWhenNil: Set<String> = ["from", "to"]
}

extension Components.Schemas.ReportOutcome.CodingKeys: NullWhenNil {
    public static let nullWhenNil: Set<String> = ["collectedAt"]
}

extension Components.Schemas.Page.CodingKeys: NullWhenNil {
    public static let nullWhenNil: Set<String> = ["site", "guidance"]
}

extension Components.Schemas.Page.GuidancePayload.CodingKeys: NullWhenNil {
    public static let nullWhenNil: Set<String> = ["link"]
}

extension Components.Schemas.ReviewedReport.CodingKeys: NullWhenNil {
    public static let nullWhenNil: Set<String> = ["createdAt", "collectedAt"]
}

extension Components.Schemas.SiteCalibration.KiosksPayloadPayload.CodingKeys: NullWhenNil {
    public static let nullWhenNil: Set<String> = ["room", "receiverOffset", "uncertainty", "transmitOffset"]
}

extension Components.Schemas.Kiosks.KiosksPayloadPayload.CodingKeys: NullWhenNil {
    public static let nullWhenNil: Set<String> = [
        "room", "lastSeen", "secondsSinceSeen", "backlogOldest", "clockOffsetSeconds", "lastRefusal",
    ]
}

extension Components.Schemas.WatchDocument.CodingKeys: NullWhenNil {
    public static let nullWhenNil: Set<String> = ["data"]
}

extension Components.Schemas.WatchChange.CodingKeys: NullWhenNil {
    public static let nullWhenNil: Set<String> = ["data"]
}

extension Components.Schemas.DeviceStatusChange.CodingKeys: NullWhenNil {
    public static let nullWhenNil: Set<String> = ["updatedAt"]
}

extension Operations.OwnToken.Output.Ok.Body.JsonPayload.CodingKeys: NullWhenNil {
    public static let nullWhenNil: Set<String> = ["deviceId", "anchor"]
}

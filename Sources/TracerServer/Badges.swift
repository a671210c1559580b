import Foundation
import HTTPTypes
import Hummingbird
import TracerAPI
import TracerBadges
import TracerModel
import TracerStore

extension API {
    /// `GET /v1/badges/ids?day=2026-11-26`: the day's ids of every active badge, for a kiosk to
    /// resolve badges offline without a key. The ETag is the badges' version, K and the day: a
    /// kiosk polling with `If-None-Match` hears 304 (one document read) until a badge changes.
    func badgeIDs(_ request: Request, _ who: Principal, in db: StoreReader) throws -> Response {
        guard let name = request.uri.queryParameters["day"].map(String.init) else {
            throw APIError.badRequest("day is missing: ?day=YYYY-MM-DD")
        }
        guard let day = BadgeIDDay.day(named: name) else {
            if Timestamp(parsing: name) != nil, Double(name) == nil {
                throw APIError(
                    .notFound,
                    .noDay,
                    "no ids for \(name): days from 14 before today to 3 after are served"
                )
            }
            throw APIError.badRequest("day takes a date like 2026-11-26, not '\(name.prefix(40))'")
        }
        let today = BadgeIDDay.day(of: clock().timeIntervalSince1970)
        // A kiosk token reads what a live kiosk needs, yesterday (an epoch's table reaches back
        // across midnight) to the horizon: a stolen kiosk's token gives away five days of ids,
        // never the fortnight behind that would match old captures to badges.
        let ahead = Int64(today) + Int64(BadgeIDDay.horizon - 1) * 86_400
        guard Int64(day) >= Int64(today) - 14 * 86_400, Int64(day) <= ahead else {
            throw APIError(
                .notFound,
                .noDay,
                "no ids for \(name): days from 14 before today to \(BadgeIDDay.horizon - 1) after are served"
            )
        }
        if who.role == .kiosk, Int64(day) < Int64(today) - 86_400 {
            throw APIError.forbidden(
                "a kiosk token reads the days a kiosk needs, from yesterday to \(BadgeIDDay.horizon - 1) days ahead, not \(name)"
            )
        }
        guard let version = try BadgeRegistry.version(in: db) else {
            throw APIError(.notFound, .noBadges, "no badge is issued at this site (tracer badge issue --count N)")
        }
        let bits = site?.badgeEpochBits ?? RotatingID.defaultBits
        let etag = BadgeIDDay.etag(version: version, bits: bits, day: day)
        if let presented = request.headers[.ifNoneMatch], presented == etag {
            return Response(status: .notModified, headers: [HTTPField.Name.eTag: etag])
        }
        let body: Data
        if let cached = badgeDays.withLock({ $0[etag] }) {
            body = cached
        } else {
            guard let material = try BadgeRegistry.material(in: db) else {
                throw APIError(.notFound, .noBadges, "no badge is issued at this site (tracer badge issue --count N)")
            }
            let made = BadgeIDDay(badges: material.badges, day: day, bits: bits, version: material.version)
            let ids = Components.Schemas.BadgeIDs(
                day: name,
                epochBits: bits,
                version: material.version,
                serials: made.serials,
                numbers: made.numbers.map(Int64.init),
                firstEpoch: Int64(made.firstEpoch),
                epochs: made.epochs,
                ids: Data(made.packedIDs).base64EncodedString()
            )
            // Encoded once: a day's ids are megabytes for a large site, asked for by every kiosk.
            body = Data(try APIJSON.string(ids).utf8)
            // Kept for the kiosks that ask next (each asks for the same few days); a handful only.
            badgeDays.withLock { cache in
                if cache.count >= 8 { cache.removeAll() }
                if material.version == version { cache[etag] = body }
            }
        }
        var response = JSONBody.response(bytes: body, status: .ok)
        response.headers[HTTPField.Name.eTag] = etag
        return response
    }
}

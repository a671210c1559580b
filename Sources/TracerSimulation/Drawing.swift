import Foundation
import TracerSite

/// Pictures of an evaluation, as SVG (no dependencies; any browser shows them).
public enum Drawing {
    /// Writes distance-error.svg, timeline.svg and floorplan.svg, and positions.svg when there
    /// are positions (for the reporter with the most); returns their paths.
    public static func write(
        evaluation e: Evaluation,
        truth: GroundTruth,
        site: Site,
        exposures: [FlaggedExposure],
        positions: [Evaluation.PositionEstimate] = [],
        to directory: String
    ) throws -> [String] {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw SimulationError("cannot create \(directory): \(error.localizedDescription)")
        }
        var written: [String] = []
        func save(_ name: String, _ svg: String) throws {
            let path = (directory as NSString).appendingPathComponent(name)
            guard FileManager.default.createFile(atPath: path, contents: Data(svg.utf8)) else {
                throw SimulationError("cannot write \(path)")
            }
            written.append(path)
        }
        try save("distance-error.svg", distanceError(e))
        if let reporter = e.reporters.first {
            try save("timeline.svg", timeline(reporter: reporter, truth: truth, site: site, exposures: exposures))
        }
        try save(
            "floorplan.svg",
            floorPlan(site: site, truth: truth, reporter: e.reporters.first, exposures: exposures)
        )
        let placed = Dictionary(grouping: positions, by: \.device)
        if let device = e.reporters.filter({ placed[$0] != nil }).max(by: { placed[$0]!.count < placed[$1]!.count }) {
            try save("positions.svg", Self.positions(of: device, placed[device]!, truth: truth, site: site))
        }
        return written
    }

    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }

    static func f(_ x: Double) -> String { String(format: "%.1f", x) }

    /// A colour per room, the same in every picture.
    static func colour(_ key: String) -> String {
        var h: UInt32 = 2_166_136_261
        for b in key.utf8 { h = (h ^ UInt32(b)) &* 16_777_619 }
        return "hsl(\(h % 360), 55%, 72%)"
    }

    static func header(_ w: Int, _ h: Int, _ title: String) -> String {
        """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(w)" height="\(h)" viewBox="0 0 \(w) \(h)" \
        font-family="DejaVu Sans, sans-serif" font-size="12">
        <rect width="100%" height="100%" fill="white"/>
        <text x="\(w / 2)" y="22" text-anchor="middle" font-size="15" font-weight="bold">\(escape(title))</text>

        """
    }

    /// Rooms drawn to scale, north up: fitted into `width` × `height` pixels, `top` pixels from
    /// the top of a picture at least 820 pixels wide, with `margin` pixels more in its height
    /// for the title and the legend.
    struct Plot {
        let w: Int
        let h: Int
        let scale: Double
        let left: Double
        let top: Double
        let minX: Double
        let maxY: Double

        init(rooms: [Room], width: Double, height: Double, top: Double, margin: Double) {
            let xs = rooms.flatMap { $0.outline.map(\.x) }
            let ys = rooms.flatMap { $0.outline.map(\.y) }
            let (minX, maxX, minY, maxY) = (xs.min() ?? 0, xs.max() ?? 1, ys.min() ?? 0, ys.max() ?? 1)
            scale = min(width / max(maxX - minX, 1), height / max(maxY - minY, 1))
            w = max(Int((maxX - minX) * scale + 80), 820)
            h = Int((maxY - minY) * scale + margin)
            left = (Double(w) - (maxX - minX) * scale) / 2
            self.top = top
            self.minX = minX
            self.maxY = maxY
        }

        func px(_ p: Point) -> (Double, Double) { (left + (p.x - minX) * scale, top + (maxY - p.y) * scale) }

        /// A room's outline, filled with its colour.
        func outline(_ room: Room, opacity: Double) -> String {
            let points = room.outline.map { p -> String in
                let (x, y) = px(p)
                return "\(f(x)),\(f(y))"
            }.joined(separator: " ")
            return
                "<polygon points=\"\(points)\" fill=\"\(colour(room.key))\" fill-opacity=\"\(opacity)\" stroke=\"#555\"/>"
        }
    }

    /// Estimated against true distance, with the median per metre and the line of no error.
    static func distanceError(_ e: Evaluation) -> String {
        let w = 640
        let h = 520
        let (l, r, t, b) = (60.0, 20.0, 40.0, 50.0)
        let maxD = 12.0
        let pw = Double(w) - l - r
        let ph = Double(h) - t - b
        func x(_ d: Double) -> Double { l + min(d, maxD) / maxD * pw }
        func y(_ d: Double) -> Double { t + ph - min(d, maxD) / maxD * ph }
        var s = header(w, h, "Estimated against true distance (\(e.scatter.count) windows)")
        for i in 0...Int(maxD) {
            let d = Double(i)
            s += "<line x1=\"\(f(x(d)))\" y1=\"\(f(t))\" x2=\"\(f(x(d)))\" y2=\"\(f(t + ph))\" stroke=\"#eee\"/>"
            s += "<line x1=\"\(f(l))\" y1=\"\(f(y(d)))\" x2=\"\(f(l + pw))\" y2=\"\(f(y(d)))\" stroke=\"#eee\"/>"
            s += "<text x=\"\(f(x(d)))\" y=\"\(f(t + ph + 16))\" text-anchor=\"middle\">\(i)</text>"
            s += "<text x=\"\(f(l - 8))\" y=\"\(f(y(d) + 4))\" text-anchor=\"end\">\(i)</text>\n"
        }
        s +=
            "<text x=\"\(f(l + pw / 2))\" y=\"\(h - 12)\" text-anchor=\"middle\">true distance from the kiosk (m)</text>"
        s +=
            "<text transform=\"translate(16 \(f(t + ph / 2))) rotate(-90)\" text-anchor=\"middle\">estimated (m)</text>\n"
        let stride = max(1, e.scatter.count / 4000)
        for (i, p) in e.scatter.enumerated() where i % stride == 0 {
            s +=
                "<circle cx=\"\(f(x(p.truth)))\" cy=\"\(f(y(p.estimate)))\" r=\"1.6\" fill=\"#3465a4\" fill-opacity=\"0.25\"/>"
        }
        s +=
            "\n<line x1=\"\(f(x(0)))\" y1=\"\(f(y(0)))\" x2=\"\(f(x(maxD)))\" y2=\"\(f(y(maxD)))\" stroke=\"#333\" stroke-dasharray=\"4 3\"/>\n"
        var medians: [(Double, Double)] = []
        for m in 0..<Int(maxD) {
            let ests = e.scatter.filter { $0.truth >= Double(m) && $0.truth < Double(m + 1) }.map(\.estimate).sorted()
            if ests.count >= 5 { medians.append((Double(m) + 0.5, Evaluation.quantile(ests, 0.5))) }
        }
        if !medians.isEmpty {
            s +=
                "<polyline fill=\"none\" stroke=\"#cc0000\" stroke-width=\"2.5\" points=\""
                + medians.map { "\(f(x($0.0))),\(f(y($0.1)))" }.joined(separator: " ") + "\"/>\n"
        }
        s += "<text x=\"\(f(l + 10))\" y=\"\(f(t + 14))\" fill=\"#cc0000\">— median estimate per metre</text>"
        s += "<text x=\"\(f(l + 10))\" y=\"\(f(t + 30))\" fill=\"#333\">- - no error</text>\n</svg>\n"
        return s
    }

    static func clock(_ t: Double) -> String {
        let s = Int(t.truncatingRemainder(dividingBy: 86_400))
        return String(format: "%02d:%02d", s / 3600, s / 60 % 60)
    }

    static func short(_ device: String) -> String {
        let parts = device.split(separator: ":")
        return parts.count == 3 ? "\(parts[0].prefix(4))…:\(parts[1]):\(parts[2])" : device
    }

    /// One reporter's day: where they were, and each person truly near them (green) or flagged
    /// (blue when right, red when not), with those missed marked.
    static func timeline(reporter: String, truth: GroundTruth, site: Site, exposures: [FlaggedExposure]) -> String {
        let mine = exposures.filter { $0.reporter == reporter }
        let pairs = truth.pairs.filter { $0.involves(reporter) }
        let trueDevices = Set(pairs.map { $0.other(than: reporter) })
        let flaggedDevices = Set(mine.map(\.device))
        // Rows by when each person first came near (or was first flagged).
        var first: [String: Double] = [:]
        for p in pairs { first[p.other(than: reporter)] = min(first[p.other(than: reporter)] ?? .infinity, p.from) }
        for e in mine where !trueDevices.contains(e.device) {
            first[e.device] = min(first[e.device] ?? .infinity, e.from)
        }
        let rows = trueDevices.union(flaggedDevices).sorted { (first[$0] ?? 0, $0) < (first[$1] ?? 0, $1) }
        let w = 1000
        let rowH = 18.0
        let (l, r, t) = (190.0, 30.0, 90.0)
        let h = Int(t + rowH * Double(rows.count + 1) + 60)
        let pw = Double(w) - l - r
        func x(_ time: Double) -> Double { l + (time - truth.start) / (truth.end - truth.start) * pw }
        var s = header(w, h, "A reporter's day: \(short(reporter)), \(rows.count) people near or flagged")
        s +=
            "<text x=\"\(f(l))\" y=\"44\">"
            + "<tspan fill=\"#4e9a06\">■ truly within the radius</tspan>   <tspan fill=\"#3465a4\">■ flagged, right</tspan>   "
            + "<tspan fill=\"#cc0000\">■ flagged, wrong</tspan>   <tspan fill=\"#f57900\">missed: truly near, not flagged</tspan></text>\n"
        // Hours.
        var hour = (truth.start / 3600).rounded(.up) * 3600
        while hour <= truth.end {
            s +=
                "<line x1=\"\(f(x(hour)))\" y1=\"\(f(t - 20))\" x2=\"\(f(x(hour)))\" y2=\"\(f(t + rowH * Double(rows.count + 1)))\" stroke=\"#ddd\"/>"
            s += "<text x=\"\(f(x(hour)))\" y=\"\(f(t - 24))\" text-anchor=\"middle\">\(clock(hour))</text>\n"
            hour += 3600
        }
        // The reporter's rooms.
        s +=
            "<text x=\"\(f(l - 8))\" y=\"\(f(t + 13))\" text-anchor=\"end\" font-weight=\"bold\">reporter's rooms</text>"
        for seg in truth.segments[reporter] ?? [] {
            guard let room = seg.room else { continue }
            let x0 = x(seg.from)
            let x1 = x(seg.to)
            s +=
                "<rect x=\"\(f(x0))\" y=\"\(f(t))\" width=\"\(f(max(0.5, x1 - x0)))\" height=\"\(f(rowH - 2))\" fill=\"\(colour(room))\"><title>\(escape(room))</title></rect>"
            if x1 - x0 > 40 {
                s += "<text x=\"\(f(x0 + 3))\" y=\"\(f(t + 12))\" font-size=\"10\">\(escape(room))</text>"
            }
        }
        s += "\n"
        for (i, device) in rows.enumerated() {
            let y0 = t + rowH * Double(i + 1)
            let missed = !flaggedDevices.contains(device)
            let wrong = !trueDevices.contains(device)
            let colour = missed ? "#f57900" : wrong ? "#cc0000" : "#333"
            s +=
                "<text x=\"\(f(l - 8))\" y=\"\(f(y0 + 12))\" text-anchor=\"end\" fill=\"\(colour)\">\(escape(short(device)))\(missed ? " missed" : "")</text>"
            for p in pairs where p.other(than: reporter) == device {
                s +=
                    "<rect x=\"\(f(x(p.from)))\" y=\"\(f(y0 + 1))\" width=\"\(f(max(1, x(p.to) - x(p.from))))\" height=\"7\" fill=\"#4e9a06\"><title>\(escape(p.room)): closest \(f(p.closest)) m</title></rect>"
            }
            for ex in mine where ex.device == device {
                s +=
                    "<rect x=\"\(f(x(ex.from)))\" y=\"\(f(y0 + 8))\" width=\"\(f(max(1, x(ex.to) - x(ex.from))))\" height=\"7\" fill=\"\(wrong ? "#cc0000" : "#3465a4")\"><title>flagged at \(escape(ex.anchor))</title></rect>"
            }
            s += "\n"
        }
        s += "</svg>\n"
        return s
    }

    /// The site: rooms, kiosks and beacons; the first reporter's path; exposures per room.
    static func floorPlan(site: Site, truth: GroundTruth, reporter: String?, exposures: [FlaggedExposure]) -> String {
        let plot = Plot(rooms: site.rooms, width: 900, height: 700, top: 60, margin: 120)
        let (w, h, px) = (plot.w, plot.h, plot.px)
        var s = header(w, h, "\(site.name): people flagged per room, and the reporter's path")
        let roomOfAnchor = Dictionary(site.anchors.map { ($0.key, $0.room) }, uniquingKeysWith: { a, _ in a })
        var exposed: [String: Set<String>] = [:]
        for e in exposures { exposed[roomOfAnchor[e.anchor] ?? "", default: []].insert(e.device) }
        for room in site.rooms {
            s += plot.outline(room, opacity: 0.45)
            let (lo, hi) = room.bounds
            let (cx, cy) = px(Point((lo.x + hi.x) / 2, (lo.y + hi.y) / 2))
            s +=
                "<text x=\"\(f(cx))\" y=\"\(f(cy - 4))\" text-anchor=\"middle\" font-size=\"11\">\(escape(room.name))</text>"
            if let n = exposed[room.key]?.count, n > 0 {
                s +=
                    "<text x=\"\(f(cx))\" y=\"\(f(cy + 12))\" text-anchor=\"middle\" font-size=\"11\" fill=\"#cc0000\" font-weight=\"bold\">\(n) exposed</text>"
            }
            s += "\n"
        }
        if let reporter, let segments = truth.segments[reporter] {
            let pts = segments.filter { $0.room != nil }.map { seg -> String in
                let (x, y) = px(seg.position)
                return "\(f(x)),\(f(y))"
            }
            s +=
                "<polyline fill=\"none\" stroke=\"#cc0000\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\" points=\"\(pts.joined(separator: " "))\"/>"
            for p in pts {
                let xy = p.split(separator: ",")
                s += "<circle cx=\"\(xy[0])\" cy=\"\(xy[1])\" r=\"3\" fill=\"#cc0000\"/>"
            }
            s += "\n"
        }
        for a in site.anchors {
            let (x, y) = px(a.position)
            if a.kind == .kiosk {
                s +=
                    "<rect x=\"\(f(x - 5))\" y=\"\(f(y - 5))\" width=\"10\" height=\"10\" fill=\"#204a87\"><title>\(escape(a.key))</title></rect>"
            } else {
                s +=
                    "<circle cx=\"\(f(x))\" cy=\"\(f(y))\" r=\"4\" fill=\"#fcaf3e\" stroke=\"#555\"><title>\(escape(a.key))</title></circle>"
            }
        }
        let ly = Double(h) - 30
        s +=
            "\n<rect x=\"40\" y=\"\(f(ly - 9))\" width=\"10\" height=\"10\" fill=\"#204a87\"/><text x=\"56\" y=\"\(f(ly))\">kiosk</text>"
        s +=
            "<circle cx=\"115\" cy=\"\(f(ly - 4))\" r=\"4\" fill=\"#fcaf3e\" stroke=\"#555\"/><text x=\"124\" y=\"\(f(ly))\">fixed beacon</text>"
        if let reporter {
            s +=
                "<circle cx=\"225\" cy=\"\(f(ly - 4))\" r=\"3\" fill=\"#cc0000\"/><text x=\"234\" y=\"\(f(ly))\">where \(escape(short(reporter))) was (reporter)</text>"
        }
        s += "\n</svg>\n"
        return s
    }

    /// Where one badge was placed in each slot in which two kiosks of its room heard it (a dot,
    /// coloured by the time of day) against where it was at the slot's middle (a ring), joined by
    /// a line: the rooms it was placed in, alone and to scale, with their kiosks.
    static func positions(
        of device: String,
        _ estimates: [Evaluation.PositionEstimate],
        truth: GroundTruth,
        site: Site
    ) -> String {
        let keys = Set(estimates.map(\.room))
        let rooms = site.rooms.filter { keys.contains($0.key) }
        let plot = Plot(rooms: rooms, width: 860, height: 560, top: 70, margin: 160)
        let (w, h, px) = (plot.w, plot.h, plot.px)
        func hue(_ t: Double) -> String {
            let u = truth.end > truth.start ? min(max((t - truth.start) / (truth.end - truth.start), 0), 1) : 0
            return "hsl(\(Int(240 - 240 * u)), 70%, 45%)"
        }
        var errors: [Double] = []
        var marks = ""
        for e in estimates.sorted(by: { $0.from < $1.from }) {
            let mid = (e.from + e.to) / 2
            let (x, y) = px(e.point)
            if let seg = truth.segment(of: device, at: mid), seg.room == e.room {
                errors.append(seg.position.distance(to: e.point))
                let (tx, ty) = px(seg.position)
                marks +=
                    "<line x1=\"\(f(tx))\" y1=\"\(f(ty))\" x2=\"\(f(x))\" y2=\"\(f(y))\" stroke=\"#888\" stroke-width=\"0.8\"/>"
                    + "<circle cx=\"\(f(tx))\" cy=\"\(f(ty))\" r=\"5\" fill=\"none\" stroke=\"#222\" stroke-width=\"1.2\"/>"
            }
            marks +=
                "<circle cx=\"\(f(x))\" cy=\"\(f(y))\" r=\"3.2\" fill=\"\(hue(mid))\"><title>\(clock(e.from))</title></circle>\n"
        }
        errors.sort()
        let median = errors.isEmpty ? nil : errors[errors.count / 2]
        var s = header(w, h, "Where \(short(device)) was placed, and where it was")
        s +=
            "<text x=\"\(w / 2)\" y=\"42\" text-anchor=\"middle\">\(estimates.count) slots in which two kiosks of a "
            + "room heard it" + (median.map { String(format: "; median error %.1f m", $0) } ?? "") + "</text>\n"
        for room in rooms {
            s += plot.outline(room, opacity: 0.3)
            let (lo, hi) = room.bounds
            let (cx, _) = px(Point((lo.x + hi.x) / 2, hi.y))
            let (_, top) = px(Point(lo.x, hi.y))
            s +=
                "<text x=\"\(f(cx))\" y=\"\(f(top + 14))\" text-anchor=\"middle\" font-size=\"11\">\(escape(room.name))</text>\n"
        }
        s += marks
        for a in site.anchors where a.kind == .kiosk && keys.contains(a.room) {
            let (x, y) = px(a.position)
            s +=
                "<rect x=\"\(f(x - 5))\" y=\"\(f(y - 5))\" width=\"10\" height=\"10\" fill=\"#204a87\"><title>\(escape(a.key))</title></rect>"
        }
        let ly = Double(h) - 30
        s +=
            "\n<rect x=\"40\" y=\"\(f(ly - 9))\" width=\"10\" height=\"10\" fill=\"#204a87\"/><text x=\"56\" y=\"\(f(ly))\">kiosk</text>"
            + "<circle cx=\"115\" cy=\"\(f(ly - 4))\" r=\"3.2\" fill=\"\(hue(truth.start))\"/>"
            + "<circle cx=\"127\" cy=\"\(f(ly - 4))\" r=\"3.2\" fill=\"\(hue(truth.end))\"/>"
            + "<text x=\"136\" y=\"\(f(ly))\">placed (\(clock(truth.start)) to \(clock(truth.end)))</text>"
            + "<circle cx=\"320\" cy=\"\(f(ly - 4))\" r=\"5\" fill=\"none\" stroke=\"#222\" stroke-width=\"1.2\"/>"
            + "<text x=\"331\" y=\"\(f(ly))\">where it was (the line joins the two)</text>"
        s += "\n</svg>\n"
        return s
    }
}

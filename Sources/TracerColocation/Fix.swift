import TracerSite

/// Where in a room a badge was in one window slot: a few cells of the room's grid with their
/// chances (summing to 1), and how many kiosks heard it then.
public struct Fix: Sendable, Equatable {
    public var points: [Point]
    public var weights: [Double]
    /// The posterior mean.
    public var mean: Point
    /// Kiosks of the room that heard the badge in this slot (others may have heard it through
    /// its walls).
    public var receivers: Int
}

extension Positioning {
    /// The chance that two badges with these fixes were within `radius` of each other.
    public static func probability(_ a: Fix, _ b: Fix, radius: Double) -> Double {
        compare(a, b, radius: radius).chance
    }

    /// That chance, and the least separation of any two of the fixes' points (where the chance
    /// is above 0, within the radius), in one pass.
    ///
    /// Up to 64 × 64 points a pair, and a report at a campus compares tens of thousands of pairs
    /// (over half of flagging one: `Tools/bench/campus`, BENCHMARKS.md), so it works from b's
    /// bounding box: a point of a whose farthest corner of the box is within the radius has all
    /// of b near (b's weights summed once, in the same order, so the same sum to the last bit),
    /// one whose nearest point of the box is beyond it has none. For the rest, which b points are
    /// near is found without a branch (a bit each: which way a branch on the distance goes
    /// cannot be guessed, and guessing wrong was most of the time) and their weights summed in
    /// b's order. The least separation is a minimum, the same in any order, taken over two
    /// lanes, and not at all from a point of a whose nearest point of the box is no closer than
    /// the least so far. Rounding is monotone, so each bound holds for the computed distances
    /// too: the answer is the plain double loop's, bit for bit
    /// (`PositioningTests.fixesComparedByTheirBoxesAreComparedPointByPoint`).
    public static func compare(_ a: Fix, _ b: Fix, radius: Double) -> (chance: Double, closest: Double) {
        let r2 = radius * radius
        var p = 0.0
        var least = Double.infinity
        let n = b.points.count
        var (x0, y0, x1, y1) = (Double.infinity, Double.infinity, -Double.infinity, -Double.infinity)
        var total = 0.0
        for j in 0..<n {
            x0 = min(x0, b.points[j].x)
            x1 = max(x1, b.points[j].x)
            y0 = min(y0, b.points[j].y)
            y1 = max(y1, b.points[j].y)
            total += b.weights[j]
        }
        b.points.withUnsafeBufferPointer { q in
            b.weights.withUnsafeBufferPointer { w in
                for i in a.points.indices {
                    let pa = a.points[i]
                    func d2(_ j: Int) -> Double {
                        (pa.x - q[j].x) * (pa.x - q[j].x) + (pa.y - q[j].y) * (pa.y - q[j].y)
                    }
                    let (nx, ny) = (max(x0 - pa.x, 0, pa.x - x1), max(y0 - pa.y, 0, pa.y - y1))
                    let (fx, fy) = (max(pa.x - x0, x1 - pa.x), max(pa.y - y0, y1 - pa.y))
                    let nearest = nx * nx + ny * ny
                    let all = fx * fx + fy * fy <= r2
                    let some = !all && nearest <= r2
                    let closer = nearest < least
                    var near = all ? total : 0
                    if some && n > 64 {
                        for j in 0..<n where d2(j) <= r2 { near += w[j] }
                    }
                    guard closer || (some && n <= 64) else {
                        p += a.weights[i] * near
                        continue
                    }
                    var mask: UInt64 = 0
                    var (m0, m1) = (least, least)
                    var j = 0
                    while j + 2 <= n {
                        let (d0, d1) = (d2(j), d2(j + 1))
                        (m0, m1) = (min(m0, d0), min(m1, d1))
                        mask |= (d0 <= r2 ? 1 : 0) << UInt64(j & 63) | (d1 <= r2 ? 1 : 0) << UInt64((j + 1) & 63)
                        j += 2
                    }
                    if j < n {
                        let d = d2(j)
                        m0 = min(m0, d)
                        mask |= (d <= r2 ? 1 : 0) << UInt64(j & 63)
                    }
                    if closer { least = min(m0, m1) }
                    if some && n <= 64 {
                        while mask != 0 {
                            near += w[mask.trailingZeroBitCount]
                            mask &= mask - 1
                        }
                    }
                    p += a.weights[i] * near
                }
            }
        }
        return (min(1, p), least.squareRoot())
    }
}

extension Value {
    /// Firestore's cross-type order: null < bool < number < timestamp < string < bytes < array < map.
    var typeOrder: Int {
        switch self {
        case .null: 0
        case .bool: 1
        case .integer, .double: 2
        case .timestamp: 3
        case .string: 4
        case .bytes: 5
        case .array: 6
        case .map: 7
        case .sentinel: 8
        }
    }

    /// Compares two values in Firestore's total order: -1, 0 or 1.
    ///
    /// Integers and doubles compare by numeric value exactly (`1 == 1.0`); NaN equals NaN and sorts
    /// before every other number; `-0.0 == 0.0`; strings compare by UTF-8 bytes; maps compare by
    /// their sorted keys, then values.
    public static func compare(_ a: Value, _ b: Value) -> Int {
        let ta = a.typeOrder
        let tb = b.typeOrder
        if ta != tb { return ta < tb ? -1 : 1 }
        switch (a, b) {
        case (.null, .null): return 0
        case (.bool(let x), .bool(let y)): return x == y ? 0 : (!x ? -1 : 1)
        case (.integer(let x), .integer(let y)): return x == y ? 0 : (x < y ? -1 : 1)
        case (.double(let x), .double(let y)): return compareDoubles(x, y)
        case (.integer(let x), .double(let y)): return compareInteger(x, y)
        case (.double(let x), .integer(let y)): return -compareInteger(y, x)
        case (.timestamp(let x), .timestamp(let y)): return x == y ? 0 : (x < y ? -1 : 1)
        case (.string(let x), .string(let y)): return compareBytes(x.utf8, y.utf8)
        case (.bytes(let x), .bytes(let y)): return compareBytes(x, y)
        case (.array(let x), .array(let y)):
            for (l, r) in zip(x, y) {
                let c = compare(l, r)
                if c != 0 { return c }
            }
            return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
        case (.map(let x), .map(let y)):
            let kx = x.keys.sorted(by: utf8Less)
            let ky = y.keys.sorted(by: utf8Less)
            for (l, r) in zip(kx, ky) {
                let ck = compareBytes(l.utf8, r.utf8)
                if ck != 0 { return ck }
                let cv = compare(x[l]!, y[r]!)
                if cv != 0 { return cv }
            }
            return kx.count == ky.count ? 0 : (kx.count < ky.count ? -1 : 1)
        default:
            return 0
        }
    }

    /// Equality in Firestore's sense (`1 == 1.0`, NaN == NaN), as filters use it.
    public func isEquivalent(to other: Value) -> Bool {
        Value.compare(self, other) == 0
    }

    static func compareDoubles(_ x: Double, _ y: Double) -> Int {
        if x.isNaN { return y.isNaN ? 0 : -1 }
        if y.isNaN { return 1 }
        return x == y ? 0 : (x < y ? -1 : 1)
    }

    /// An Int64 against a double, exactly (no rounding of large integers).
    static func compareInteger(_ i: Int64, _ d: Double) -> Int {
        if d.isNaN { return 1 }
        if d >= 9_223_372_036_854_775_808.0 { return -1 }
        if d < -9_223_372_036_854_775_808.0 { return 1 }
        let floor = d.rounded(.down)
        let fi = Int64(floor)
        if i < fi { return -1 }
        if i > fi { return 1 }
        return d > floor ? -1 : 0
    }
}

func compareBytes<A: Sequence<UInt8>, B: Sequence<UInt8>>(_ a: A, _ b: B) -> Int {
    var ia = a.makeIterator()
    var ib = b.makeIterator()
    while true {
        switch (ia.next(), ib.next()) {
        case (nil, nil): return 0
        case (nil, _): return -1
        case (_, nil): return 1
        case (let x?, let y?): if x != y { return x < y ? -1 : 1 }
        }
    }
}

func utf8Less(_ a: String, _ b: String) -> Bool {
    compareBytes(a.utf8, b.utf8) < 0
}

import Testing
import TracerTesting

@_spi(Blocking) @testable import TracerStore

@Suite struct ValueOrderingTests {
    /// Firestore's cross-type order, with its equalities (1 == 1.0, -0.0 == 0.0).
    static let ascending: [[Value]] = [
        [.null],
        [false], [true],
        [.double(.nan)], [.double(-.infinity)], [.integer(Int64.min)], [-1, -1.0], [-0.5], [0, .double(-0.0), 0.0],
        [0.5], [1, 1.0], [.double(9_007_199_254_740_992), .integer(9_007_199_254_740_992)],
        [.integer(9_007_199_254_740_993)], [.integer(Int64.max)], [.double(9_223_372_036_854_775_808.0)],
        [.double(.infinity)],
        [.timestamp(Timestamp(microseconds: -1))], [.timestamp(Timestamp(microseconds: 0))],
        [""], ["\u{0}"], ["A"], ["a"], ["a\u{0}"], ["ab"], ["b"], ["é"], ["😀"],
        [.bytes([])], [.bytes([0])], [.bytes([0, 0])], [.bytes([1])], [.bytes([255])],
        [[]], [[.null]], [[1]], [[1, 2]], [[2]], [["a"]],
        [[:]], [["a": 1]], [["a": 1, "b": 0]], [["a": 2]], [["b": 0]],
    ]

    @Test func crossTypeOrderAndEquality() {
        let flat = Self.ascending.enumerated().flatMap { rank, group in group.map { (rank, $0) } }
        for (ra, a) in flat {
            for (rb, b) in flat {
                let expected = ra == rb ? 0 : (ra < rb ? -1 : 1)
                #expect(Value.compare(a, b) == expected, "compare(\(a), \(b))")
                let keys = compareBytes(IndexKey.key(a), IndexKey.key(b))
                #expect(keys == expected, "key order of \(a) and \(b)")
            }
        }
    }

    @Test func keyEncodingAgreesWithCompareOnRandomValues() {
        var g = SplitMix64(seed: 42)
        for _ in 0..<30_000 {
            let a = RandomValues.value(&g)
            let b = Bool.random(using: &g) ? a : RandomValues.value(&g)
            let expected = Value.compare(a, b)
            #expect(compareBytes(IndexKey.key(a), IndexKey.key(b)) == expected, "\(a) vs \(b)")
            var da: [UInt8] = []
            var db: [UInt8] = []
            IndexKey.append(a, descending: true, to: &da)
            IndexKey.append(b, descending: true, to: &db)
            #expect(compareBytes(da, db) == -expected, "descending \(a) vs \(b)")
        }
    }

    @Test func compositeKeysOrderComponentByComponent() {
        var g = SplitMix64(seed: 7)
        for _ in 0..<10_000 {
            let (a1, a2, b1, b2) = (
                RandomValues.value(&g), RandomValues.value(&g), RandomValues.value(&g), RandomValues.value(&g)
            )
            var ka: [UInt8] = []
            var kb: [UInt8] = []
            IndexKey.append(a1, to: &ka)
            IndexKey.append(a2, descending: true, to: &ka)
            IndexKey.append(b1, to: &kb)
            IndexKey.append(b2, descending: true, to: &kb)
            let c1 = Value.compare(a1, b1)
            let expected = c1 != 0 ? c1 : -Value.compare(a2, b2)
            #expect(compareBytes(ka, kb) == expected)
        }
    }
}

@Suite struct JSONTests {
    @Test func roundTripsEveryType() throws {
        var g = SplitMix64(seed: 1)
        for _ in 0..<5_000 {
            let v = RandomValues.value(&g)
            let text = JSON.string(v)
            let back = try JSON.parse(text)
            #expect(JSON.string(back) == text)
            #expect(Value.compare(back, v) == 0)
            #expect(back.typeOrder == v.typeOrder)
        }
    }

    @Test func keepsIntegersAndDoublesApart() throws {
        #expect(try JSON.parse("3") == .integer(3))
        #expect(try JSON.parse("3.0") == .double(3))
        #expect(try JSON.parse("1e2") == .double(100))
        #expect(try JSON.parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(JSON.string(.double(3)) == "3.0")
    }

    @Test func readsTaggedTypesAndSentinels() throws {
        #expect(
            try JSON.parse(#"{"__time__": "2026-11-22T10:00:00.5Z"}"#)
                == .timestamp(Timestamp(seconds: 1_795_341_600.5))
        )
        #expect(try JSON.parse(#"{"__bytes__": "AAH/"}"#) == .bytes([0, 1, 255]))
        #expect(try JSON.parse(#"{"__increment__": 2}"#, allowSentinels: true) == .increment(Int64(2)))
        #expect(throws: StoreError.self) { try JSON.parse(#"{"__increment__": 2}"#) }
        #expect(try JSON.parse(#"["\u00e9\ud83d\ude00\n"]"#) == ["é😀\n"])
    }

    @Test(arguments: ["", "{", "[1,]", "{\"a\" 1}", "tru", "\"\\x\"", "01x", "{} {}", "\"\u{1}\""])
    func rejectsMalformedText(_ text: String) {
        #expect(throws: StoreError.self) { try JSON.parse(text) }
    }

    /// A string of ASCII is taken as it is, any other is validated; an object's members are
    /// gathered first and made into its fields at the end (`JSON.swift`, `Parser`).
    @Test func readsStringsByTheirBytesAndObjectsWhole() throws {
        func parse(_ bytes: [UInt8]) throws -> Value {
            var bytes = bytes
            return try JSON.parse(bytes: &bytes, allowSentinels: false)
        }
        let quote = [UInt8(ascii: "\"")]
        for bad: [UInt8] in [[0xFF], [0x61, 0xFF], [0xC3, 0x28], [0x61, 0x62, 0xE2, 0x82]] {
            #expect(throws: StoreError.self, "value \(bad)") { try parse(quote + bad + quote) }
            #expect(throws: StoreError.self, "key \(bad)") {
                try parse(Array("{\"".utf8) + bad + Array("\": 1}".utf8))
            }
        }
        #expect(try parse(quote + Array("aé😀".utf8) + quote) == .string("aé😀"))
        #expect(try JSON.parse("{}") == .map([:]))
        #expect(try JSON.parse(#"{"a": 1, "b": 2, "a": 3}"#) == .map(["a": 3, "b": 2]))
        #expect(
            try JSON.parse(#"{"__time__": "yesterday", "__time__": "2026-11-22T10:00:00Z"}"#)
                == .timestamp(Timestamp(parsing: "2026-11-22T10:00:00Z")!)
        )
        let many = (0..<40).map { "\"k\($0)\": \($0)" }.joined(separator: ", ")
        #expect(try JSON.parse("{\(many)}").mapValue?.count == 40)
    }

    @Test func rejectsDeepNestingWithoutCrashing() {
        let deep = String(repeating: "[", count: 100_000)
        #expect(throws: StoreError.self) { try JSON.parse(deep) }
    }
}

@Suite struct TimestampTests {
    @Test(arguments: [
        ("2026-11-22T10:00:00Z", Int64(1_795_341_600_000_000)),
        ("2026-11-22T10:00:00.123456Z", 1_795_341_600_123_456),
        ("2026-11-22T12:00:00+02:00", 1_795_341_600_000_000),
        ("2026-11-22", 1_795_305_600_000_000),
        ("1969-12-31T23:59:59.999999Z", -1),
        ("1795341600.5", 1_795_341_600_500_000),
    ])
    func parses(_ text: String, _ micros: Int64) {
        #expect(Timestamp(parsing: text)?.microseconds == micros)
    }

    @Test(arguments: ["2026-13-01", "2026-11-22T25:00Z", "yesterday", "2026-11-22T10:00:00", "nan"])
    func rejects(_ text: String) {
        #expect(Timestamp(parsing: text) == nil)
    }

    @Test func formatsAndReparses() {
        var g = SplitMix64(seed: 3)
        for _ in 0..<2000 {
            let t = Timestamp(microseconds: Int64.random(in: -100_000_000_000_000...100_000_000_000_000, using: &g))
            #expect(Timestamp(parsing: t.iso8601) == t, "\(t.iso8601)")
        }
    }
}

@Suite struct IndexKeyNameTests {
    /// Whatever values come before it, and in whichever direction, the name reads back.
    @Test func namesReadBackFromRandomKeys() {
        var g = SplitMix64(seed: 77)
        for _ in 0..<5_000 {
            let values = (0..<Int.random(in: 0..<4, using: &g)).map { _ in
                (RandomValues.value(&g), Bool.random(using: &g))
            }
            let name = (0..<Int.random(in: 1..<5, using: &g)).map { _ in RandomValues.string(&g, minLength: 1) }
            let nameDescending = Bool.random(using: &g)
            var key: [UInt8] = []
            for (v, d) in values { IndexKey.append(v, descending: d, to: &key) }
            IndexKey.appendName(name, descending: nameDescending, to: &key)
            #expect(IndexKey.name(in: key, skipping: values.map(\.1), nameDescending: nameDescending) == name)
        }
    }
}

import Foundation
import NIOCore
import Testing
import TracerAPI
import TracerRanging
import TracerReplication
import TracerTesting

@testable import TracerCertificate
@testable import TracerServer
@_spi(Blocking) @testable import TracerStore

/// A mutational fuzzer over every decoder at a boundary: the store's JSON and its `__time__`
/// values, `DocumentCodec`'s stored form, the sync batch, the iBeacon parser, CBOR, Base45 and the
/// whole health certificate, the multipart body, query filters and times.
///
/// Each target starts from its seeds (Tests/Fixtures/fuzz/TARGET.seedN, and values made here),
/// and runs `Fuzz.iterations` inputs made by stacking random mutations: bytes flipped, inserted,
/// deleted, duplicated or spliced from another seed, and tokens that broke decoders before
/// (`1e300`, `{"__time__":`, NUL, invalid UTF-8, huge lengths). A trap ends the test process, so
/// a crash fails the run; where a round trip exists it must be a fixed point. The seed of the
/// random stream is printed, so a failure is repeated exactly (`TRACER_FUZZ_SEED`).
/// `Tools/test` runs a bounded number; `Tools/fuzz` runs many more.
@Suite(.serialized) struct FuzzTests {
    enum Fuzz {
        static let iterations = Int(ProcessInfo.processInfo.environment["TRACER_FUZZ_ITERATIONS"] ?? "") ?? 20000
        static let seed =
            UInt64(ProcessInfo.processInfo.environment["TRACER_FUZZ_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64.max)
        static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/fuzz")

        static func seeds(_ target: String) -> [[UInt8]] {
            let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            return files.filter { $0.hasPrefix(target + ".seed") }.sorted().compactMap {
                FileManager.default.contents(atPath: directory.appendingPathComponent($0).path).map(Array.init)
            }
        }

        static let tokens: [[UInt8]] =
            [
                #"{"__time__": "#, "1e300", "-1e300", "9223372036854775807", "-9223372036854775808", "NaN", #"\u0000"#,
                #"\ud800"#, "\"", "{", "}", "[", "]", ",", ":", "null", "true", "0.0", "-0", "1e-400", "9999999999999",
                #"{"__double__": "Infinity"}"#, #"{"__bytes__": "!!"}"#, "0000-01-01T00:00:00Z", "2026-02-30",
                "--b\r\n", "\r\n\r\n", "Content-Disposition: form-data; name=\"x\"\r\n", "--b--", " == ", " >= ", "`",
                "HC1:", "%%%", "..", "/",
            ].map { Array($0.utf8) } + [
                [0xC3, 0x28], [0xFF], [0x00], [0x80], [0xFF, 0xFF, 0xFF, 0xFF], [0x1B, 0xFF],
            ]

        /// One input: a seed with 1 to 8 mutations stacked.
        static func mutate(_ seeds: [[UInt8]], _ g: inout SplitMix64) -> [UInt8] {
            var b = seeds.randomElement(using: &g) ?? []
            for _ in 0..<Int.random(in: 1...8, using: &g) {
                let at = b.isEmpty ? 0 : Int.random(in: 0...b.count, using: &g)
                switch Int.random(in: 0..<7, using: &g) {
                case 0 where !b.isEmpty && at < b.count: b[at] ^= UInt8(1 << Int.random(in: 0..<8, using: &g))
                case 1 where !b.isEmpty && at < b.count: b[at] = UInt8.random(in: 0...255, using: &g)
                case 2: b.insert(contentsOf: tokens.randomElement(using: &g)!, at: at)
                case 3 where !b.isEmpty:
                    let end = min(b.count, at + Int.random(in: 1...16, using: &g))
                    if at < end { b.removeSubrange(at..<end) }
                case 4 where !b.isEmpty && at < b.count:
                    let end = min(b.count, at + Int.random(in: 1...32, using: &g))
                    b.insert(contentsOf: b[at..<end], at: at)
                case 5:
                    let other = seeds.randomElement(using: &g) ?? []
                    if !other.isEmpty {
                        let from = Int.random(in: 0..<other.count, using: &g)
                        b.insert(contentsOf: other[from..<min(other.count, from + 64)], at: at)
                    }
                default: b.insert(UInt8.random(in: 0...255, using: &g), at: at)
                }
            }
            return b
        }

        /// Runs `body` on the seeds and `iterations` mutations of them; returns how many ran.
        @discardableResult
        static func run(_ target: String, seeds extra: [[UInt8]] = [], _ body: ([UInt8]) throws -> Void) -> Int {
            let seeds = Self.seeds(target) + extra
            #expect(!seeds.isEmpty, "no seeds for \(target)")
            var g = SplitMix64(seed: target.utf8.reduce(seed) { $0 &* 31 &+ UInt64($1) })
            for s in seeds { try? body(s) }
            for _ in 0..<iterations { try? body(mutate(seeds, &g)) }
            print("fuzz \(target): \(seeds.count + iterations) inputs, seed \(seed), no crash")
            return seeds.count + iterations
        }
    }

    /// Stored JSON: anything parsed prints and parses back to the same value.
    @Test func storeJSON() {
        var g = SplitMix64(seed: Fuzz.seed)
        let made = (0..<20).map { _ in Array(JSON.string(RandomValues.value(&g)).utf8) }
        Fuzz.run("store-json", seeds: made) { bytes in
            var input = bytes
            let value = try JSON.parse(bytes: &input, allowSentinels: Bool.random())
            var printed = Array(JSON.string(value).utf8)
            let again = try JSON.parse(bytes: &printed, allowSentinels: true)
            #expect(JSON.string(again) == JSON.string(value), "\(String(decoding: bytes, as: UTF8.self))")
        }
    }

    /// The stored binary form: what decodes encodes to what decodes the same.
    @Test func documentCodec() throws {
        var g = SplitMix64(seed: Fuzz.seed)
        var made: [[UInt8]] = []
        for _ in 0..<30 {
            if case .map(let m) = RandomValues.value(&g, depth: 0), !m.isEmpty { made.append(DocumentCodec.encode(m)) }
        }
        made.append(DocumentCodec.encode(["t": .timestamp(.max), "s": "é", "a": [1, 2.5, .null]]))
        let path = try DocumentPath("c/d")
        Fuzz.run("document-codec", seeds: made) { bytes in
            let fields = try DocumentCodec.decode(bytes, path: path)
            let again = try DocumentCodec.decode(DocumentCodec.encode(fields), path: path)
            #expect(JSON.string(.map(again)) == JSON.string(.map(fields)))
        }
    }

    /// The sync wire: a batch that parses has checked times and valid paths.
    @Test func syncBatch() {
        Fuzz.run("sync-batch") { bytes in
            let batch = try SyncBatch(json: bytes)
            if let oldest = batch.backlogOldest { #expect(Timestamp(checkedSeconds: oldest) != nil) }
            #expect(Timestamp(checkedSeconds: batch.sentAt) != nil)
            for d in batch.documents { #expect((try? DocumentPath(d.path.description)) != nil) }
        }
    }

    @Test func iBeaconAdverts() {
        Fuzz.run("ibeacon") { bytes in
            _ = bytes.withUnsafeBytes { IBeaconParser.parse(advertisingData: $0) }
            _ = bytes.withUnsafeBytes { IBeaconParser.parse(companyID: 0x004C, data: $0) }
        }
    }

    /// Base45, zlib, CBOR and COSE, whole (`HC1:` texts) and layer by layer.
    @Test func healthCertificates() {
        let prefixes = Fuzz.seeds("certificate")
        var cbor: [[UInt8]] = []
        for p in prefixes {
            if let packed = try? Base45.decode(String(decoding: p.dropFirst(4), as: UTF8.self)) {
                cbor.append(packed)
                if let cose = try? Inflate.zlib(packed) { cbor.append(cose) }
            }
        }
        Fuzz.run("certificate") { bytes in
            let text = String(decoding: bytes, as: UTF8.self)
            if let c = try? HealthCertificate(text) {
                _ = CertificateVerifier.verify(text, trustList: nil, now: Date())
                _ = c.kind
            }
            _ = try? Base45.decode(String(decoding: bytes.dropFirst(4), as: UTF8.self))
        }
        Fuzz.run("cbor", seeds: cbor) { bytes in
            _ = try? Inflate.zlib(bytes)
            _ = try CBOR.decode(bytes)
        }
    }

    /// Report forms: parsed or refused, never more than the parts a form may have.
    @Test func multipartBodies() {
        Fuzz.run("multipart") { bytes in
            let form = try Form(ByteBuffer(bytes: bytes), boundary: "b")
            #expect(form.parts.count <= Form.maxParts)
        }
    }

    @Test func queryFiltersAndTimes() {
        Fuzz.run("filter") { bytes in _ = try Filter.parse(String(decoding: bytes, as: UTF8.self)) }
        Fuzz.run("timestamp") { bytes in
            if let t = Timestamp(parsing: String(decoding: bytes, as: UTF8.self)) {
                #expect(t.isInRange)
                #expect(Timestamp(parsing: t.iso8601) == t)
            }
        }
    }
}

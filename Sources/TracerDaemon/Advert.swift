import TracerRanging

/// One advert as BlueZ reports it. The sender's Bluetooth address is deliberately absent: it is
/// dropped where adverts are read and never reaches the ranging or the store.
public struct Advert: Sendable {
    /// Unix seconds: when it was heard (or, replayed, when it was recorded).
    public var time: Double
    /// dBm.
    public var rssi: Int
    /// Company id → the bytes after it (BlueZ's ManufacturerData).
    public var manufacturerData: [(company: UInt16, data: [UInt8])]
    /// The advertised TX power, when there is one.
    public var txPower: Int?

    public init(time: Double, rssi: Int, manufacturerData: [(company: UInt16, data: [UInt8])], txPower: Int? = nil) {
        self.time = time
        self.rssi = rssi
        self.manufacturerData = manufacturerData
        self.txPower = txPower
    }
}

extension Advert {
    /// Calls `body` with each iBeacon in the advert's manufacturer data (parsed in place).
    @inlinable
    public func forEachIBeacon(_ body: (IBeacon) throws -> Void) rethrows {
        for (company, data) in manufacturerData where company == IBeaconParser.apple {
            if let beacon = data.withUnsafeBytes({ IBeaconParser.parse(companyID: company, data: $0) }) {
                try body(beacon)
            }
        }
    }
}

/// Where adverts come from: a replay file, BlueZ, a simulator. Each is a stream of batches, so
/// a fast source costs one hand-over per batch rather than per advert.
public protocol AdvertSource: Sendable {
    /// A short name for logs (`replay:FILE`, `bluez:hci0`).
    var name: String { get }
    /// The adverts, in time order, until the source ends or the task is cancelled.
    func batches() -> AsyncThrowingStream<[Advert], any Error>
    /// Whether adverts carry their own times (replay): then the file's clock is the daemon's.
    var isReplay: Bool { get }
    /// Ends the stream and releases what the source holds (a live source stops scanning).
    func stop(timeout: Duration) async
}

extension AdvertSource {
    public func stop(timeout: Duration) {}
}

import Foundation
import Logging
import TracerDBus
import TracerRanging

/// Adverts from BlueZ over the system D-Bus (org.bluez.Adapter1, org.bluez.Device1).
///
/// One thread owns the connection: it reads and dispatches signals, makes BlueZ calls, and runs
/// the timers (re-arming, the stall watchdog, forgetting devices); adverts leave it in batches
/// for the ranging. Nothing here ends the source but the consumer: no bluetoothd, no adapter, a
/// powered-off adapter or a lost bus are waited out and logged.
public final class BlueZSource: AdvertSource, @unchecked Sendable {
    public struct Options: Sendable {
        /// `hci0`; nil takes the first powered adapter.
        public var adapter: String?
        /// The bus's address; nil is the system bus (`DBUS_SYSTEM_BUS_ADDRESS` is honoured).
        public var busAddress: String?
        /// Restart discovery when nothing arrives for this long while BlueZ says it is
        /// discovering (the silent stall of bluez#1126 and #1554).
        public var stallTimeout: Duration = .seconds(60)
        /// `RemoveDevice` for devices unseen for this long, so BlueZ's cache stays bounded.
        public var forgetAfter: Duration = .seconds(60)
        /// Adverts are handed over at least this often.
        public var batchInterval: Duration = .milliseconds(100)
        /// The first and the longest wait between attempts to reach the bus.
        public var reconnectBackoff: (first: Duration, longest: Duration) = (.milliseconds(250), .seconds(8))

        public init(adapter: String? = nil, busAddress: String? = nil) {
            self.adapter = adapter
            self.busAddress = busAddress
        }
    }

    /// What the source is doing, for the status line and the metrics.
    public struct Status: Sendable, Equatable {
        /// `waiting for bluetoothd`, `scanning on hci0`, …
        public var state = "starting"
        /// The adapter in use.
        public var adapter: String?
        /// Every D-Bus signal from BlueZ about a device.
        public var deviceSignals = 0
        /// Adverts handed to the ranging (devices with Apple manufacturer data).
        public var adverts = 0
        /// Devices BlueZ holds for this adapter, as far as tracer knows.
        public var devices = 0
        /// Times discovery was (re)started, and the last time.
        public var discoveryStarts = 0
        public var armedAt: Date?
        /// Times the stall watchdog restarted discovery.
        public var watchdogRestarts = 0
        /// Devices removed from BlueZ's cache.
        public var devicesRemoved = 0
        /// Connections to the bus after the first.
        public var reconnects = 0

        /// Whether discovery is on.
        public var isScanning: Bool { state.hasPrefix("scanning") }
    }

    public let options: Options
    public var name: String { "bluez:\(options.adapter ?? "first powered adapter")" }
    public var isReplay: Bool { false }
    let logger: Logger
    private let lock = NSLock()
    private var current = Status()
    private let stopped = Flag()
    private let finished = Flag()

    public init(options: Options, logger: Logger) {
        self.options = options
        self.logger = logger
    }

    public var status: Status {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    func update(_ body: (inout Status) -> Void) {
        lock.lock()
        body(&current)
        lock.unlock()
    }

    public func batches() -> AsyncThrowingStream<[Advert], any Error> {
        let (stream, continuation) = AsyncThrowingStream<[Advert], any Error>.makeStream()
        continuation.onTermination = { [stopped] _ in stopped.set() }
        let thread = Thread { [self] in
            run { continuation.yield($0) }
            continuation.finish()
            finished.set()
        }
        thread.name = "tracer.bluez"
        thread.start()
        return stream
    }

    /// Stops discovery and ends the stream; returns once the thread is done (at most `timeout`).
    public func stop(timeout: Duration = .seconds(1)) {
        stopped.set()
        let deadline = ContinuousClock.now + timeout
        while !finished.isSet, ContinuousClock.now < deadline { usleep(5_000) }
    }

    /// Connects, serves, and reconnects with backoff until stopped.
    private func run(_ emit: ([Advert]) -> Void) {
        var backoff = options.reconnectBackoff.first
        var connections = 0
        var lastFailure = ""
        while !stopped.isSet {
            let connection: DBusConnection
            do {
                connection = try options.busAddress.map { try DBusConnection(address: $0) } ?? DBusConnection.system()
                for rule in Session.matchRules { try connection.addMatch(rule) }
            } catch {
                let text = "\(error)"
                if text != lastFailure {
                    logger.warning("cannot reach the system bus; retrying", metadata: ["error": "\(text)"])
                    lastFailure = text
                }
                update { $0.state = "waiting for the system bus" }
                sleep(backoff)
                backoff = min(backoff * 2, options.reconnectBackoff.longest)
                continue
            }
            connections += 1
            if connections > 1 {
                update { $0.reconnects += 1 }
                logger.notice("connected to the system bus again")
            }
            backoff = options.reconnectBackoff.first
            lastFailure = ""
            var session = Session(source: self, connection: connection)
            session.serve(emit)
            if !stopped.isSet { logger.warning("lost the system bus; reconnecting") }
        }
    }

    private func sleep(_ duration: Duration) {
        let deadline = ContinuousClock.now + duration
        while !stopped.isSet, ContinuousClock.now < deadline { usleep(20_000) }
    }

    /// One connection's life: BlueZ's state as tracer follows it.
    struct Session {
        static let bluez = "org.bluez"
        static let adapterInterface = "org.bluez.Adapter1"
        static let deviceInterface = "org.bluez.Device1"
        static let objectManager = "org.freedesktop.DBus.ObjectManager"
        static let properties = "org.freedesktop.DBus.Properties"

        static let matchRules = [
            "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"
                + "member='NameOwnerChanged',arg0='org.bluez'",
            "type='signal',sender='org.bluez',interface='org.freedesktop.DBus.ObjectManager'",
            "type='signal',sender='org.bluez',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'",
        ]

        struct Device {
            var manufacturerData: [(company: UInt16, data: [UInt8])] = []
            var txPower: Int?
            var rssi: Int?
            var lastSeen: Double
            /// Paired, trusted or connected devices are the kiosk's own: never removed.
            var kept = false
        }

        let source: BlueZSource
        let connection: DBusConnection
        var logger: Logger { source.logger }
        var options: Options { source.options }

        var adapterPath: String?
        var powered = false
        var discovering = false
        /// StartDiscovery succeeded and has not been undone since.
        var armed = false
        var nextArm = 0.0
        var armedAt = 0.0
        var lastActivity = 0.0
        var nextSweep = 0.0
        var waitingSaid = ""
        var devices: [String: Device] = [:]
        var pending: [Advert] = []
        var lastEmit = 0.0

        init(source: BlueZSource, connection: DBusConnection) {
            self.source = source
            self.connection = connection
        }

        static func now() -> Double { Date().timeIntervalSince1970 }

        mutating func serve(_ emit: ([Advert]) -> Void) {
            if bluezIsUp() { synchronise() } else { waiting("waiting for bluetoothd (org.bluez) on the system bus") }
            let batchInterval = options.batchInterval / .seconds(1)
            while !source.stopped.isSet {
                guard let signals = connection.receive(timeout: .milliseconds(20)) else {
                    flush(emit)
                    return
                }
                for signal in signals { handle(signal) }
                let now = Self.now()
                timers(now)
                if !pending.isEmpty, pending.count >= 1024 || now - lastEmit >= batchInterval { flush(emit) }
                if pending.isEmpty, now - lastEmit >= 1 { flush(emit) }  // an empty batch: the ranging's clock
            }
            flush(emit)
            if armed, let adapterPath {
                // Leaving: discovery off (BlueZ would also end it when this client leaves the bus).
                _ = try? call(adapterPath, Self.adapterInterface, "StopDiscovery", timeout: .milliseconds(500))
            }
        }

        mutating func flush(_ emit: ([Advert]) -> Void) {
            lastEmit = Self.now()
            let count = pending.count
            emit(pending)
            pending.removeAll(keepingCapacity: true)
            source.update {
                $0.adverts += count
                $0.devices = devices.count
            }
        }

        func call(
            _ path: String,
            _ interface: String,
            _ method: String,
            _ arguments: [DBusValue] = [],
            timeout: Duration = .seconds(5)
        ) throws -> [DBusValue] {
            try connection.call(
                destination: Self.bluez,
                path: path,
                interface: interface,
                method: method,
                arguments,
                timeout: timeout
            )
        }

        func bluezIsUp() -> Bool {
            let reply = try? connection.call(
                destination: "org.freedesktop.DBus",
                path: "/org/freedesktop/DBus",
                interface: "org.freedesktop.DBus",
                method: "NameHasOwner",
                [.string(Self.bluez)]
            )
            return reply?.first?.bool == true
        }

        /// Says what the source waits for, once per change.
        mutating func waiting(_ what: String) {
            source.update { $0.state = what }
            guard what != waitingSaid else { return }
            waitingSaid = what
            logger.warning("\(what)")
        }

        /// Reads BlueZ's objects and chooses the adapter.
        mutating func synchronise() {
            let objects: [String: DBusValue]
            do {
                objects = try call("/", Self.objectManager, "GetManagedObjects").first?.dictionary ?? [:]
            } catch {
                logger.warning("cannot read BlueZ's objects", metadata: ["error": "\(error)"])
                adapterPath = nil
                return
            }
            var adapters: [(path: String, powered: Bool, discovering: Bool)] = []
            for (path, interfaces) in objects {
                guard let properties = interfaces.dictionary?[Self.adapterInterface]?.dictionary else { continue }
                adapters.append(
                    (path, properties["Powered"]?.bool ?? false, properties["Discovering"]?.bool ?? false)
                )
            }
            adapters.sort { $0.path < $1.path }
            let chosen =
                if let name = options.adapter {
                    adapters.first { $0.path == "/org/bluez/\(name)" }
                } else {
                    adapters.first { $0.powered } ?? adapters.first
                }
            guard let chosen else {
                adapterPath = nil
                devices = [:]
                waiting(
                    options.adapter.map { "no adapter \($0) yet; waiting for it" }
                        ?? "no Bluetooth adapter yet; waiting for one"
                )
                return
            }
            adapterPath = chosen.path
            powered = chosen.powered
            discovering = chosen.discovering
            armed = false
            let now = Self.now()
            nextArm = now
            devices = [:]
            for (path, interfaces) in objects where path.hasPrefix(chosen.path + "/") {
                guard let properties = interfaces.dictionary?[Self.deviceInterface]?.dictionary else { continue }
                var device = Device(lastSeen: now)
                update(&device, properties)
                devices[path] = device
            }
            source.update { $0.adapter = adapterName }
            if !powered { waiting("\(adapterName) is powered off; waiting for it to be powered on") }
        }

        var adapterName: String { adapterPath.map { String($0.split(separator: "/").last ?? "") } ?? "" }

        /// SetDiscoveryFilter (LE, every duplicate) and StartDiscovery.
        mutating func arm(_ now: Double) {
            guard let adapterPath, powered else { return }
            do {
                _ = try call(
                    adapterPath,
                    Self.adapterInterface,
                    "SetDiscoveryFilter",
                    [.properties(["Transport": .string("le"), "DuplicateData": .bool(true)])]
                )
                do {
                    _ = try call(adapterPath, Self.adapterInterface, "StartDiscovery")
                } catch let error as DBusError where error.name == "org.bluez.Error.InProgress" {
                    // Already discovering for this client: armed all the same.
                }
            } catch {
                nextArm = now + 1
                waiting("cannot start discovery on \(adapterName) (\(error)); retrying")
                return
            }
            armed = true
            armedAt = now
            lastActivity = now
            waitingSaid = ""
            source.update {
                $0.discoveryStarts += 1
                $0.armedAt = Date()
                $0.state = "scanning on \(adapterName)"
            }
            logger.notice("scanning", metadata: ["adapter": "\(adapterName)"])
        }

        mutating func timers(_ now: Double) {
            if adapterPath != nil, powered, !armed, now >= nextArm { arm(now) }
            // Discovery ended under us (another client, BlueZ itself): start it again.
            if armed, !discovering, now - armedAt > 1 {
                armed = false
                nextArm = now
            }
            if armed, discovering, now - lastActivity > options.stallTimeout / .seconds(1), let adapterPath {
                logger.warning(
                    "nothing heard while discovering; restarting discovery",
                    metadata: ["adapter": "\(adapterName)", "seconds": "\(String(format: "%.1f", now - lastActivity))"]
                )
                _ = try? call(adapterPath, Self.adapterInterface, "StopDiscovery")
                armed = false
                nextArm = now
                lastActivity = now
                source.update { $0.watchdogRestarts += 1 }
            }
            if now >= nextSweep, let adapterPath {
                nextSweep = now + min(5, options.forgetAfter / .seconds(2))
                let horizon = now - options.forgetAfter / .seconds(1)
                for (path, device) in devices where device.lastSeen < horizon && !device.kept {
                    devices[path] = nil
                    do {
                        _ = try call(adapterPath, Self.adapterInterface, "RemoveDevice", [.objectPath(path)])
                        source.update { $0.devicesRemoved += 1 }
                    } catch {
                        logger.debug("RemoveDevice failed", metadata: ["error": "\(error)"])
                    }
                }
            }
        }

        mutating func handle(_ signal: DBusSignal) {
            let args = signal.arguments
            switch (signal.interface, signal.member) {
            case ("org.freedesktop.DBus", "NameOwnerChanged"):
                guard args.count == 3, args[0].string == Self.bluez else { return }
                if args[2].string?.isEmpty ?? true {
                    adapterPath = nil
                    armed = false
                    devices = [:]
                    waiting("bluetoothd left the system bus; waiting for it to come back")
                } else {
                    logger.notice("bluetoothd is on the system bus")
                    synchronise()
                }
            case (Self.objectManager, "InterfacesAdded"):
                guard args.count == 2, let path = args[0].string, let interfaces = args[1].dictionary else { return }
                if interfaces[Self.adapterInterface] != nil, adapterPath == nil {
                    synchronise()
                } else if let properties = interfaces[Self.deviceInterface]?.dictionary, isOurs(path) {
                    var device = Device(lastSeen: Self.now())
                    update(&device, properties)
                    devices[path] = device
                    heard(device, rssiChanged: properties["RSSI"] != nil)
                }
            case (Self.objectManager, "InterfacesRemoved"):
                guard args.count == 2, let path = args[0].string, case .array(_, let names) = args[1] else { return }
                let removed = Set(names.compactMap(\.string))
                if path == adapterPath, removed.contains(Self.adapterInterface) {
                    let name = adapterName
                    adapterPath = nil
                    armed = false
                    devices = [:]
                    waiting("adapter \(name) was removed; waiting for an adapter")
                } else if removed.contains(Self.deviceInterface) {
                    devices[path] = nil
                }
            case (Self.properties, "PropertiesChanged"):
                guard args.count >= 2, let interface = args[0].string, let changed = args[1].dictionary else { return }
                if interface == Self.deviceInterface, isOurs(signal.path) {
                    var device = devices[signal.path] ?? Device(lastSeen: 0)
                    device.lastSeen = Self.now()
                    update(&device, changed)
                    devices[signal.path] = device
                    source.update { $0.deviceSignals += 1 }
                    if changed["RSSI"] != nil || changed["ManufacturerData"] != nil {
                        heard(device, rssiChanged: true)
                    }
                } else if interface == Self.adapterInterface, signal.path == adapterPath {
                    adapterChanged(changed)
                }
            default:
                break
            }
        }

        func isOurs(_ path: String) -> Bool {
            guard let adapterPath else { return false }
            return path.hasPrefix(adapterPath + "/")
        }

        mutating func adapterChanged(_ changed: [String: DBusValue]) {
            if let on = changed["Powered"]?.bool, on != powered {
                powered = on
                armed = false
                if on {
                    logger.notice("adapter powered on", metadata: ["adapter": "\(adapterName)"])
                    nextArm = Self.now()
                } else {
                    discovering = false
                    waiting("\(adapterName) is powered off; waiting for it to be powered on")
                }
            }
            if let on = changed["Discovering"]?.bool { discovering = on }
        }

        /// An advert: the device's last manufacturer data with its newest RSSI.
        mutating func heard(_ device: Device, rssiChanged: Bool) {
            lastActivity = Self.now()
            guard rssiChanged, let rssi = device.rssi,
                device.manufacturerData.contains(where: { $0.company == IBeaconParser.apple })
            else { return }
            pending.append(
                Advert(
                    time: device.lastSeen,
                    rssi: rssi,
                    manufacturerData: device.manufacturerData,
                    txPower: device.txPower
                )
            )
        }

        /// Device1 properties into what tracer keeps (never the address).
        func update(_ device: inout Device, _ properties: [String: DBusValue]) {
            if let rssi = properties["RSSI"]?.integer { device.rssi = rssi }
            if let tx = properties["TxPower"]?.integer { device.txPower = tx }
            if let data = properties["ManufacturerData"] {
                device.manufacturerData = Self.manufacturerData(data.unwrapped)
            }
            for flag in ["Paired", "Trusted", "Connected"] where properties[flag]?.bool == true {
                device.kept = true
            }
        }

        /// `a{qv}` (company → `ay`) as BlueZ sends it; `aa{qv}` as python3-dbusmock's bluez5
        /// template does.
        static func manufacturerData(_ value: DBusValue) -> [(company: UInt16, data: [UInt8])] {
            switch value {
            case .dictionary("q", "v", let entries):
                return entries.compactMap { entry in
                    guard case .uint16(let company) = entry.key, let bytes = entry.value.unwrapped.bytes else {
                        return nil
                    }
                    return (company, bytes)
                }
            case .array("a{qv}", let dictionaries):
                return dictionaries.flatMap { manufacturerData($0) }
            default:
                return []
            }
        }
    }
}

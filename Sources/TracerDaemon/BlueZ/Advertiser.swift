import Foundation
import ServiceLifecycle
import TracerBadges
import TracerDBus
import TracerRanging

/// `tracer advertise`: this machine as a badge (rotating ids) or a fixed beacon, through BlueZ's
/// `org.bluez.LEAdvertisingManager1`. It exports an `org.bluez.LEAdvertisement1` object (a
/// non-connectable broadcast with the iBeacon in Apple's manufacturer data), registers it on the
/// adapter, and for a badge registers a new one at each epoch's start with that epoch's id.
public final class Advertiser: Service, Sendable {
    /// What to advertise.
    public enum Identity: Sendable {
        /// A rotating badge: the site's badge UUID, the badge's key, K.
        case badge(uuid: UUIDBytes, key: [UInt8], bits: Int)
        /// A fixed beacon (or a static device).
        case fixed(uuid: UUIDBytes, major: UInt16, minor: UInt16)
    }

    public let identity: Identity
    public let adapter: String
    public let power: Int8
    /// The bus BlueZ is on (nil: the system bus).
    let busAddress: String?
    let clock: @Sendable () -> Double
    /// Each advert as it starts (for the command's output): major, minor, and when it ends (nil: never).
    let started: @Sendable (UInt16, UInt16, Double?) -> Void
    let stopped = Flag()

    public init(
        identity: Identity,
        adapter: String,
        power: Int8 = -59,
        busAddress: String? = nil,
        clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 },
        started: @escaping @Sendable (UInt16, UInt16, Double?) -> Void
    ) {
        self.identity = identity
        self.adapter = adapter
        self.power = power
        self.busAddress = busAddress
        self.clock = clock
        self.started = started
    }

    static let managerInterface = "org.bluez.LEAdvertisingManager1"
    static let advertisementInterface = "org.bluez.LEAdvertisement1"

    /// The major and minor to advertise at `time`, and when they change (nil: never).
    public func id(at time: Double) -> (major: UInt16, minor: UInt16, until: Double?) {
        switch identity {
        case .fixed(_, let major, let minor):
            return (major, minor, nil)
        case .badge(_, let key, let bits):
            let start = RotatingID.epochStart(time, bits: bits)
            let id = RotatingID.id(key: .init(data: key), epochStart: start, bits: bits)
            return (id.major, id.minor, Double(start) + Double(1 << bits))
        }
    }

    var uuid: UUIDBytes {
        switch identity {
        case .badge(let uuid, _, _), .fixed(let uuid, _, _): uuid
        }
    }

    /// The advertisement's properties, as BlueZ reads them (`GetAll`).
    func properties(major: UInt16, minor: UInt16) -> DBusValue {
        var payload: [UInt8] = [0x02, 0x15]
        withUnsafeBytes(of: uuid.high.bigEndian) { payload += $0 }
        withUnsafeBytes(of: uuid.low.bigEndian) { payload += $0 }
        payload += [UInt8(major >> 8), UInt8(major & 0xFF), UInt8(minor >> 8), UInt8(minor & 0xFF)]
        payload.append(UInt8(bitPattern: power))
        return .dictionary(
            key: "s",
            value: "v",
            [
                .init(.string("Type"), .variant(.string("broadcast"))),
                .init(
                    .string("ManufacturerData"),
                    .variant(
                        .dictionary(
                            key: "q",
                            value: "v",
                            [
                                .init(
                                    .uint16(IBeaconParser.apple),
                                    .variant(.array(element: "y", payload.map { .byte($0) }))
                                )
                            ]
                        )
                    )
                ),
            ]
        )
    }

    /// Registers adverts until shut down (or cancelled); the last is unregistered on the way out.
    /// A BlueZ that refuses (no adapter, powered off, no advertising) ends it with that error.
    public func run() async throws {
        let outcome: Result<Void, any Error> = await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                // The loop's thread ends within one wait (200 ms) of the flag: waited for here,
                // so that the advert is unregistered before this returns.
                await withCheckedContinuation { continuation in
                    let thread = Thread { [self] in continuation.resume(returning: Result { try advertise() }) }
                    thread.name = "tracer.advertise"
                    thread.start()
                }
            } onGracefulShutdown: {
                self.stopped.set()
            }
        } onCancel: {
            stopped.set()
        }
        try outcome.get()
    }

    /// The advertising loop, on its own thread: D-Bus calls are answered while it waits. What to
    /// do next is `AdvertiserMachine`'s to decide; this runs its actions on the bus.
    func advertise() throws {
        let bus: DBusConnection
        do { bus = try busAddress.map { try DBusConnection(address: $0) } ?? DBusConnection.system() } catch let e
            as DBusError
        {
            throw AdvertiseError(e, adapter: adapter)
        }
        var machine = AdvertiserMachine(adapter: adapter) { [self] in id(at: $0) }
        var action = machine.start(now: clock())
        while true {
            let event: AdvertiserMachine.Event
            switch action {
            case .register(let advert, let replacing):
                export(advert, on: bus)
                if let replacing { takeDown(replacing, on: bus, timeout: .seconds(5)) }
                do {
                    _ = try bus.callDispatching(
                        destination: "org.bluez",
                        path: adapterPath,
                        interface: Self.managerInterface,
                        method: "RegisterAdvertisement",
                        [.objectPath(advert.path), .dictionary(key: "s", value: "v", [])]
                    )
                    event = .registered
                } catch let e as DBusError {
                    bus.unexport(advert.path)
                    event = .refused(AdvertiseError(e, adapter: adapter))
                }
            case .wait(let until, let announce):
                if let announce { started(announce.major, announce.minor, announce.until) }
                // A short wait, answering BlueZ meanwhile: the stop and the epoch's end are seen
                // within 200 ms.
                if stopped.isSet {
                    event = .stop
                } else if until.map({ clock() >= $0 }) == true {
                    event = .tick(now: clock())
                } else {
                    event = bus.receive(timeout: .milliseconds(200)) == nil ? .busGone : .tick(now: clock())
                }
            case .unregister(let advert):
                takeDown(advert, on: bus, timeout: .seconds(2))
                event = .tick(now: clock())
            case .finish(let error):
                if let error { throw error }
                return
            }
            action = machine.handle(event)
        }
    }

    var adapterPath: String { "/org/bluez/\(adapter)" }

    /// The advertisement's object, answering BlueZ's `GetAll` and `Release`.
    func export(_ advert: AdvertiserMachine.Advert, on bus: DBusConnection) {
        let properties = self.properties(major: advert.major, minor: advert.minor)
        let path = advert.path
        bus.export(path) { call in
            switch (call.interface, call.member) {
            case ("org.freedesktop.DBus.Properties", "GetAll"):
                return .success([properties])
            case ("org.freedesktop.DBus.ObjectManager", "GetManagedObjects"):
                return .success([
                    .dictionary(
                        key: "o",
                        value: "a{sa{sv}}",
                        [
                            .init(
                                .objectPath(path),
                                .dictionary(
                                    key: "s",
                                    value: "a{sv}",
                                    [.init(.string(Self.advertisementInterface), properties)]
                                )
                            )
                        ]
                    )
                ])
            case (Self.advertisementInterface, "Release"):
                return .success([])
            default:
                return .failure(
                    DBusError(
                        name: "org.freedesktop.DBus.Error.UnknownMethod",
                        message: "\(call.interface).\(call.member)"
                    )
                )
            }
        }
    }

    /// Unregisters the advert (BlueZ's failure to is not this program's to report) and unexports it.
    func takeDown(_ advert: AdvertiserMachine.Advert, on bus: DBusConnection, timeout: Duration) {
        _ = try? bus.callDispatching(
            destination: "org.bluez",
            path: adapterPath,
            interface: Self.managerInterface,
            method: "UnregisterAdvertisement",
            [.objectPath(advert.path)],
            timeout: timeout
        )
        bus.unexport(advert.path)
    }
}

/// Why BlueZ would not advertise: a code to decide by, what it concerns (the adapter and the
/// D-Bus error's name), and one line a person can act on.
public struct AdvertiseError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Code: String, Sendable, Equatable {
        /// No org.bluez on the system bus.
        case bluezNotRunning
        /// No such adapter, or one that cannot advertise (BlueZ older than 5.48).
        case noAdapter
        case poweredOff
        /// Every advertising slot is taken (another program advertises).
        case noSlot
        /// No system bus to reach BlueZ, or it went away.
        case noBus
        /// BlueZ refused for another reason (its error is in the context).
        case refused
    }

    public let code: Code
    /// The adapter, and the D-Bus error's name: `hci0: org.bluez.Error.NotReady`.
    public let context: String
    public let description: String

    init(_ e: DBusError, adapter: String) {
        // One line: a stand-in's Python error carries its traceback.
        let message = e.message.split(separator: "\n").first.map(String.init) ?? ""
        context = "\(adapter): \(e.name)"
        switch e.name {
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
            code = .bluezNotRunning
            description = "BlueZ is not running (no org.bluez on the system bus): systemctl start bluetooth"
        case "org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.DBus.Error.UnknownMethod",
            "org.freedesktop.DBus.Error.UnknownInterface":
            code = .noAdapter
            description =
                "no Bluetooth adapter \(adapter) that can advertise (bluetoothctl list shows the adapters; LE advertising needs BlueZ 5.48 or later)"
        case "org.bluez.Error.NotReady":
            code = .poweredOff
            description = "\(adapter) is powered off: bluetoothctl power on"
        case "org.bluez.Error.NotPermitted":
            code = .noSlot
            description = "\(adapter) has no advertising slot left (another program advertises): \(message)"
        case "org.freedesktop.DBus.Error.Disconnected":
            code = .noBus
            description = "the system bus went away while \(adapter) advertised (dbus stopped or restarted)"
        case let name where e.call?.hasPrefix("connect") == true || e.call?.hasPrefix("register") == true:
            code = .noBus
            description = "no system bus to reach BlueZ (\(name): \(message))"
        default:
            code = .refused
            description = "BlueZ would not advertise on \(adapter): \(e.name): \(message)"
        }
    }
}

import Foundation
import Logging
import Synchronization
import TracerDBus
import TracerModel
import TracerRanging

/// Adverts from BlueZ over the system D-Bus (org.bluez.Adapter1, org.bluez.Device1).
///
/// One thread owns the connection: it reads and dispatches signals, makes BlueZ calls, and runs
/// the timers (re-arming, the stall watchdog, forgetting devices); adverts leave it in batches
/// for the ranging. Nothing here ends the source but the consumer: no bluetoothd, no adapter, a
/// powered-off adapter or a lost bus are waited out and logged.
public final class BlueZSource: AdvertSource, Sendable {
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
        /// Signals are read at most this often: a round takes all that came since the last.
        /// Woken for each of 2,000 signals a second, the daemon spent a third of its time in
        /// the kernel waking and polling; every 10 ms, an advert's time is at most 10 ms late
        /// (its window is 30 s).
        public var shortestRound: Duration = .milliseconds(10)
        /// The first and the longest wait between attempts to reach the bus.
        public var reconnectBackoff = Backoff(first: .milliseconds(250), longest: .seconds(8))

        public init(adapter: String? = nil, busAddress: String? = nil) {
            self.adapter = adapter
            self.busAddress = busAddress
        }
    }

    /// What the source is doing, for the status line and the metrics.
    public struct Status: Sendable, Equatable {
        /// Waiting for something, or scanning (`description` is the status line's wording).
        public var state = BlueZState.starting
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
        public var isScanning: Bool { state.isScanning }
    }

    public let options: Options
    public var name: String { "bluez:\(options.adapter ?? "first powered adapter")" }
    public var isReplay: Bool { false }
    let logger: Logger
    private let current = Mutex(Status())
    private let stopped = Flag()
    private let finished = Flag()

    public init(options: Options, logger: Logger) {
        self.options = options
        self.logger = logger
    }

    public var status: Status { current.withLock { $0 } }

    func update(_ body: (inout Status) -> Void) {
        current.withLock { body(&$0) }
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
    /// The wait is a thread's of its own, never a cooperative one (the daemon stops its source on
    /// its way out, beside the last write's task).
    public func stop(timeout: Duration = .seconds(1)) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let waiter = Thread { [self] in
                stopWaiting(timeout: timeout)
                done.resume()
            }
            waiter.name = "tracer.bluez.stop"
            waiter.start()
        }
    }

    /// The same, blocking the calling thread (a test's teardown).
    package func stopWaiting(timeout: Duration = .seconds(1)) {
        stopped.set()
        let deadline = ContinuousClock.now + timeout
        while !finished.isSet, ContinuousClock.now < deadline { usleep(5_000) }
    }

    /// Connects, serves, and reconnects with backoff until stopped.
    private func run(_ emit: ([Advert]) -> Void) {
        var backoff = options.reconnectBackoff
        var connections = 0
        var lastFailure = ""
        while !stopped.isSet {
            let connection: DBusConnection
            let stream: DBusSignalStream
            do {
                // Calls on libdbus; the signals on a connection of their own, read by tracer's
                // own wire code (DBusSignalStream says why). The rules are in place before the
                // session first reads BlueZ's objects, so nothing between is missed.
                connection = try options.busAddress.map { try DBusConnection(address: $0) } ?? DBusConnection.system()
                stream =
                    try options.busAddress.map { try DBusSignalStream(address: $0, rules: Session.matchRules) }
                    ?? DBusSignalStream.system(rules: Session.matchRules)
            } catch {
                let text = "\(error)"
                if text != lastFailure {
                    logger.warning("cannot reach the system bus; retrying", metadata: ["error": "\(text)"])
                    lastFailure = text
                }
                update { $0.state = .waitingForBus }
                sleep(backoff.failed())
                continue
            }
            connections += 1
            if connections > 1 {
                update { $0.reconnects += 1 }
                logger.notice("connected to the system bus again")
            }
            backoff.succeeded()
            lastFailure = ""
            var session = Session(source: self, connection: connection, stream: stream)
            session.serve(emit)
            if !stopped.isSet { logger.warning("lost the system bus; reconnecting") }
        }
    }

    private func sleep(_ duration: Duration) {
        let deadline = ContinuousClock.now + duration
        while !stopped.isSet, ContinuousClock.now < deadline { usleep(20_000) }
    }

    /// One connection's life: signals decoded into the state machine's events, its actions
    /// performed as D-Bus calls, adverts batched for the ranging.
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

        let source: BlueZSource
        let connection: DBusConnection
        let stream: DBusSignalStream
        var machine: BlueZStateMachine
        /// The machine's clock: monotonic seconds since the session began (an NTP step on the
        /// kiosk moves neither the watchdog nor the forgetting).
        let began = ContinuousClock.now
        var pending: [Advert] = []
        /// The buffer `handle` gives the machine for its actions.
        var actions: [BlueZStateMachine.Action] = []
        var lastEmit: ContinuousClock.Instant
        var logger: Logger { source.logger }
        var options: Options { source.options }

        init(source: BlueZSource, connection: DBusConnection, stream: DBusSignalStream) {
            self.source = source
            self.connection = connection
            self.stream = stream
            machine = BlueZStateMachine(
                adapter: source.options.adapter,
                timing: .init(
                    stallTimeout: source.options.stallTimeout / .seconds(1),
                    forgetAfter: source.options.forgetAfter / .seconds(1)
                )
            )
            lastEmit = began
        }

        var now: Double {
            // From the components: dividing the Durations goes through 128-bit integers, for
            // each signal.
            let (seconds, attoseconds) = (ContinuousClock.now - began).components
            return Double(seconds) + Double(attoseconds) * 1e-18
        }

        mutating func serve(_ emit: ([Advert]) -> Void) {
            handle(.connected(bluezIsUp: bluezIsUp()))
            publish()
            var roundStarted = ContinuousClock.now
            while !source.stopped.isSet {
                let early = roundStarted + options.shortestRound - ContinuousClock.now
                if early > .zero { Self.pause(early) }
                roundStarted = ContinuousClock.now
                let open = stream.receive(timeout: .milliseconds(20)) { (signal: WireSignal) in
                    if let event = try Self.event(signal) { handle(event) }
                }
                guard open else {
                    flush(emit)
                    return
                }
                handle(.tick)
                // Once per round, not per signal: 2,000 signals a second need not take the lock.
                publish()
                let sinceEmit = ContinuousClock.now - lastEmit
                if !pending.isEmpty, pending.count >= 1024 || sinceEmit >= options.batchInterval { flush(emit) }
                if pending.isEmpty, sinceEmit >= .seconds(1) { flush(emit) }  // an empty batch: the ranging's clock
            }
            flush(emit)
            if machine.armed, let adapterPath = machine.adapterPath {
                // Leaving: discovery off (BlueZ would also end it when this client leaves the bus).
                _ = try? call(adapterPath, Self.adapterInterface, "StopDiscovery", timeout: .milliseconds(500))
            }
        }

        static func pause(_ duration: Duration) {
            let (seconds, attoseconds) = duration.components
            var time = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
            var left = timespec()
            while nanosleep(&time, &left) != 0, errno == EINTR { time = left }
        }

        /// Feeds an event to the machine and performs what it asks, feeding back the answers.
        mutating func handle(_ event: BlueZStateMachine.Event) {
            // Answers are handled in the order they come; the queue is made only when one does
            // (an advert's event has none, and comes a few thousand times a second), and the
            // actions go to one buffer kept for them.
            var queue: [BlueZStateMachine.Event] = []
            var next: BlueZStateMachine.Event? = event
            while let current = next {
                actions.removeAll(keepingCapacity: true)
                machine.handle(current, now: now, into: &actions)
                for action in actions {
                    if let answer = perform(action) { queue.append(answer) }
                }
                next = queue.isEmpty ? nil : queue.removeFirst()
            }
        }

        /// The machine's state and counters into the source's status, for status lines and metrics.
        func publish() {
            let machine = machine
            source.update {
                $0.state = machine.state
                if machine.adapterPath != nil { $0.adapter = machine.adapter }
                $0.deviceSignals = machine.counters.deviceSignals
                $0.discoveryStarts = machine.counters.discoveryStarts
                $0.watchdogRestarts = machine.counters.watchdogRestarts
                $0.devicesRemoved = machine.counters.devicesRemoved
                $0.devices = machine.devices.count
            }
        }

        /// One action as D-Bus calls; the event that answers it, if any.
        mutating func perform(_ action: BlueZStateMachine.Action) -> BlueZStateMachine.Event? {
            switch action {
            case .readObjects:
                return readObjects()
            case .arm(let adapterPath):
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
                    return .armFailed(reason: "\(error)")
                }
                source.update { $0.armedAt = Date() }
                return .armed
            case .stopDiscovery(let adapterPath):
                _ = try? call(adapterPath, Self.adapterInterface, "StopDiscovery")
                return nil
            case .removeDevice(let adapterPath, let device):
                do {
                    _ = try call(adapterPath, Self.adapterInterface, "RemoveDevice", [.objectPath(device)])
                    return .deviceForgotten(path: device)
                } catch {
                    logger.debug("RemoveDevice failed", metadata: ["error": "\(error)"])
                    return nil
                }
            case .advert(let rssi, let data, let txPower):
                pending.append(
                    Advert(
                        time: Date().timeIntervalSince1970,
                        rssi: rssi,
                        manufacturerData: data.map { ($0.company, $0.data) },
                        txPower: txPower
                    )
                )
                return nil
            case .log(let level, let message):
                logger.log(level: level, "\(message)", metadata: ["bluez.adapter": "\(machine.adapter)"])
                return nil
            }
        }

        mutating func flush(_ emit: ([Advert]) -> Void) {
            lastEmit = ContinuousClock.now
            let count = pending.count
            emit(pending)
            pending = []  // not emptied in place: the consumer holds the batch (DBusSignalStream.receive says why)
            source.update { $0.adverts += count }
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

        /// GetManagedObjects, as the machine's `.objects`.
        func readObjects() -> BlueZStateMachine.Event {
            let objects: [String: DBusValue]
            do {
                objects = try call("/", Self.objectManager, "GetManagedObjects").first?.dictionary ?? [:]
            } catch {
                logger.warning("cannot read BlueZ's objects", metadata: ["error": "\(error)"])
                return .objects(adapters: [], devices: nil)
            }
            var adapters: [BlueZStateMachine.AdapterInfo] = []
            var devices: [String: BlueZStateMachine.DeviceProperties] = [:]
            for (path, interfaces) in objects {
                if let properties = interfaces.dictionary?[Self.adapterInterface]?.dictionary {
                    adapters.append(
                        .init(
                            path: path,
                            powered: properties["Powered"]?.bool ?? false,
                            discovering: properties["Discovering"]?.bool ?? false
                        )
                    )
                }
                if case .dictionary(_, _, let properties)? = interfaces.dictionary?[Self.deviceInterface] {
                    devices[path] = Self.device(properties)
                }
            }
            return .objects(adapters: adapters, devices: devices)
        }

        /// A signal as the machine's event, if it is one the machine follows.
        static func event(_ signal: DBusSignal) -> BlueZStateMachine.Event? {
            let args = signal.arguments
            switch (signal.interface, signal.member) {
            case ("org.freedesktop.DBus", "NameOwnerChanged"):
                guard args.count == 3, args[0].string == bluez else { return nil }
                return args[2].string?.isEmpty ?? true ? .bluezLeft : .bluezAppeared
            case (objectManager, "InterfacesAdded"):
                guard args.count == 2, let path = args[0].string, let interfaces = args[1].dictionary else {
                    return nil
                }
                if interfaces[adapterInterface] != nil { return .adapterAdded(path: path) }
                guard case .dictionary(_, _, let properties)? = interfaces[deviceInterface] else { return nil }
                return .deviceAdded(path: path, device(properties))
            case (objectManager, "InterfacesRemoved"):
                guard args.count == 2, let path = args[0].string, case .array(_, let names) = args[1] else {
                    return nil
                }
                let removed = Set(names.compactMap(\.string))
                return .interfacesRemoved(
                    path: path,
                    adapter: removed.contains(adapterInterface),
                    device: removed.contains(deviceInterface)
                )
            case (properties, "PropertiesChanged"):
                guard args.count >= 2, let interface = args[0].string else { return nil }
                // A device's, two thousand a second: read from the entries, not a dictionary made of them.
                if interface == deviceInterface, case .dictionary(_, _, let entries) = args[1] {
                    return .deviceChanged(path: signal.path, device(entries))
                }
                guard let changed = args[1].dictionary else { return nil }
                if interface == adapterInterface {
                    return .adapterChanged(
                        path: signal.path,
                        powered: changed["Powered"]?.bool,
                        discovering: changed["Discovering"]?.bool
                    )
                }
                return nil
            default:
                return nil
            }
        }

        /// Device1 properties, as `a{sv}`'s entries, into what tracer keeps (never the address).
        static func device(_ entries: [DBusValue.DictEntry]) -> BlueZStateMachine.DeviceProperties {
            var device = BlueZStateMachine.DeviceProperties()
            for entry in entries {
                guard case .string(let name) = entry.key else { continue }
                switch name {
                case "RSSI": device.rssi = entry.value.integer
                case "TxPower": device.txPower = entry.value.integer
                case "ManufacturerData":
                    device.manufacturerData = manufacturerData(entry.value.unwrapped).map {
                        .init(company: $0.company, data: $0.data)
                    }
                case "Paired", "Trusted", "Connected": device.kept = device.kept || entry.value.bool == true
                default: break
                }
            }
            return device
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

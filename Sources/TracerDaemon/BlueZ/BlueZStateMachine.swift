import Logging

/// BlueZ as the source follows it over one bus connection, with no I/O: events in (signals and
/// call results, decoded; ticks of a monotonic clock in seconds), actions out (calls to make,
/// adverts to hand over, lines to log). The session on the bus performs the actions and feeds
/// back their results; tests drive it with a manual clock and no bus.
struct BlueZStateMachine {
    /// The timings, in seconds.
    struct Timing: Equatable {
        /// Restart discovery after this long with nothing heard while BlueZ says it is discovering.
        var stallTimeout: Double = 60
        /// Remove devices unseen for this long from BlueZ's cache.
        var forgetAfter: Double = 60
        /// A failed StartDiscovery is retried after this long.
        var retryArm: Double = 1
        /// Discovery that BlueZ turned off under us is re-armed once it has been armed this long.
        var armSettle: Double = 1
    }

    /// A device's properties as a signal or GetManagedObjects gives them (only those present).
    struct DeviceProperties: Equatable {
        var rssi: Int?
        var txPower: Int?
        var manufacturerData: [ManufacturerData]?
        /// Paired, trusted or connected: the kiosk's own devices, never removed.
        var kept = false

        struct ManufacturerData: Equatable {
            var company: UInt16
            var data: [UInt8]
        }
    }

    /// An adapter as GetManagedObjects gives it.
    struct AdapterInfo: Equatable {
        var path: String
        var powered: Bool
        var discovering: Bool
    }

    enum Event: Equatable {
        /// A connection to the bus, and whether org.bluez has an owner on it.
        case connected(bluezIsUp: Bool)
        /// The answer to `readObjects`: adapters, and devices by path (nil: could not be read).
        case objects(adapters: [AdapterInfo], devices: [String: DeviceProperties]?)
        case bluezAppeared
        case bluezLeft
        case adapterAdded(path: String)
        case deviceAdded(path: String, DeviceProperties)
        case deviceChanged(path: String, DeviceProperties)
        case adapterChanged(path: String, powered: Bool?, discovering: Bool?)
        case interfacesRemoved(path: String, adapter: Bool, device: Bool)
        /// The result of `arm`.
        case armed
        case armFailed(reason: String)
        /// A `removeDevice` succeeded.
        case deviceForgotten(path: String)
        /// Time passed.
        case tick
    }

    enum Action: Equatable {
        /// GetManagedObjects, answered with `.objects`.
        case readObjects
        /// SetDiscoveryFilter (LE, duplicates) and StartDiscovery, answered with `.armed` or
        /// `.armFailed`.
        case arm(adapter: String)
        case stopDiscovery(adapter: String)
        /// RemoveDevice, answered with `.deviceForgotten` when it succeeds.
        case removeDevice(adapter: String, device: String)
        /// An advert heard now: manufacturer data with the newest RSSI.
        case advert(rssi: Int, manufacturerData: [DeviceProperties.ManufacturerData], txPower: Int?)
        case log(Logger.Level, String)
    }

    /// Counters for the status line and the metrics.
    struct Counters: Equatable {
        var deviceSignals = 0
        var discoveryStarts = 0
        var watchdogRestarts = 0
        var devicesRemoved = 0
    }

    struct Device: Equatable {
        var properties = DeviceProperties()
        var lastSeen: Double
    }

    /// Where discovery is on the adapter.
    enum Discovery: Equatable {
        /// Not started: start it at `at` (once the adapter is powered).
        case due(at: Double)
        /// Started, and not answered yet (`.armed` or `.armFailed`): not asked again meanwhile.
        case requested
        /// StartDiscovery succeeded at `since`; `lastHeard`: the last activity (the stall
        /// watchdog's clock).
        case armed(since: Double, lastHeard: Double)
    }

    /// The adapter scanned with, and what the machine knows of it.
    struct Adapter: Equatable {
        let path: String
        var powered: Bool
        /// Whether BlueZ says it is discovering.
        var discovering: Bool
        var discovery: Discovery
        /// Its devices, by object path.
        var devices: [String: Device] = [:]

        /// The last part of its path (`hci0`), made once: the status reads it every round.
        let name: String

        init(path: String, powered: Bool, discovering: Bool, discovery: Discovery) {
            self.path = path
            self.name = String(path.split(separator: "/").last ?? "")
            self.powered = powered
            self.discovering = discovering
            self.discovery = discovery
        }
    }

    let adapterName: String?
    let timing: Timing
    /// What the source is doing, as the status line says it.
    private(set) var state = BlueZState.starting
    /// The adapter in use (nil: waiting for bluetoothd or an adapter; `state` says which).
    private(set) var current: Adapter?
    private(set) var counters = Counters()
    /// When devices unseen for `forgetAfter` are next looked for.
    private var nextSweep = 0.0
    /// The last waiting state logged, so each is said once.
    private var said: BlueZState?

    static let appleCompany: UInt16 = 0x004C

    init(adapter: String?, timing: Timing) {
        adapterName = adapter
        self.timing = timing
    }

    var adapterPath: String? { current?.path }
    var adapter: String { current?.name ?? "" }
    var devices: [String: Device] { current?.devices ?? [:] }
    /// StartDiscovery succeeded and has not been undone since.
    var armed: Bool {
        if case .armed = current?.discovery { true } else { false }
    }

    mutating func handle(_ event: Event, now: Double) -> [Action] {
        var actions: [Action] = []
        handle(event, now: now, into: &actions)
        return actions
    }

    /// `handle`, its actions appended to `actions`: the source keeps one buffer for them, not an
    /// array made for each of a few thousand adverts a second.
    mutating func handle(_ event: Event, now: Double, into actions: inout [Action]) {
        switch event {
        case .connected(let up):
            if up { actions.append(.readObjects) } else { wait(.waitingForBluetoothd, &actions) }
        case .objects(let adapters, let objects):
            choose(adapters, objects, now: now, &actions)
        case .bluezAppeared:
            actions.append(.log(.notice, "bluetoothd is on the system bus"))
            actions.append(.readObjects)
        case .bluezLeft:
            lose(.bluetoothdLeft, &actions)
        case .adapterAdded:
            if current == nil { actions.append(.readObjects) }
        case .deviceAdded(let path, let properties):
            guard isOurs(path) else { break }
            var device = Device(lastSeen: now)
            device.properties.merge(properties)
            current?.devices[path] = device
            heard(device, rssiChanged: properties.rssi != nil, now: now, &actions)
        case .deviceChanged(let path, let changed):
            guard isOurs(path), current != nil else { break }
            // Changed where it is kept (one lookup of the path, not a copy out and back in):
            // a few thousand a second.
            func change(_ device: inout Device) -> Device {
                device.lastSeen = now
                device.properties.merge(changed)
                return device
            }
            let device = change(&current!.devices[path, default: Device(lastSeen: 0)])
            counters.deviceSignals += 1
            heard(device, rssiChanged: changed.rssi != nil || changed.manufacturerData != nil, now: now, &actions)
        case .adapterChanged(let path, let on, let isDiscovering):
            guard var adapter = current, path == adapter.path else { break }
            if let on, on != adapter.powered {
                adapter.powered = on
                adapter.discovery = .due(at: now)
                if on {
                    actions.append(.log(.notice, "adapter \(adapter.name) powered on"))
                } else {
                    adapter.discovering = false
                    wait(.poweredOff(adapter.name), &actions)
                }
            }
            if let isDiscovering { adapter.discovering = isDiscovering }
            current = adapter
        case .interfacesRemoved(let path, let adapterGone, let deviceGone):
            if path == current?.path, adapterGone {
                lose(.adapterRemoved(adapter), &actions)
            } else if deviceGone {
                current?.devices[path] = nil
            }
        case .armed:
            guard current != nil else { break }
            current?.discovery = .armed(since: now, lastHeard: now)
            said = nil
            counters.discoveryStarts += 1
            state = .scanning(adapter)
            actions.append(.log(.notice, "scanning on \(adapter)"))
        case .armFailed(let reason):
            guard current != nil else { break }
            current?.discovery = .due(at: now + timing.retryArm)
            wait(.discoveryFailed(adapter, reason: reason), &actions)
        case .deviceForgotten:
            counters.devicesRemoved += 1
        case .tick:
            break
        }
        timers(now, &actions)
    }

    /// The adapter from BlueZ's objects: the named one, else the first powered, else the first.
    mutating func choose(
        _ adapters: [AdapterInfo],
        _ objects: [String: DeviceProperties]?,
        now: Double,
        _ actions: inout [Action]
    ) {
        guard let objects else {
            actions.append(.log(.warning, "cannot read BlueZ's objects"))
            current = nil
            return
        }
        let sorted = adapters.sorted { $0.path < $1.path }
        let chosen =
            if let adapterName {
                sorted.first { $0.path == "/org/bluez/\(adapterName)" }
            } else {
                sorted.first { $0.powered } ?? sorted.first
            }
        guard let chosen else {
            current = nil
            wait(.noAdapter(named: adapterName), &actions)
            return
        }
        var adapter = Adapter(
            path: chosen.path,
            powered: chosen.powered,
            discovering: chosen.discovering,
            discovery: .due(at: now)
        )
        for (path, properties) in objects where path.hasPrefix(chosen.path + "/") {
            var device = Device(lastSeen: now)
            device.properties.merge(properties)
            adapter.devices[path] = device
        }
        current = adapter
        if !adapter.powered { wait(.poweredOff(adapter.name), &actions) }
    }

    /// bluetoothd or the adapter is gone: nothing to scan with until it is back.
    mutating func lose(_ why: BlueZState, _ actions: inout [Action]) {
        current = nil
        wait(why, &actions)
    }

    /// A waiting state, logged once per change.
    mutating func wait(_ state: BlueZState, _ actions: inout [Action]) {
        self.state = state
        guard state != said else { return }
        said = state
        actions.append(.log(.warning, state.description))
    }

    func isOurs(_ path: String) -> Bool {
        guard let adapterPath else { return false }
        // Without making `adapterPath + "/"` for each of a few thousand signals a second.
        let utf8 = path.utf8
        guard utf8.count > adapterPath.utf8.count, path.hasPrefix(adapterPath) else { return false }
        return utf8[utf8.index(utf8.startIndex, offsetBy: adapterPath.utf8.count)] == UInt8(ascii: "/")
    }

    /// Activity; and an advert when the RSSI (or the data) changed and it carries Apple's data.
    mutating func heard(_ device: Device, rssiChanged: Bool, now: Double, _ actions: inout [Action]) {
        if case .armed(let since, _) = current?.discovery { current?.discovery = .armed(since: since, lastHeard: now) }
        let data = device.properties.manufacturerData ?? []
        guard rssiChanged, let rssi = device.properties.rssi, data.contains(where: { $0.company == Self.appleCompany })
        else { return }
        actions.append(.advert(rssi: rssi, manufacturerData: data, txPower: device.properties.txPower))
    }

    /// Arming, the discovery that ended under us, the stall watchdog, and forgetting devices.
    mutating func timers(_ now: Double, _ actions: inout [Action]) {
        guard var adapter = current else { return }
        defer { current = adapter }
        switch adapter.discovery {
        case .due(let at) where adapter.powered && now >= at:
            // Answered by .armed or .armFailed; until then, not again.
            adapter.discovery = .requested
            actions.append(.arm(adapter: adapter.path))
        case .armed(let since, _) where !adapter.discovering && now - since > timing.armSettle:
            // BlueZ turned discovery off under us (another client, a reset): start it again.
            adapter.discovery = .due(at: now)
        case .armed(_, let lastHeard) where adapter.discovering && now - lastHeard > timing.stallTimeout:
            actions.append(
                .log(
                    .warning,
                    "nothing heard on \(adapter.name) for \(Int(now - lastHeard)) s while discovering; restarting discovery"
                )
            )
            actions.append(.stopDiscovery(adapter: adapter.path))
            adapter.discovery = .due(at: now)
            counters.watchdogRestarts += 1
        default:
            break
        }
        if now >= nextSweep {
            nextSweep = now + min(5, timing.forgetAfter / 2)
            let horizon = now - timing.forgetAfter
            for (path, device) in adapter.devices.sorted(by: { $0.key < $1.key })
            where device.lastSeen < horizon && !device.properties.kept {
                adapter.devices[path] = nil
                actions.append(.removeDevice(adapter: adapter.path, device: path))
            }
        }
    }
}

extension BlueZStateMachine.DeviceProperties {
    /// The properties `changed` gives, over these.
    mutating func merge(_ changed: Self) {
        if let rssi = changed.rssi { self.rssi = rssi }
        if let tx = changed.txPower { txPower = tx }
        if let data = changed.manufacturerData { manufacturerData = data }
        if changed.kept { kept = true }
    }
}

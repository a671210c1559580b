/// What the BlueZ source is doing: waiting for something (the bus, bluetoothd, an adapter, power),
/// or scanning. Its description is the status line's and the log's wording.
public enum BlueZState: Sendable, Equatable, CustomStringConvertible {
    case starting
    case waitingForBus
    case waitingForBluetoothd
    case bluetoothdLeft
    /// No adapter yet: the one named with `--adapter`, or any.
    case noAdapter(named: String?)
    case adapterRemoved(String)
    case poweredOff(String)
    /// StartDiscovery failed; retried every second.
    case discoveryFailed(String, reason: String)
    case scanning(String)

    public var isScanning: Bool {
        if case .scanning = self { true } else { false }
    }

    public var description: String {
        switch self {
        case .starting: "starting"
        case .waitingForBus: "waiting for the system bus"
        case .waitingForBluetoothd: "waiting for bluetoothd (org.bluez) on the system bus"
        case .bluetoothdLeft: "bluetoothd left the system bus; waiting for it to come back"
        case .noAdapter(let name?): "no adapter \(name) yet; waiting for it"
        case .noAdapter(nil): "no Bluetooth adapter yet; waiting for one"
        case .adapterRemoved(let name): "adapter \(name) was removed; waiting for an adapter"
        case .poweredOff(let name): "\(name) is powered off; waiting for it to be powered on"
        case .discoveryFailed(let name, let reason): "cannot start discovery on \(name) (\(reason)); retrying"
        case .scanning(let name): "scanning on \(name)"
        }
    }
}

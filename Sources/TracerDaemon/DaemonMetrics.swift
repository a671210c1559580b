import Metrics
import Synchronization

/// The daemon's counters and gauges through swift-metrics (`tracer_adverts_total`, …): nothing
/// until a metrics backend is bootstrapped (`tracer daemon --metrics` bootstraps Prometheus's).
/// Published from the daemon's snapshots, as deltas for counters, so the ranging hot path pays no
/// per-advert cost.
public final class DaemonMetrics: Sendable {
    let adverts = Counter(label: "tracer_adverts_total")
    let iBeacons = Counter(label: "tracer_ibeacon_adverts_total")
    let attributed = Counter(label: "tracer_attributed_adverts_total")
    let written = Counter(label: "tracer_interactions_written_total")
    let badgesUnresolved = Counter(label: "tracer_badge_adverts_unresolved_total")
    let badgeCollisions = Counter(label: "tracer_badge_adverts_collided_total")
    let inRange = Gauge(label: "tracer_devices_in_range")
    let lastWrite = Gauge(label: "tracer_last_write_timestamp_seconds")
    let scanning = Gauge(label: "tracer_bluez_scanning")
    let deviceSignals = Counter(label: "tracer_bluez_device_signals_total")
    let discoveryStarts = Counter(label: "tracer_bluez_discovery_starts_total")
    let watchdogRestarts = Counter(label: "tracer_bluez_watchdog_restarts_total")
    let devicesRemoved = Counter(label: "tracer_bluez_devices_removed_total")
    let devices = Gauge(label: "tracer_bluez_devices")
    let reconnects = Counter(label: "tracer_bluez_reconnects_total")

    /// What was published last, for the counters' deltas.
    private let published = Mutex<(DaemonProgress.Snapshot, BlueZSource.Status?)>((.init(), nil))

    public init() {}

    /// Brings every metric up to these snapshots.
    public func publish(_ p: DaemonProgress.Snapshot, _ bluez: BlueZSource.Status?) {
        published.withLock { last in
            let (q, b) = last
            adverts.increment(by: max(0, p.counts.adverts - q.counts.adverts))
            iBeacons.increment(by: max(0, p.counts.iBeacons - q.counts.iBeacons))
            attributed.increment(by: max(0, p.counts.attributed - q.counts.attributed))
            written.increment(by: max(0, p.written - q.written))
            badgesUnresolved.increment(by: max(0, p.counts.badgesUnresolved - q.counts.badgesUnresolved))
            badgeCollisions.increment(by: max(0, p.counts.badgeCollisions - q.counts.badgeCollisions))
            inRange.record(p.inRange)
            lastWrite.record(p.lastWrite ?? 0)
            if let bluez {
                let was = b ?? BlueZSource.Status()
                scanning.record(bluez.isScanning ? 1 : 0)
                deviceSignals.increment(by: max(0, bluez.deviceSignals - was.deviceSignals))
                discoveryStarts.increment(by: max(0, bluez.discoveryStarts - was.discoveryStarts))
                watchdogRestarts.increment(by: max(0, bluez.watchdogRestarts - was.watchdogRestarts))
                devicesRemoved.increment(by: max(0, bluez.devicesRemoved - was.devicesRemoved))
                devices.record(bluez.devices)
                reconnects.increment(by: max(0, bluez.reconnects - was.reconnects))
            }
            last = (p, bluez)
        }
    }
}

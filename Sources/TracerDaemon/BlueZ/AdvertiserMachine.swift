import TracerDBus

/// The advertiser as a state machine, with no I/O (as `ReplicationMachine` and postgres-nio's
/// `ConnectionStateMachine`): one `State` (registering an advert, advertising one, taking it
/// down, finished), an `Event` in (BlueZ registered it or refused, time passed, the bus went
/// away, the stop), the `Action` to run out. `Advertiser.advertise` only runs the actions on its
/// thread; tests drive this with a manual clock and no bus.
struct AdvertiserMachine {
    /// One advertisement: the object it is exported at, the id it sends, and when that id ends
    /// (nil: never — a fixed beacon).
    struct Advert: Equatable {
        var path: String
        var major: UInt16
        var minor: UInt16
        var until: Double?
    }

    enum State: Equatable {
        /// `advert` is being registered (the one it replaces, if any, was taken down just before).
        case registering(Advert)
        /// BlueZ sends `advert`.
        case advertising(Advert)
        /// `advert` is being taken down on the way out.
        case stopping(Advert)
        case finished
    }

    enum Event: Equatable {
        /// BlueZ took the advert.
        case registered
        /// BlueZ refused it.
        case refused(AdvertiseError)
        /// A wait ended with the bus still there, at `now`.
        case tick(now: Double)
        /// The bus went away.
        case busGone
        /// Shutdown was asked for.
        case stop
    }

    enum Action: Equatable {
        /// Export `advert`'s object, take `replacing` down (unregistered and unexported), then
        /// register `advert`.
        case register(Advert, replacing: Advert?)
        /// Answer BlueZ until `until`, the stop or a short wait's end (the loop feeds a tick);
        /// `announce`: the advert that has just started (the command's output).
        case wait(until: Double?, announce: Advert?)
        /// Take `advert` down: unregister and unexport it.
        case unregister(Advert)
        /// Return; with an error, throw it.
        case finish(AdvertiseError?)
    }

    /// The id at a time: major, minor, and when it changes (nil: never).
    let id: (Double) -> (major: UInt16, minor: UInt16, until: Double?)
    let adapter: String
    private(set) var state: State = .finished
    private var serial = 0

    init(adapter: String, id: @escaping (Double) -> (major: UInt16, minor: UInt16, until: Double?)) {
        self.adapter = adapter
        self.id = id
    }

    /// The first action: register the id of `now`.
    mutating func start(now: Double) -> Action {
        let advert = next(now: now)
        state = .registering(advert)
        return .register(advert, replacing: nil)
    }

    mutating func handle(_ event: Event) -> Action {
        switch (state, event) {
        case (.finished, _):
            return .finish(nil)
        case (_, .busGone):
            // Nothing can be taken down without the bus: BlueZ drops a dead client's adverts.
            state = .finished
            return .finish(
                AdvertiseError(
                    DBusError(name: "org.freedesktop.DBus.Error.Disconnected", message: "the system bus went away"),
                    adapter: adapter
                )
            )
        case (.registering(let advert), .registered):
            state = .advertising(advert)
            return .wait(until: advert.until, announce: advert)
        case (.registering, .refused(let error)):
            // The advert it replaced was taken down before; this one was never taken.
            state = .finished
            return .finish(error)
        case (.registering(let advert), .stop), (.advertising(let advert), .stop):
            state = .stopping(advert)
            return .unregister(advert)
        case (.advertising(let advert), .tick(let now)):
            guard let until = advert.until, now >= until else { return .wait(until: advert.until, announce: nil) }
            // The epoch is over: the next id replaces this one.
            let new = next(now: now)
            state = .registering(new)
            return .register(new, replacing: advert)
        case (.stopping, _):
            state = .finished
            return .finish(nil)
        default:
            assertionFailure("advertiser: \(event) in \(state)")
            return .wait(until: nil, announce: nil)
        }
    }

    /// The advert for the id of `now`, at an object path of its own.
    private mutating func next(now: Double) -> Advert {
        serial += 1
        let (major, minor, until) = id(now)
        return Advert(path: "/org/tracer/advertisement\(serial)", major: major, minor: minor, until: until)
    }
}

import TracerModel

/// One browser subscription's pushes as a state machine, with no I/O (as the replicator's and
/// postgres-nio's): one `State` (a push owed and when to try it, a push on its way, done), what
/// it carries through failures (how many in a row, since when), an `Event` in (a change owed it
/// a push, the push started, the push service's answer, the subscription deleted, the store
/// failing to record), the `Action` out (what to write and say). `PushDelivery` keeps one per
/// subscription owed a push and runs the actions; tests drive it on a manual clock.
struct SubscriptionPush: Equatable {
    enum State: Equatable {
        /// A push is owed, to be tried at `due` (seconds since 1970).
        case owed(due: Double)
        /// A push is on its way; `again`: a change came meanwhile, so one more is owed after it.
        case sending(again: Bool)
        /// Nothing more owed, or dropped: `PushDelivery` forgets it.
        case done
    }

    enum Event: Equatable {
        /// A change owes it a push.
        case changed(now: Double)
        /// Its push started.
        case started
        /// The push service took the push.
        case delivered(now: Double)
        /// The push service failed (5xx, unreachable, a timeout).
        case failed(now: Double)
        /// The push service says the subscription is gone (404, 410).
        case gone
        /// The stored subscription is not one the site sends to.
        case refused
        /// The subscription was deleted meanwhile (unsubscribed, its token revoked).
        case vanished
        /// The outcome could not be recorded in the store: tried again in a second.
        case storeFailed(now: Double)
    }

    enum Drop: Equatable {
        case gone, refused
        /// It has failed for `giveUpAfter` (24 h).
        case failedTooLong
    }

    enum Action: Equatable {
        /// Nothing to write.
        case none
        /// Delivered: clear its failures, and `owedAt` unless `stillOwed` (a change came meanwhile).
        case settle(stillOwed: Bool)
        /// Failed: keep `failures` and `failingSince` with it; it is tried again in `retryIn` s.
        case recordFailure(failures: Int, failingSince: Double, retryIn: Double)
        /// Delete it, for `Drop`.
        case drop(Drop)
    }

    private(set) var state: State
    /// Failed pushes in a row (kept in the store, so that a restart keeps the 24 h bound).
    private(set) var failures: Int
    /// When the failures in a row began.
    private(set) var failingSince: Double?

    init(due: Double, failures: Int = 0, failingSince: Double? = nil) {
        state = .owed(due: due)
        self.failures = failures
        self.failingSince = failingSince
    }

    /// When it is owed a try (nil: on its way, or done).
    var due: Double? {
        if case .owed(let due) = state { due } else { nil }
    }

    mutating func handle(_ event: Event, backoff: Backoff, giveUpAfter: Double) -> Action {
        switch (state, event) {
        case (.owed, .changed):
            return .none  // owed already: one push tells of both changes
        case (.sending, .changed):
            state = .sending(again: true)
            return .none
        case (.done, .changed(let now)):
            state = .owed(due: now)
            return .none
        case (.owed, .started):
            state = .sending(again: false)
            return .none
        case (.sending(let again), .delivered(let now)):
            (failures, failingSince) = (0, nil)
            state = again ? .owed(due: now) : .done
            return .settle(stillOwed: again)
        case (.sending, .failed(let now)):
            failures += 1
            let since = failingSince ?? now
            failingSince = since
            if now - since >= giveUpAfter {
                state = .done
                return .drop(.failedTooLong)
            }
            let retryIn = backoff.delay(after: failures) / .seconds(1)
            state = .owed(due: now + retryIn)
            return .recordFailure(failures: failures, failingSince: since, retryIn: retryIn)
        case (.sending, .gone):
            state = .done
            return .drop(.gone)
        case (.sending, .refused):
            state = .done
            return .drop(.refused)
        case (_, .vanished):
            state = .done
            return .none
        case (.done, .storeFailed):
            return .none
        case (_, .storeFailed(let now)):
            state = .owed(due: now + 1)
            return .none
        default:
            assertionFailure("push: \(event) in \(state)")
            return .none
        }
    }
}

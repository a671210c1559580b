import Testing
import TracerModel

@testable import TracerExposure

/// One subscription's pushes on a manual clock (seconds), with no store and no push service:
/// every path `PushDelivery` takes for a browser.
@Suite struct SubscriptionPushTests {
    typealias P = SubscriptionPush
    /// 1 s doubling to 30 minutes, without jitter (`PushDelivery`'s, made exact).
    let backoff = Backoff(first: .seconds(1), longest: .seconds(1800))
    let day = PushDelivery.giveUpAfter

    func step(_ p: inout P, _ event: P.Event) -> P.Action {
        p.handle(event, backoff: backoff, giveUpAfter: day)
    }

    @Test func aDeliveredPushSettlesAndAChangeMeanwhileOwesOneMore() {
        var p = P(due: 1000)
        #expect(p.due == 1000)
        #expect(step(&p, .changed(now: 1000.5)) == .none && p.due == 1000, "owed already: one push for both")
        #expect(step(&p, .started) == .none && p.state == .sending(again: false) && p.due == nil)
        #expect(step(&p, .changed(now: 1001)) == .none && p.state == .sending(again: true))
        #expect(step(&p, .delivered(now: 1002)) == .settle(stillOwed: true))
        #expect(p.state == .owed(due: 1002))
        _ = step(&p, .started)
        #expect(step(&p, .delivered(now: 1003)) == .settle(stillOwed: false) && p.state == .done)
        // A change after it was done owes it a push again.
        #expect(step(&p, .changed(now: 1010)) == .none && p.state == .owed(due: 1010))
    }

    @Test func failuresBackOffDoublingAndADayOfThemDropsIt() {
        var p = P(due: 0)
        var retries: [Double] = []
        for t in [0.0, 10, 20, 30] {
            _ = step(&p, .started)
            guard case .recordFailure(let failures, let since, let retryIn) = step(&p, .failed(now: t)) else {
                Issue.record("a failure is recorded")
                return
            }
            #expect(failures == retries.count + 1 && since == 0)
            retries.append(retryIn)
            #expect(p.state == .owed(due: t + retryIn))
        }
        #expect(retries == [1, 2, 4, 8])
        // Delivered: the failures are over.
        _ = step(&p, .started)
        #expect(step(&p, .delivered(now: 40)) == .settle(stillOwed: false))
        #expect(p.failures == 0 && p.failingSince == nil)
        // Failing since a day ago (as stored before a restart): the next failure drops it.
        var stale = P(due: 100_000, failures: 40, failingSince: 100_000 - day)
        _ = step(&stale, .started)
        #expect(step(&stale, .failed(now: 100_000)) == .drop(.failedTooLong) && stale.state == .done)
    }

    @Test func goneRefusedOrDeletedSubscriptionsAreDroppedOrForgotten() {
        for (event, action) in [(P.Event.gone, P.Action.drop(.gone)), (.refused, .drop(.refused)), (.vanished, .none)] {
            var p = P(due: 0)
            _ = step(&p, .started)
            #expect(step(&p, event) == action && p.state == .done)
        }
        // Deleted while it waited for a retry: forgotten too.
        var waiting = P(due: 50, failures: 2, failingSince: 0)
        #expect(step(&waiting, .vanished) == .none && waiting.state == .done)
    }

    @Test func anOutcomeTheStoreCouldNotRecordIsTriedAgainInASecond() {
        var p = P(due: 0)
        _ = step(&p, .started)
        _ = step(&p, .failed(now: 5))
        #expect(step(&p, .storeFailed(now: 5)) == .none && p.state == .owed(due: 6))
        var done = P(due: 0)
        _ = step(&done, .started)
        _ = step(&done, .delivered(now: 1))
        #expect(step(&done, .storeFailed(now: 1)) == .none && done.state == .done)
    }
}

import Testing
import TracerAPI

@testable import TracerReplication

/// The replicator's decisions on a manual clock (seconds), with no store and no server.
@Suite struct ReplicationMachineTests {
    /// A machine started at t = 1000 whose jitter always falls at `fraction` of the delay.
    func machine(acknowledged: Int64 = 100, fraction: Double = 1) -> ReplicationMachine {
        ReplicationMachine(acknowledged: acknowledged, now: 1000, fraction: { fraction })
    }

    @Test func heartbeatOnlyWhenNothingIsNewAndTheServerHeardFromLately() {
        var m = machine()
        // At start the server has not heard from this kiosk: an empty batch goes at once.
        #expect(m.batchRead(nothingNew: true, now: 1000) == .send)
        let r1 = m.answered(100, through: 100, after: 0, now: 1000)
        #expect(r1 == .acknowledged(token: 100, outage: nil))
        #expect(m.batchRead(nothingNew: true, now: 1001) == .wait(0.5))
        #expect(m.batchRead(nothingNew: true, now: 1014.9) == .wait(0.5))
        #expect(m.batchRead(nothingNew: true, now: 1015) == .send)
        // New changes go whenever they are there.
        #expect(m.batchRead(nothingNew: false, now: 1001) == .send)
    }

    @Test func anOutageBacksOffDoublingToItsCapThenIsOverAtTheFirstAcknowledgement() {
        var m = machine()
        var waits: [Double] = []
        var began: [Bool] = []
        for i in 0..<7 {
            let t = 1000 + Double(i) * 10
            guard case .unreachable(let first, let wait) = m.failed(.unavailable, started: t, token: "A", now: t + 1)
            else {
                Issue.record("an unreachable server is an outage")
                return
            }
            waits.append(wait)
            began.append(first)
        }
        #expect(waits == [1, 2, 4, 8, 16, 30, 30])
        #expect(began == [true, false, false, false, false, false, false])
        #expect(m.failures == 7)
        // Failures in a row keep the heartbeat from waiting: the next batch goes at once.
        #expect(m.batchRead(nothingNew: true, now: 1080) == .send)
        // Back: the outage lasted from the first failed exchange's start.
        let r2 = m.answered(150, through: 150, after: 0, now: 1100)
        #expect(r2 == .acknowledged(token: 150, outage: 100))
        #expect(m.acknowledged == 150 && m.failures == 0 && m.outageSince == nil)
        guard case .unreachable(true, let wait) = m.failed(.unavailable, started: 1200, token: nil, now: 1200) else {
            Issue.record("a new outage begins")
            return
        }
        #expect(wait == 1)
    }

    @Test func jitterKeepsEachDelayInTheUpperHalf() {
        var m = machine(fraction: 0.5)
        var waits: [Double] = []
        for _ in 0..<3 {
            if case .unreachable(_, let wait) = m.failed(.unavailable, started: 1000, token: nil, now: 1000) {
                waits.append(wait)
            }
        }
        #expect(waits == [0.5, 1, 2])
    }

    @Test func theDrainEndsWhenEverythingIsAcknowledgedOrItsTimeIsUp() {
        var m = machine()
        #expect(!m.draining)
        let r3 = m.shutdown(now: 2000)
        #expect(r3)
        let r4 = m.shutdown(now: 2001)
        #expect(!r4, "the drain begins once")
        #expect(m.batchRead(nothingNew: false, now: 2001) == .send)
        #expect(m.batchRead(nothingNew: true, now: 2001) == .drained)
        #expect(!m.drainExpired(now: 2059.9))
        #expect(m.drainExpired(now: 2060))
        // Backoff while draining never sleeps past the deadline.
        for _ in 0..<5 { _ = m.failed(.unavailable, started: 2050, token: nil, now: 2050) }
        let r5 = m.failed(.unavailable, started: 2055, token: nil, now: 2055)
        #expect(r5 == .unreachable(outageBegan: false, wait: 5))
        let r6 = m.failed(.unavailable, started: 2070, token: nil, now: 2070)
        #expect(r6 == .unreachable(outageBegan: false, wait: 0))
    }

    @Test func aRefusedTokenStopsSendingUntilTheFileChanges() {
        var m = machine()
        let r7 = m.failed(.unauthorized, started: 1000, token: "tracer_a", now: 1000)
        #expect(r7 == .tokenRefused)
        #expect(m.refusedToken == "tracer_a")
        #expect(m.failures == 0, "a refusal is not an outage")
        let r8 = m.tokenFile("tracer_a")
        #expect(!r8)
        let r9 = m.tokenFile(nil)
        #expect(!r9, "an unreadable file is not a new token")
        #expect(m.refusedRecheck == 2)
        let r10 = m.tokenFile("tracer_b")
        #expect(r10)
        #expect(m.refusedToken == nil)
        // 403 for the whole request stops sending the same way; an unreadable file counts as "".
        let r11 = m.failed(.forbidden, started: 1000, token: nil, now: 1000)
        #expect(r11 == .tokenRefused)
        #expect(m.refusedToken == "")
        _ = m.shutdown(now: 1001)
        #expect(m.refusedRecheck == 0.5)
    }

    @Test func aBatchTheServerCannotTakeIsRetriedSlowly() {
        var m = machine()
        let r12 = m.failed(.badRequest, started: 1000, token: nil, now: 1000)
        #expect(r12 == .batchRefused(wait: 30))
        let r13 = m.failed(.protocolError, started: 1000, token: nil, now: 1000)
        #expect(r13 == .batchRefused(wait: 30))
        #expect(m.failures == 2 && m.outageSince == nil)
    }

    @Test func anAcknowledgementIsTakenOnlyWhereItFits() {
        var m = machine(acknowledged: 100)
        // Beyond this batch but within what the store has: an earlier answer was lost.
        let r14 = m.answered(180, through: 150, after: 40, now: 1000)
        #expect(r14 == .alreadyAhead(token: 180))
        #expect(m.acknowledged == 180)
        // Beyond anything this store has: nothing moves, and it is retried with backoff.
        let r15 = m.answered(900, through: 200, after: 10, now: 1001)
        #expect(r15 == .mismatch(serverAhead: true, wait: 1))
        // Short of the batch: nothing moves either.
        let r16 = m.answered(190, through: 200, after: 10, now: 1002)
        #expect(r16 == .mismatch(serverAhead: false, wait: 2))
        #expect(m.acknowledged == 180 && m.failures == 2)
        let r17 = m.answered(200, through: 200, after: 10, now: 1003)
        #expect(r17 == .acknowledged(token: 200, outage: nil))
        #expect(m.acknowledged == 200 && m.failures == 0)
    }
}

/// The replicator's steps: events in, actions and notes out, on a manual clock (seconds), with
/// no store and no server — every path `Replicator.run` takes, as the loop sees it.
@Suite struct ReplicationStepTests {
    typealias M = ReplicationMachine

    func machine(acknowledged: Int64 = 100) -> M {
        M(acknowledged: acknowledged, now: 1000, fraction: { 1 })
    }

    @Test func liveBatchesGoOneAfterAnotherThenTheHeartbeatWaits() {
        var m = machine()
        #expect(m.start() == M.Step(action: .read(after: 100)))
        let batch = M.Batch(from: 100, through: 150, after: 20)
        #expect(m.handle(.read(batch), now: 1000) == M.Step(action: .send(batch, readAhead: true)))
        #expect(m.state == .sending(batch, started: 1000))
        #expect(
            m.handle(.answered(acknowledged: 150), now: 1000.1)
                == M.Step(action: .keepThenRead(checkpoint: 150), notes: [.acknowledged(token: 150, outage: nil)])
        )
        #expect(m.acknowledged == 150)
        let last = M.Batch(from: 150, through: 170, after: 0)
        #expect(m.handle(.read(last), now: 1000.2) == M.Step(action: .send(last, readAhead: false)))
        _ = m.handle(.answered(acknowledged: 170), now: 1000.3)
        // Nothing new, and the server heard from this kiosk just now: look again in 0.5 s.
        let none = M.Batch(from: 170, through: 170, after: 0)
        #expect(m.handle(.read(none), now: 1000.4) == M.Step(action: .nap(0.5, interruptible: true)))
        #expect(m.handle(.woke, now: 1000.9) == M.Step(action: .read(after: 170)))
        // Fifteen seconds on, the empty batch goes (the heartbeat).
        #expect(m.handle(.read(none), now: 1015.3) == M.Step(action: .send(none, readAhead: false)))
    }

    @Test func anOutageResendsTheSameBatchWithBackoffUntilItIsAcknowledged() {
        var m = machine()
        _ = m.start()
        let batch = M.Batch(from: 100, through: 120, after: 0)
        _ = m.handle(.read(batch), now: 1000)
        #expect(
            m.handle(.failed(.unavailable, token: "A"), now: 1001)
                == M.Step(action: .nap(1, interruptible: true), notes: [.unreachable(outageBegan: true)])
        )
        #expect(m.handle(.woke, now: 1002) == M.Step(action: .send(batch, readAhead: false)))
        #expect(
            m.handle(.failed(.unavailable, token: "A"), now: 1003)
                == M.Step(action: .nap(2, interruptible: true), notes: [.unreachable(outageBegan: false)])
        )
        _ = m.handle(.woke, now: 1005)
        // Back: the outage is counted from the start of the first failed exchange.
        #expect(
            m.handle(.answered(acknowledged: 120), now: 1006)
                == M.Step(action: .keepThenRead(checkpoint: 120), notes: [.acknowledged(token: 120, outage: 6)])
        )
    }

    @Test func aRefusedTokenWaitsForTheFileToChangeThenSendsTheSameBatch() {
        var m = machine()
        _ = m.start()
        let batch = M.Batch(from: 100, through: 130, after: 0)
        _ = m.handle(.read(batch), now: 1000)
        #expect(
            m.handle(.failed(.unauthorized, token: "tracer_a"), now: 1000)
                == M.Step(action: .nap(2, interruptible: true), notes: [.tokenRefused])
        )
        #expect(m.state == .tokenRefused(content: "tracer_a", batch: batch))
        #expect(m.handle(.woke, now: 1002) == M.Step(action: .readTokenFile))
        #expect(m.handle(.tokenFile("tracer_a"), now: 1002) == M.Step(action: .nap(2, interruptible: true)))
        #expect(m.handle(.woke, now: 1004) == M.Step(action: .readTokenFile))
        #expect(m.handle(.tokenFile(nil), now: 1004) == M.Step(action: .nap(2, interruptible: true)))
        _ = m.handle(.woke, now: 1006)
        #expect(
            m.handle(.tokenFile("tracer_b"), now: 1006)
                == M.Step(action: .send(batch, readAhead: false), notes: [.tokenFileChanged])
        )
    }

    @Test func theDrainFinishesWhenAllIsAcknowledgedOrWhenItsTimeIsUp() {
        var m = machine()
        _ = m.start()
        #expect(m.shuttingDown(now: 1000) == [.drainBegan])
        #expect(m.shuttingDown(now: 1001) == [], "the drain begins once")
        let batch = M.Batch(from: 100, through: 110, after: 0)
        #expect(m.handle(.read(batch), now: 1001) == M.Step(action: .send(batch, readAhead: false)))
        _ = m.handle(.answered(acknowledged: 110), now: 1002)
        let none = M.Batch(from: 110, through: 110, after: 0)
        #expect(m.handle(.read(none), now: 1002) == M.Step(action: .finish, notes: [.drained]))
        #expect(m.state == .finished)

        // The server away through the drain: naps are cut at the deadline and not ended by the
        // shutdown, and the first event past the deadline finishes.
        var away = machine()
        _ = away.start()
        _ = away.shuttingDown(now: 1000)
        _ = away.handle(.read(batch), now: 1000)
        for _ in 0..<5 {
            _ = away.handle(.failed(.unavailable, token: nil), now: 1050)
            #expect(away.state == .napping(then: .retry(batch)))
            #expect(away.handle(.woke, now: 1050) == M.Step(action: .send(batch, readAhead: false)))
        }
        #expect(away.state == .sending(batch, started: 1050))
        #expect(away.handle(.failed(.unavailable, token: nil), now: 1055).action == .nap(5, interruptible: false))
        #expect(away.handle(.woke, now: 1060) == M.Step(action: .finish, notes: [.drainExpired]))
    }

    @Test func anAcknowledgementThatDoesNotFitIsRetriedAndOneAheadIsTaken() {
        var m = machine()
        _ = m.start()
        let batch = M.Batch(from: 100, through: 150, after: 40)
        _ = m.handle(.read(batch), now: 1000)
        #expect(
            m.handle(.answered(acknowledged: 900), now: 1000)
                == M.Step(
                    action: .nap(1, interruptible: true),
                    notes: [.mismatch(serverAhead: true, acknowledged: 900, through: 150)]
                )
        )
        #expect(m.acknowledged == 100)
        #expect(m.handle(.woke, now: 1001) == M.Step(action: .send(batch, readAhead: true)))
        // An earlier answer was lost: the server has up to 180, within what this store has.
        #expect(
            m.handle(.answered(acknowledged: 180), now: 1002)
                == M.Step(action: .keepThenRead(checkpoint: 180), notes: [.alreadyAhead(token: 180, through: 150)])
        )
        // A batch read after an older checkpoint is never sent: the log is read again.
        #expect(m.handle(.read(batch), now: 1003) == M.Step(action: .read(after: 180)))
    }
}

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

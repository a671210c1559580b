import Foundation
import Synchronization
import Testing
import TracerModel
@_spi(Blocking) import TracerStore
import TracerTesting

@testable import TracerExposure

/// At most two reports decided at once by one engine, so that decisions leave the store's other
/// reader threads to every other read (`DecisionSlots`).
@Suite struct DecisionSlotsTests {
    /// Six at once through two slots: two inside, the rest waiting, each let in as one leaves.
    @Test func twoAtATimeAndEveryOneInTurn() async throws {
        let slots = DecisionSlots(2)
        let (inside, done) = (Inside(), Count())
        let gates = (0..<6).map { _ in Gate() }
        for (k, gate) in gates.enumerated() {
            Task {
                try await slots.run {
                    inside.enter(k)
                    await gate.wait()
                    inside.leave(k)
                }
                done.add(1)
            }
        }
        for ended in 0..<6 {
            // Never more than two inside: one of them let out, and one waiting let in.
            let expected = min(2, 6 - ended)
            #expect(await until(30) { inside.ids.count == expected }, "\(inside.ids) inside, \(ended) ended")
            gates[inside.ids[0]].open()
            #expect(await until(30) { done.value == ended + 1 }, "\(ended + 1) did not end")
        }
        #expect(slots.peak == 2)
    }

    /// The engine's flags go through its slots: four reports flagged at once, all flagged, at
    /// most two decided at a time.
    @Test func anEnginesDecisionsTakeItsSlots() async throws {
        let s = try ExposureEngineTests.Site()
        for k in 0..<4 {
            try s.seen("R\(k)", at: "A\(k)", 0, 30, 1)
            try s.seen("X\(k)", at: "A\(k)", 0, 30, 1.5)
            try s.report("r\(k)", by: "R\(k)")
        }
        let (engine, store) = (ExposureEngine(), s.store)
        try await withThrowingTaskGroup(of: FlagResult.self) { group in
            for k in 0..<4 {
                group.addTask { try await engine.flag(reportID: "r\(k)", on: store, sharing: k % 2 == 0) }
            }
            var exposed: [String] = []
            for try await r in group { exposed += r.exposedDevices }
            #expect(exposed.sorted() == ["X0", "X1", "X2", "X3"])
        }
        #expect((1...2).contains(engine.decisions.peak), "\(engine.decisions.peak)")
    }
}

/// The tasks inside, in the order they came in.
final class Inside: Sendable {
    private let list = Mutex<[Int]>([])
    var ids: [Int] { list.withLock { $0 } }
    func enter(_ id: Int) { list.withLock { $0.append(id) } }
    func leave(_ id: Int) { list.withLock { $0.removeAll { $0 == id } } }
}

/// A number tasks add to.
final class Count: Sendable {
    private let n = Mutex(0)
    var value: Int { n.withLock { $0 } }
    func add(_ k: Int) { n.withLock { $0 += k } }
}

/// A gate a task waits at until it is opened (once).
final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.open { return true }
                s.waiting.append(c)
                return false
            }
            if now { c.resume() }
        }
    }

    func open() {
        let waiting = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.open = true
            defer { s.waiting = [] }
            return s.waiting
        }
        for c in waiting { c.resume() }
    }
}

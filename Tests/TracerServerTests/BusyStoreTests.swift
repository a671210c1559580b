import Foundation
import Hummingbird
import HummingbirdTesting
import Testing
import TracerModel
@_spi(Blocking) import TracerStore
import TracerTesting

@testable import TracerServer

/// The store's blocking work runs on the store's own threads: a store held busy (a long write
/// transaction) delays the requests that need it, and nothing else. Before, every request's
/// store call ran on Swift's cooperative threads (two on this machine): eight admin requests
/// waiting to write their audit entries held them all, and `/health` and every SSE stream of
/// the process stopped with them.
@Suite struct BusyStoreTests {
    @Test func healthAndStreamsAnswerWhileAWriteTransactionHoldsTheStore() async throws {
        let f = try await ServerFixture()
        let store = f.store
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        // The long write, on a thread of its own. Its wait ends at 60 s whatever happens, so a
        // failing test ends too.
        let holder = Thread {
            _ = try? store.runTransaction { _ in
                holding.signal()
                _ = release.wait(timeout: .now() + 60)
            }
        }
        holder.start()
        #expect(holding.wait(timeout: .now() + 30) == .success, "the write transaction did not begin")
        defer { release.signal() }

        try await f.app().test(.live) { client in
            let port = UInt16(try #require(client.port))
            // Eight admin requests, each with an audit entry to write: all wait for the writer.
            let waiting = Collector<String>()
            for _ in 0..<8 {
                Task {
                    waiting.add(
                        await httpGet(port: port, path: "/v1/kiosks", headers: LiveTests.auth(f.admin), timeout: 60)
                            ?? ""
                    )
                }
            }
            // All eight wait for the writer (their tokens read) before the rest is timed.
            #expect(await until(10) { store.unfinished.writes == 8 }, "\(store.unfinished)")

            // The store stays held until the release below (60 s at most), so an answer at all
            // within the request's 5 s says it did not wait for the writer. (A bound of 1 s failed
            // once on a machine loaded with an evaluation beside the tests: 1.16 s.)
            for _ in 0..<5 {
                let started = Date()
                let answer = await httpGet(port: port, path: "/health", timeout: 5)
                let seconds = Date().timeIntervalSince(started)
                #expect(answer?.contains(#""status":"ok""#) == true, "\(answer ?? "no answer") after \(seconds) s")
            }
            // A device's status is a read: it does not wait for the writer either.
            let started = Date()
            let status = await httpGet(
                port: port,
                path: "/v1/devices/dev-1",
                headers: LiveTests.auth(f.device),
                timeout: 5
            )
            let seconds = Date().timeIntervalSince(started)
            #expect(status?.contains(#""deviceId":"dev-1""#) == true, "\(status ?? "no answer") after \(seconds) s")
            // A device's stream opens and sends its first event.
            let sse = try SSEClient(
                port: Int(port),
                path: "/v1/watch?path=devices/dev-1",
                headers: LiveTests.auth(f.device)
            )
            defer { sse.stop() }
            #expect(await sse.wait(timeout: 5) { !$0.isEmpty }, "no first event: \(sse.responseHead)")
            #expect(waiting.count == 0, "an admin request answered while its audit entry could not be written")

            // The write ends; the eight are answered.
            release.signal()
            for _ in 0..<8 {
                let answer = await onThread { waiting.next(timeout: 30) }
                #expect(answer?.contains(#""kiosks""#) == true, "\(answer ?? "no answer")")
            }
            #expect(store.unfinished.reads == 0 && store.unfinished.writes == 0, "\(store.unfinished)")
        }
    }
}

import Testing
import TracerModel

@Suite struct BackoffTests {
    @Test func doublesFromTheFirstToTheLongestAndStartsAgainAfterASuccess() {
        var b = Backoff(first: .milliseconds(250), longest: .seconds(8))
        #expect(
            (1...8).map { _ in b.failed() } == [250, 500, 1000, 2000, 4000, 8000, 8000, 8000].map { .milliseconds($0) }
        )
        #expect(b.failures == 8)
        b.succeeded()
        #expect(b.failed() == .milliseconds(250))
        #expect(b.ceiling(after: 10_000) == .seconds(8))
    }

    @Test func jitterFallsInTheUpperHalf() {
        let b = Backoff(first: .seconds(1), longest: .seconds(30), jitter: true)
        #expect(b.delay(after: 3, fraction: 0.5) == .seconds(2))
        #expect(b.delay(after: 3, fraction: 1) == .seconds(4))
        #expect(b.delay(after: 9, fraction: 0.2) == .seconds(15))
        for _ in 0..<100 {
            let d = b.delay(after: 4)
            #expect(d >= .seconds(4) && d <= .seconds(8))
        }
    }
}

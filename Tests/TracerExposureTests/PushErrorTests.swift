import Testing
import TracerExposure
@_spi(Blocking) import TracerStore

/// A subscription or endpoint tracer will not push to says why with a code and what it concerns,
/// beside the one line the API answers (422).
@Suite struct PushErrorTests {
    static let services: Set<String> = ["fcm.googleapis.com", "127.0.0.1"]

    func refusal(_ endpoint: String) -> PushError? {
        do throws(PushError) {
            try PushEndpoint.check(endpoint, services: Self.services)
            return nil
        } catch {
            return error
        }
    }

    @Test func endpointsGetTheirCodes() {
        #expect(refusal("https://fcm.googleapis.com/fcm/send/abc") == nil)
        #expect(refusal("fcm.googleapis.com/x")?.code == .notASubscription)
        #expect(refusal("https://user@fcm.googleapis.com/x")?.code == .endpoint)
        #expect(refusal("https://fcm.googleapis.com:8443/x")?.context == "fcm.googleapis.com")
        let elsewhere = refusal("https://push.example.org/x")
        #expect(elsewhere?.code == .notAService && elsewhere?.context == "push.example.org")
        #expect(refusal("http://fcm.googleapis.com/x")?.code == .endpoint)
    }

    @Test func keysSayWhichKey() {
        let json: Value = [
            "endpoint": "https://fcm.googleapis.com/fcm/send/abc", "keys": ["p256dh": "AAAA", "auth": "AAAA"],
        ]
        #expect {
            try PushSubscription(json: json, services: Self.services)
        } throws: { error in
            (error as? PushError)?.code == .key && (error as? PushError)?.context == "keys.p256dh"
        }
        #expect {
            try PushSubscription(json: ["keys": [:]], services: Self.services)
        } throws: { error in
            (error as? PushError)?.code == .notASubscription
        }
    }
}

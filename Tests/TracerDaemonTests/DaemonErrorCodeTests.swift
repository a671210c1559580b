import Testing
import TracerDBus

@testable import TracerDaemon

/// The advertiser's and the replay's errors carry a code to decide by and what they concern,
/// beside their one line for people.
@Suite struct DaemonErrorCodeTests {
    @Test func bluezRefusalsGetTheirCodes() {
        let cases: [(DBusError, AdvertiseError.Code)] = [
            (DBusError(name: "org.freedesktop.DBus.Error.ServiceUnknown", message: "x"), .bluezNotRunning),
            (DBusError(name: "org.freedesktop.DBus.Error.UnknownObject", message: "x"), .noAdapter),
            (DBusError(name: "org.bluez.Error.NotReady", message: "x"), .poweredOff),
            (DBusError(name: "org.bluez.Error.NotPermitted", message: "x"), .noSlot),
            (DBusError(name: "org.freedesktop.DBus.Error.Disconnected", message: "the system bus went away"), .noBus),
            (DBusError(name: "org.freedesktop.DBus.Error.FileNotFound", message: "x", call: "connect system"), .noBus),
            (DBusError(name: "org.bluez.Error.Failed", message: "Failed to register\nTraceback", call: "x"), .refused),
        ]
        for (e, code) in cases {
            let error = AdvertiseError(e, adapter: "hci1")
            #expect(error.code == code, "\(e.name): \(error.code)")
            #expect(error.context == "hci1: \(e.name)")
            #expect(!error.description.contains("\n") && !error.description.isEmpty, "\(error.description)")
        }
        #expect(
            AdvertiseError(DBusError(name: "org.bluez.Error.NotReady", message: ""), adapter: "hci1").description
                == "hci1 is powered off: bluetoothctl power on"
        )
    }

    @Test func aReplaysBadLineSaysWhichField() {
        func error(_ line: String) -> ReplayError? {
            do {
                _ = try ReplaySource.advert(line)
                return nil
            } catch {
                return error as? ReplayError
            }
        }
        #expect(error("[1]") == ReplayError(.notJSON, "not a JSON object"))
        #expect(error(#"{"rssi": -60}"#)?.context == "t")
        #expect(error(#"{"t": 1, "rssi": "loud"}"#)?.context == "rssi")
        #expect(error(#"{"t": 1, "rssi": -60, "manufacturerData": {"apple": "4c"}}"#)?.context == "manufacturerData")
        #expect(error(#"{"t": 1, "rssi": -60}"#) == nil)
    }
}

/// How long the site keeps what it learns of people: interactions, exposures, push
/// subscriptions a browser no longer renews, and the hold a denied report puts on a device's next
/// reports. The site's `settings: retentionDays` (default 14, the lookback of exposure
/// notification); the site server purges within a minute of expiry, a kiosk hourly.
public enum Retention {
    public static let defaultDays = 14.0
    public static let defaultSeconds = defaultDays * 86_400
    /// The range `retentionDays` takes.
    public static let days: ClosedRange<Double> = 1...60
}

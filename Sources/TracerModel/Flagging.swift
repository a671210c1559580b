import TracerStore

/// `flaggings/{reportId}`: a report's flagging while it runs and once it is done, so that the desk
/// that recorded the report and the flagger that saw it arrive decide it once between them
/// (`ExposureEngine.flag(reportID:on:sharing:)`). No person in it: the report's id, its device's
/// pseudonymous id in `input`, and times.
public enum Flagging {
    public static let collectionID = "flaggings"

    /// The fields, as the engine writes them.
    public enum Field {
        /// The report as decided: its device and time of collection.
        public static let input = "input"
        /// Who is deciding it now (one flag's own id), and since when (renewed while it decides).
        public static let claimedBy = "claimedBy"
        public static let claimedAt = "claimedAt"
        /// When its decision was committed, and the reporter's windows it looked at.
        public static let doneAt = "doneAt"
        public static let windows = "windows"

        public static let all = [input, claimedBy, claimedAt, doneAt, windows]
    }
}

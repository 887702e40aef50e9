/// What the thumbnail stage learned and made.
struct ThumbnailOutcome: Sendable, Codable {
    /// Width and height of the original as displayed (EXIF orientation applied).
    var sourceWidth: Int
    var sourceHeight: Int
    var file: String
    var width: Int
    var height: Int
    /// For a video's poster frame: its time in seconds.
    var time: Double?
    /// The size of the file written, as its writer knows it (so nobody asks the file).
    var bytes: Int64?
}

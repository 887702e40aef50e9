import AttachFetchCore

/// What the thumbnail stage learned and made.
package struct ThumbnailOutcome: Sendable, Codable {
    /// Width and height of the original as displayed (EXIF orientation applied).
    package var sourceWidth: Int
    package var sourceHeight: Int
    package var file: String
    package var width: Int
    package var height: Int
    /// For a video's poster frame: its time in seconds.
    package var time: Double?
    /// The size of the file written, as its writer knows it (so nobody asks the file).
    package var bytes: Int64?
    /// Asked for (`ThumbnailLimits.suggestClip`): the square, in the unit square of the
    /// whole image, that a thumbnail of it should show.
    package var suggestedClip: ClippingRectangle?
    /// The EXIF orientation (1-8) the source states, which the thumbnail applied; nil for 1 or
    /// none. A platform that ignores the tag (Android's notification) needs upright pixels.
    package var orientation: Int?
    /// The source's EXIF blocks state different orientations (a JPEG edited by a tool that
    /// added its own block): `orientation` is the first one's, as libvips reads it, and the
    /// delivered file must be made to say one thing. Nil when they agree.
    package var orientationsDisagree: Bool?
    /// The source carries an ICC profile: a platform that shows a file's numbers as sRGB
    /// (Android's notification) needs them converted. Nil for none.
    package var hasColourProfile: Bool?

    package init(sourceWidth: Int, sourceHeight: Int, file: String, width: Int, height: Int, time: Double? = nil, bytes: Int64? = nil) {
        self.sourceWidth = sourceWidth
        self.sourceHeight = sourceHeight
        self.file = file
        self.width = width
        self.height = height
        self.time = time
        self.bytes = bytes
    }
}

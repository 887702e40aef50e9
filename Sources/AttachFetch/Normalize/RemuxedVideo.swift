/// A QuickTime or 3GPP file moved into MPEG-4, streams copied as they are.
struct RemuxedVideo: Sendable, Codable {
    var file: String
    var bytes: Int64
    var sha256: String
}

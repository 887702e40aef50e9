import AttachFetchCore

/// A QuickTime or 3GPP file moved into MPEG-4, streams copied as they are.
package struct RemuxedVideo: Sendable, Codable {
    package var file: String
    package var bytes: Int64
    package var sha256: String

    package init(file: String, bytes: Int64, sha256: String) {
        self.file = file
        self.bytes = bytes
        self.sha256 = sha256
    }
}

import AttachFetchCore

/// Whether, and how far, one attachment's sound and video may be re-encoded: the pipeline's
/// `transcode` and `transcodeMaxLongEdge`, or a request's own (`AttachmentRequest.transcoding`).
/// Checked when made, so that a bad value is an error naming it, never a failed attachment.
public struct TranscodeSettings: Sendable, Hashable {
    /// Re-encode what iOS cannot play; off, it is refused (`unsupportedType`).
    public let enabled: Bool
    /// The re-encoded video's longest edge at most, in pixels: from 16 to 4096.
    public let maxLongEdge: Int

    /// The longest edges a transcode may be given, in pixels: the one place the range is written.
    public static let longEdges = 16...4096
    /// `longEdges` in words, for messages and help: "16 to 4096".
    public static var longEdgesText: String { "\(longEdges.lowerBound) to \(longEdges.upperBound)" }

    public init(enabled: Bool = true, maxLongEdge: Int = 1280) throws(AttachFetchError) {
        guard Self.longEdges.contains(maxLongEdge) else {
            throw .invalidConfiguration("the transcode max long edge must be from \(Self.longEdgesText) pixels, not \(maxLongEdge)")
        }
        (self.enabled, self.maxLongEdge) = (enabled, maxLongEdge)
    }
}

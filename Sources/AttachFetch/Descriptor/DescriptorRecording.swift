/// How the stages' results are written into a descriptor, the same way by the pipeline and by
/// `LocalMediaInspector`.
extension AttachmentDescriptor {
    /// A converted image: the delivered file's facts, and the original's size as displayed.
    mutating func record(_ image: NormalizedImage) {
        bytes = image.bytes
        sha256 = image.sha256
        width = image.width
        height = image.height
        sourceWidth = image.sourceWidth
        sourceHeight = image.sourceHeight
        transforms = image.transforms
    }

    /// FFmpeg's probe of audio or video (delivered as downloaded, so source size = delivered).
    mutating func record(_ probe: MediaProbe) {
        duration = probe.duration
        videoCodec = probe.videoCodec
        audioCodec = probe.audioCodec
        width = probe.width
        height = probe.height
        sourceWidth = probe.width
        sourceHeight = probe.height
    }

    /// The delivered type's row of the table.
    mutating func record(delivered type: MediaType) {
        mimeType = type.mimeType
        kind = type.kind
        uti = type.uti
        fileExtension = type.fileExtension
    }
}

extension MediaPolicy {
    /// The delivered file against its kind's limit, once the kind is final (an MPEG-4 file
    /// streamed under the larger of the audio and video limits).
    static func checkDelivered(_ type: MediaType, bytes: Int64, limits: AttachFetchConfiguration.SizeLimits) -> Refusal? {
        let limit = limits.limit(for: type.kind)
        guard bytes > limit else { return nil }
        return Refusal(code: .sizeLimitExceeded,
                       message: "the file is \(type.mimeType) (its streams say so), and its \(bytes) bytes exceed the \(type.kind.rawValue) limit of \(limit) bytes")
    }
}

/// How the stages' results are written into a descriptor, the same way by the pipeline and by
/// `LocalMediaInspector`.
extension AttachmentDescriptor {
    /// The downloaded original, before any stage: delivered as it is until a stage says otherwise.
    mutating func recordSource(_ type: MediaType, bytes: Int64) {
        sourceMimeType = type.mimeType
        sourceBytes = bytes
        self.bytes = bytes
        transforms = []
    }

    /// An image's thumbnail was made from the delivered file: its size as displayed is the
    /// delivered size, and the source size too unless a conversion recorded another.
    mutating func record(thumbnailOf made: ThumbnailOutcome) {
        width = made.sourceWidth
        height = made.sourceHeight
        sourceWidth = sourceWidth ?? made.sourceWidth
        sourceHeight = sourceHeight ?? made.sourceHeight
    }

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

    /// A video moved into MPEG-4: the delivered file's facts.
    mutating func record(_ video: RemuxedVideo) {
        bytes = video.bytes
        sha256 = video.sha256
        transforms = [.remuxed]
    }

    /// FFmpeg's probe of audio or video (streams are never re-encoded, so source size = delivered).
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

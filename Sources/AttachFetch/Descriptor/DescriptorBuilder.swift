/// The one writer of descriptor fields, for the pipeline and `LocalMediaInspector` alike. Each
/// fact is recorded when it becomes known; `ready` or `failed` then writes the descriptor. A
/// failure keeps every fact known by then (URL after redirects, declared and sniffed type,
/// kind, bytes, source facts, transforms, timings); only a ready attachment has a file.
struct DescriptorBuilder: Sendable {
    private var descriptor: AttachmentDescriptor
    /// `timings.total` is measured from here (the start of the batch).
    private let start: ContinuousClock.Instant

    init(identifier: String, url: String, start: ContinuousClock.Instant,
         role: AttachmentDescriptor.Role? = nil, options: AttachmentOptions? = nil, payloadPath: String? = nil) {
        descriptor = AttachmentDescriptor(identifier: identifier, url: url, status: .ready, timings: .init(total: 0))
        descriptor.role = role
        descriptor.options = options
        descriptor.payloadPath = payloadPath
        self.start = start
    }

    /// What the download learned, also when it failed: where it ended, what the server said
    /// and what the bytes were (the table's name, or libmagic's).
    mutating func record(_ outcome: TransferOutcome) {
        descriptor.finalUrl = outcome.finalURL
        descriptor.declaredMimeType = outcome.declaredMIME
        descriptor.timings.connect = outcome.connectMilliseconds
        descriptor.timings.firstByte = outcome.firstByteMilliseconds
        descriptor.timings.download = outcome.downloadMilliseconds
        descriptor.timings.queued = outcome.queuedMilliseconds
        descriptor.ats = outcome.ats
        // A body refused though read whole: its size and hash are known facts.
        if outcome.failure != nil, let sha256 = outcome.sha256 { recordRefusedWhole(bytes: outcome.bytes, sha256: sha256) }
        record(sniffed: outcome.mediaType?.mimeType ?? outcome.sniffedMIME, kind: outcome.mediaType?.kind)
    }

    /// A body refused though read whole (shorter than the sniff window): its size and hash.
    mutating func recordRefusedWhole(bytes: Int64, sha256: String) {
        (descriptor.bytes, descriptor.sha256) = (bytes, sha256)
    }

    mutating func record(sniffed mime: String?, kind: AttachmentDescriptor.Kind?) {
        descriptor.mimeType = mime
        descriptor.kind = kind
    }

    /// The original, admitted: delivered as it is until a stage says otherwise.
    mutating func recordSource(_ type: MediaType, bytes: Int64, sha256: String) {
        record(sniffed: type.mimeType, kind: type.kind)
        descriptor.sourceMimeType = type.mimeType
        descriptor.sourceBytes = bytes
        descriptor.bytes = bytes
        descriptor.sha256 = sha256
        descriptor.transforms = []
    }

    /// An image's thumbnail was made from the delivered file: its size as displayed is the
    /// delivered size, and the source size too unless a conversion recorded another.
    mutating func record(thumbnailOf made: ThumbnailOutcome) {
        descriptor.width = made.sourceWidth
        descriptor.height = made.sourceHeight
        descriptor.sourceWidth = descriptor.sourceWidth ?? made.sourceWidth
        descriptor.sourceHeight = descriptor.sourceHeight ?? made.sourceHeight
        descriptor.thumbnailClip = made.suggestedClip
    }

    /// The square a video's poster suggests for iOS's thumbnail (`ThumbnailOutcome.suggestedClip`).
    mutating func record(posterClip: ClippingRectangle?) {
        descriptor.thumbnailClip = posterClip
    }

    /// A converted image: the delivered file's facts, and the original's size as displayed.
    mutating func record(_ image: NormalizedImage) {
        descriptor.bytes = image.bytes
        descriptor.sha256 = image.sha256
        descriptor.width = image.width
        descriptor.height = image.height
        descriptor.sourceWidth = image.sourceWidth
        descriptor.sourceHeight = image.sourceHeight
        descriptor.transforms = image.transforms
    }

    /// The delivered image with its pixels turned once (`Stage.orientOnce`): its blocks moved
    /// (`oriented` alone), or encoded again (`reencoded` too).
    mutating func record(oriented image: NormalizedImage) {
        record(image)
        if image.transforms.contains(.oriented) == false { descriptor.transforms = image.transforms + [.oriented] }
    }

    /// A video moved into MPEG-4: the delivered file's facts.
    mutating func record(_ video: RemuxedVideo) {
        descriptor.bytes = video.bytes
        descriptor.sha256 = video.sha256
        descriptor.transforms = [.remuxed]
    }

    /// Audio or video re-encoded: the delivered file's facts, and the source's codec.
    /// `sourceVideo`: what the probe found the video to be, where it says more than the codec
    /// ("H.264 High 10").
    mutating func record(_ made: TranscodedMedia, sourceVideo: String? = nil) {
        descriptor.bytes = made.bytes
        descriptor.sha256 = made.sha256
        descriptor.sourceAudioCodec = made.sourceAudioCodec
        descriptor.sourceVideoCodec = sourceVideo ?? made.sourceVideoCodec
        descriptor.transforms = (made.reencoded ? [.transcoded] : []) + (made.trimmed ? [.trimmed] : []) + (made.damage != nil ? [.partial] : [])
        descriptor.sourceDamage = made.damage
        // The source's size, not the delivered one the probe of the result reports.
        if let width = made.sourceWidth, let height = made.sourceHeight {
            (descriptor.sourceWidth, descriptor.sourceHeight) = (width, height)
        }
        // Cut short by the deadline: a best attempt, never cached, so a caller with more time
        // gets the whole clip.
        if made.outOfTime { descriptor.skippedAtDeadline = (descriptor.skippedAtDeadline ?? []) + ["transcode"] }
    }

    /// FFmpeg's probe of the delivered audio or video: its size is the source's too unless a
    /// transcode recorded the source's own.
    mutating func record(_ probe: MediaProbe) {
        descriptor.duration = probe.duration
        descriptor.statedDuration = probe.statedDuration
        descriptor.videoCodec = probe.videoCodec
        descriptor.audioCodec = probe.audioCodec
        descriptor.width = probe.width
        descriptor.height = probe.height
        descriptor.sourceWidth = descriptor.sourceWidth ?? probe.width
        descriptor.sourceHeight = descriptor.sourceHeight ?? probe.height
    }

    /// A platform's variant: made, unsupported, or missing and why.
    mutating func record(_ platform: Platform, variant: AttachmentDescriptor.Variant) {
        descriptor.variants = descriptor.variants ?? [:]
        descriptor.variants?[platform.rawValue] = variant
    }

    /// A platform's variant that was made.
    mutating func record(_ platform: Platform, variant image: NormalizedImage) {
        var variant = AttachmentDescriptor.Variant()
        variant.file = image.file
        variant.bytes = image.bytes
        variant.sha256 = image.sha256
        variant.mimeType = image.type.mimeType
        variant.width = image.width
        variant.height = image.height
        variant.transforms = image.transforms
        record(platform, variant: variant)
    }

    /// One published object: its URL, and when encrypted, its size and key.
    struct PublishedFile: Sendable {
        var url: String
        var bytes: Int64? = nil
        var encryption: AttachmentDescriptor.Encryption? = nil
    }

    /// Where the delivered file, its thumbnail and its variants were published.
    mutating func recordPublished(file: PublishedFile, thumbnail: PublishedFile?, variants: [Platform: PublishedFile]) {
        descriptor.publishedUrl = file.url
        descriptor.publishedBytes = file.bytes
        descriptor.encryption = file.encryption
        publishedThumbnail = thumbnail
        for (platform, published) in variants {
            descriptor.variants?[platform.rawValue]?.publishedUrl = published.url
            descriptor.variants?[platform.rawValue]?.publishedBytes = published.bytes
            descriptor.variants?[platform.rawValue]?.encryption = published.encryption
        }
    }

    private var publishedThumbnail: PublishedFile?

    /// The steps after the download that have a timing of their own.
    enum TimedStep: String, Sendable { case normalize, thumbnail, probe, variants }

    /// A step that degrades was still running at the batch deadline and was left out.
    mutating func recordSkippedAtDeadline(_ step: TimedStep) {
        descriptor.skippedAtDeadline = (descriptor.skippedAtDeadline ?? []) + [step.rawValue]
    }

    /// How long a step took, in milliseconds.
    mutating func recordTime(_ step: TimedStep, since started: ContinuousClock.Instant) {
        let elapsed = started.millisecondsElapsed
        switch step {
        case .normalize: descriptor.timings.normalize = elapsed
        case .thumbnail: descriptor.timings.thumbnail = elapsed
        case .probe: descriptor.timings.probe = elapsed
        case .variants: descriptor.timings.variants = elapsed
        }
    }

    /// The bytes that will be delivered (the original's, or a conversion's).
    var deliveredBytes: Int64? { descriptor.bytes }
    /// The delivered image's size as displayed, once known.
    var deliveredSize: (width: Int, height: Int)? { descriptor.width.flatMap { width in descriptor.height.map { (width, $0) } } }
    /// The SHA-256 of the bytes that will be delivered.
    var deliveredSHA256: String? { descriptor.sha256 }

    /// A ready attachment: the delivered type's row of the table, its file and thumbnail.
    func ready(_ type: MediaType, file: String, thumbnail: AttachmentDescriptor.Thumbnail?,
               variantFiles: [Platform: String] = [:]) -> AttachmentDescriptor {
        var result = descriptor
        for (platform, path) in variantFiles { result.variants?[platform.rawValue]?.file = path }
        result.mimeType = type.mimeType
        result.kind = type.kind
        result.uti = type.uti
        result.fileExtension = type.fileExtension
        result.file = file
        result.thumbnail = thumbnail
        result.thumbnail?.publishedUrl = publishedThumbnail?.url
        result.thumbnail?.publishedBytes = publishedThumbnail?.bytes
        result.thumbnail?.encryption = publishedThumbnail?.encryption
        result.timings.total = start.millisecondsElapsed
        return result
    }

    /// An attachment that is not ready, with every fact known so far; the status follows from the code.
    func failed(_ reason: Reason) -> AttachmentDescriptor {
        var result = descriptor
        // Nothing is delivered, so no variant or published file is either.
        result.variants = nil
        result.publishedUrl = nil
        result.publishedBytes = nil
        result.encryption = nil
        result.status = reason.code.status
        result.reason = reason
        result.timings.total = start.millisecondsElapsed
        return result
    }
}

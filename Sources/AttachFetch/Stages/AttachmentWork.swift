/// One attachment between the download and its delivery: what is known of it (the descriptor
/// being built), the file that will be delivered, the thumbnail made, and the ledger owning the
/// files made on the way. Every stage reads and updates it; both runners carry it the same way.
struct AttachmentWork: Sendable {
    /// The bytes as they arrived: their file, libmagic's type, the type `BodyAdmission`
    /// admitted them as, size and SHA-256.
    struct Source: Sendable {
        var path: String
        var sniffedMIME: String
        var type: MediaType
        var bytes: Int64
        var sha256: String
    }

    /// What the caller asked for beyond the URL, and where the stages write.
    struct Plan: Sendable {
        var shape: ThumbnailShape = .clip(.whole)
        var thumbnailTime: Double?
        /// Avatars: only images are admitted.
        var imagesOnly = false
        /// Where a converted image or remuxed video is written (plus an extension) when it
        /// cannot be an unnamed file.
        var convertedBase: String
        /// Where the thumbnail or poster is written (plus an extension), the same way.
        var thumbnailBase: String
        /// Where a platform variant is written (plus an extension), the same way.
        var variantBase: String = ""
        /// Where every output is made as an unnamed file (`UnnamedFile`); nil: at the bases
        /// above, named (the local inspector's).
        var workDirectory: String? = nil
        /// The platforms the media must show on (variants for those whose limits it breaks).
        var platforms: Set<Platform> = [.ios]
        /// Set when what is published is encrypted.
        var encryption: MediaEncryption? = nil
        /// Whether, and how far, sound and video are re-encoded (the request's or the pipeline's).
        var transcoding: TranscodeSettings? = nil
        /// How the Android variant is cut to 2:1 and the iOS thumbnail's square chosen; nil:
        /// neither (`none`, or an avatar).
        var crop: PictureCrop? = nil
        /// Work nobody waits for (a campaign's whole clip): its probes and transcodes run on the
        /// background decoder thread.
        var background = false
    }

    /// A file and its type.
    struct TypedFile: Sendable {
        var path: String
        var type: MediaType
    }

    var descriptor: DescriptorBuilder
    let source: Source
    let plan: Plan
    let ledger: FileLedger
    /// Set by the admitting stage: the original; then whatever a conversion made.
    var delivered: TypedFile?
    var thumbnail: ThumbnailOutcome?
    /// Variant files made, by platform.
    var variantFiles: [Platform: String] = [:]
    /// A video's poster frame at up to `Stage.androidFrameEdge`, for its Android variant (not
    /// delivered: the ledger frees it with the other working files).
    var androidFrame: String?
    /// What the probe found the video needs before iOS plays it; cleared once it is done.
    var conversion: PlayableConversion?
    /// The delivered file was made playable after the probe: probe it again.
    var reprobe = false

    /// The transcoding this attachment runs under.
    func transcoding(_ configuration: AttachFetchConfiguration) -> TranscodeSettings {
        plan.transcoding ?? configuration.transcoding
    }

    /// What a transcode of the delivered file may make, of `kind`.
    func transcodeLimits(_ kind: AttachmentDescriptor.Kind, _ configuration: AttachFetchConfiguration) -> TranscodeLimits {
        var limits = TranscodeLimits(maxBytes: configuration.sizeLimits.limit(for: kind), maxLongEdge: transcoding(configuration).maxLongEdge,
                                            maxPixels: configuration.maxImagePixels)
        limits.audioOnlyMaxBytes = configuration.sizeLimits.limit(for: .audio)
        return limits
    }

    /// The delivered file, once admitted (the stages after admission rely on it).
    var admitted: TypedFile {
        guard let delivered else { preconditionFailure("a stage ran before the admitting stage") }
        return delivered
    }

    /// The descriptor of a ready attachment whose files are at `file`, `thumbnailFile` and
    /// `variantFiles` (by platform).
    func ready(file: String, thumbnailFile: String?, variantFiles: [Platform: String] = [:]) -> AttachmentDescriptor {
        descriptor.ready(admitted.type, file: file, thumbnail: thumbnail.flatMap { made in
            thumbnailFile.map { .init(file: $0, width: made.width, height: made.height, time: made.time) }
        }, variantFiles: variantFiles)
    }
}

extension AttachmentWork {
    /// Where the thumbnail or poster is written (plus an extension): a new unnamed file in the
    /// work directory, owned by the ledger, or where there is none, `plan.thumbnailBase`.
    func thumbnailOutput() -> String {
        newWorkingFile(or: plan.thumbnailBase)
    }

    /// Where a conversion of the downloaded file is written (a converted image, a remuxed or
    /// transcoded clip): a new unnamed file, or `plan.convertedBase` plus `suffix`. A worker
    /// makes no file by name: its Landlock rule in the work directory reads and writes files
    /// only (docs/security.md), so what it can fill there is bounded.
    func convertedOutput(_ suffix: String = "") -> String {
        newWorkingFile(or: plan.convertedBase + suffix)
    }

    /// Where a platform variant is written: a new unnamed file, or `plan.variantBase`.
    func variantOutput() -> String {
        newWorkingFile(or: plan.variantBase)
    }

    /// Where a video's poster frame for its Android variant is written: a new unnamed file,
    /// or a named one beside the variants.
    func androidFrameOutput() -> String {
        newWorkingFile(or: "\(plan.variantBase).frame")
    }

    /// Where an encrypted copy for publishing is written: a new unnamed file owned by the
    /// ledger, or a new named one beside the variants. The caller removes it once published.
    func encryptedCopyOutput() -> String {
        let path = newWorkingFile(or: "\(plan.variantBase).enc-\(UInt64.random(in: 0...UInt64.max))")
        ledger.own(path)
        return path
    }

    /// The named path when the ledger is closed too: a file written there arrives late and is
    /// removed at once (`FileLedger.own`).
    private func newWorkingFile(or named: String) -> String {
        guard let directory = plan.workDirectory, let file = UnnamedFile.create(in: directory) else { return named }
        return ledger.own(file) ?? named
    }
}

import Foundation

// MARK: Android

extension Stage {
    /// Android shows no audio or video in a notification: not a failure of the attachment,
    /// which iOS still shows.
    static let androidSupport = Stage(name: "android support", body: .check { work, _ in
        let kind = work.admitted.type.kind
        // A video with a poster gets the poster as its Android variant (`androidVariant`).
        if work.plan.platforms.contains(.android) && (kind == .audio || kind == .video && work.thumbnail == nil) {
            work.descriptor.record(.android, variant: .init(status: .unsupported, reason: Reason(
                code: .unsupportedOnPlatform,
                message: "Android shows no \(kind.rawValue) in a notification: only \(Platform.androidImageRule)"
                    + (kind == .video ? "; this video has no poster to send instead" : ""))))
        }
        return nil
    })

    /// A video's Android picture is its poster's frame, not its thumbnail: Android's big
    /// picture shows about 2:1 across the screen, up to 1024x512, and a 320-px thumbnail made
    /// it 320x160 (a portrait clip's 180x90). The frame the probe chose is decoded again, at its
    /// time, whole (a `clip` is the thumbnail's alone) and at most `androidFrameEdge` on its
    /// longer side, for `androidVariant` to cut. The probe that chose it kept only the
    /// thumbnail: a second decode of one frame costs less than carrying a full frame through
    /// every probe whose attachment Android never shows. Failing or late, the variant is made
    /// from the thumbnail as before.
    static let androidPosterFrame = Stage(name: "android poster frame", body: .decode(
        on: .probe, whenLate: .degrade, timing: .variants,
        job: { work, configuration in
            let file = work.admitted
            guard work.plan.platforms.contains(.android), file.type.kind == .video, let poster = work.thumbnail else { return nil }
            var limits = ProbeLimits(configuration)
            limits.thumbnail.maxEdge = androidFrameEdge
            // The delivered file plays already: the probe is for the frame alone.
            (limits.convertsUnplayable, limits.transcodesUnplayable) = (false, false)
            return .probe(source: file.path, type: file.type, thumbnailTime: poster.time ?? work.plan.thumbnailTime,
                          thumbnailBase: work.androidFrameOutput(), shape: .clip(.whole), limits: limits)
        },
        take: { answer, work in work.androidFrame = answer.probed?.poster?.file },
        ifFailed: .note { _, _ in }))

    /// The longer side of the frame a video's Android picture is cut from: a 2:1 cut of it is
    /// at least 1024 wide for any frame of 2:1 or narrower, so the 1024x512 picture is never
    /// enlarged from less than the source had.
    static let androidFrameEdge = 2048

    /// An image Android would not show as delivered (not a still JPEG or PNG within 1 MB, or
    /// turned by an EXIF orientation or coloured by an ICC profile, both of which Android's
    /// notification ignores), or whose shape is
    /// not about 2:1 (`PictureCrop.needsTwoToOne`) while the request crops, gets
    /// an Android variant that fits, cut to 2:1 by the request's crop; a video gets its poster
    /// frame (`androidPosterFrame`, or the thumbnail when that failed) as a JPEG, cut the same
    /// way. Failing or late, the variant is missing and says why; the attachment is still
    /// delivered.
    static let androidVariant = Stage(name: "android variant", body: .decode(
        on: .image, whenLate: .degrade, timing: .variants,
        job: { work, configuration in
            let file = work.admitted
            guard work.plan.platforms.contains(.android) else { return nil }
            var limits = NormalizeLimits(android: configuration)
            limits.crop = work.plan.crop
            if file.type.kind == .video, let frame = work.androidFrame ?? work.thumbnail?.file {
                let type: MediaType = (frame as NSString).pathExtension == "png" ? .png : .jpeg
                return .normalize(source: UnnamedFile.openable(frame), type: type, destinationBase: work.variantOutput(), limits: limits)
            }
            guard file.type.kind == .image else { return nil }
            let cropped = work.plan.crop != nil && work.descriptor.deliveredSize.map { PictureCrop.needsTwoToOne(width: $0.width, height: $0.height) } == true
            // The worker's word on orientation and profile decides only whether a variant is made.
            let turned = work.thumbnail?.orientation != nil || work.thumbnail?.hasColourProfile == true
            guard cropped || turned || !Platform.androidShows(file.type, bytes: work.descriptor.deliveredBytes ?? work.source.bytes) else { return nil }
            return .normalize(source: file.path, type: file.type, destinationBase: work.variantOutput(), limits: limits)
        },
        take: { answer, work in
            guard let image = answer.normalized else { return }
            work.variantFiles[.android] = image.file
            work.descriptor.record(.android, variant: image)
        },
        ifFailed: .note { reason, work in
            work.descriptor.record(.android, variant: .init(status: .failed, reason: reason.code == .deadlineExceeded ? reason
                : Reason(code: reason.code, message: "no Android variant: \(reason.message)")))
        }))
}

import AttachFetchRuntime
import Foundation

/// One step after the download, as data: what it runs, on which worker threads, and what
/// happens when the batch deadline passes before it finishes. `Stage.afterDownload` is the one
/// list; `InlineRunner` (the inspector, the fuzzer) and `RacedRunner` (the pipeline) execute it.
struct Stage: Sendable {
    /// The worker threads a decode runs on.
    enum Workers: Sendable {
        /// The thumbnail threads (`thumbnailThreads`): libvips and libjpeg-turbo work.
        case image
        /// The probe thread (`probeThreads`): FFmpeg work.
        case probe
    }

    /// What a stage that is still running at the deadline means for the attachment.
    enum WhenLate: Sendable {
        /// The attachment fails with this reason.
        case fail(Reason)
        /// The attachment is delivered without what the stage would have added.
        case degrade
    }

    /// What a decode's failure (or, for a stage that degrades, its lateness) means.
    enum IfFailed: Sendable {
        /// The attachment stops with the failure.
        case stop
        /// The attachment goes on; the failure is noted (a variant missing, and why).
        case note(@Sendable (Reason, inout AttachmentWork) -> Void)
    }

    /// What a stage does with an attachment.
    enum Body: Sendable {
        /// A quick decision in Swift, made where the flow runs; a reason stops the attachment.
        case check(@Sendable (inout AttachmentWork, AttachFetchConfiguration) -> Reason?)
        /// Blocking file work (publishing), run on a file thread, never on the cooperative
        /// pool, when `applies`; a reason stops the attachment. It is short and bounded, and a
        /// file half-written must not be left, so it is waited for even past the deadline.
        case files(applies: @Sendable (AttachFetchConfiguration) -> Bool,
                   body: @Sendable (inout AttachmentWork, AttachFetchConfiguration) -> Reason?)
        /// Uploads to the object store (through its own engine, never blocking the cooperative
        /// pool), when one is configured; a reason stops the attachment. Counts against the
        /// deadline like any other stage.
        case upload(@Sendable (inout AttachmentWork, ObjectPublisher, Batch) async -> Reason?)
        /// A decoder job on worker threads. `job` is nil when the stage does not apply to this
        /// attachment; `take` records the answer's success, which the runner has checked.
        case decode(on: Workers, whenLate: WhenLate, timing: DescriptorBuilder.TimedStep,
                    job: @Sendable (AttachmentWork, AttachFetchConfiguration) -> DecodeJob?,
                    take: @Sendable (DecodeAnswer, inout AttachmentWork) -> Void,
                    ifFailed: IfFailed = .stop)
    }

    let name: String
    let body: Body
    /// Its span's name, made once (`Stage+Span.swift`).
    let spanName: String

    init(name: String, body: Body) {
        (self.name, self.body, spanName) = (name, body, Self.spanName(for: name))
    }

    /// What the runners do with a stage's decode answer: record it, or stop with its failure.
    /// The answer's files belong to the ledger from here, whatever happens next.
    static func finish(_ answer: DecodeAnswer, started: ContinuousClock.Instant,
                       timing: DescriptorBuilder.TimedStep, ifFailed: IfFailed,
                       take: (DecodeAnswer, inout AttachmentWork) -> Void, work: inout AttachmentWork) -> Reason? {
        work.ledger.own(answer.files)
        // The keeper's sealed copies stand for the worker's files, which go now.
        for sealed in answer.sealed { _ = work.ledger.own(sealed) }
        for file in answer.superseded {
            work.ledger.own(file)
            work.ledger.remove(file)
        }
        if let failure = answer.failure {
            guard case .note(let note) = ifFailed else { return failure }
            note(failure, &work)
            return nil
        }
        take(answer, &work)
        work.descriptor.recordTime(timing, since: started)
        return nil
    }
}

extension Stage {
    /// The steps after the download, in order. Each applies only to the kinds it names.
    static let afterDownload: [Stage] = [admit, convertImage, remuxVideo, transcode, thumbnail, orientOnce, probe, makePlayable, probePlayable,
                                         deliveredLimit,
                                         androidSupport, androidPosterFrame, androidVariant, publish, publishToStore]

    /// The type `BodyAdmission` admitted the bytes as, while they arrived, becomes the
    /// delivered file's (the decision itself is not made again here).
    static let admit = Stage(name: "admit", body: .check { work, _ in
        let source = work.source
        work.descriptor.recordSource(source.type, bytes: source.bytes, sha256: source.sha256)
        work.delivered = .init(path: source.path, type: source.type)
        return nil
    })

    /// An image iOS would not show as it is (type or size) is converted and fitted, or fails;
    /// an animation too large as a GIF becomes an H.264 video when transcoding is on.
    static let convertImage = Stage(name: "convert image", body: .decode(
        on: .image,
        whenLate: .fail(Reason(code: .deadlineExceeded, message: "the batch deadline passed while the image was being converted to fit")),
        timing: .normalize,
        job: { work, configuration in
            let file = work.admitted
            guard MediaPolicy.needsConversion(file.type, bytes: work.source.bytes, limits: configuration.sizeLimits) else { return nil }
            var limits = NormalizeLimits(configuration)
            // GIF and AVIF sequences: FFmpeg decodes no animated WebP.
            if [.gif, .avif].contains(file.type), work.transcoding(configuration).enabled {
                limits.animationAsVideo = work.transcodeLimits(.video, configuration)
            }
            return .normalize(source: file.path, type: file.type, destinationBase: work.convertedOutput(), limits: limits)
        },
        take: { answer, work in
            // An animation too large as a GIF arrives as a video.
            work.takeTranscoded(answer)
            guard let image = answer.normalized else { return }
            work.supersede(with: .init(path: image.file, type: image.type))
            work.descriptor.record(image)
        }))

    /// QuickTime, 3GPP, a transport stream, Matroska or AAC in ADTS is copied into MPEG-4; with
    /// a stream MPEG-4 cannot carry (H.263, MP2, PCM, VP9, ...) it is transcoded instead when
    /// transcoding is on; or fails.
    static let remuxVideo = Stage(name: "remux video", body: .decode(
        on: .probe,
        whenLate: .fail(Reason(code: .deadlineExceeded, message: "the batch deadline passed while the video was being moved into MPEG-4")),
        timing: .normalize,
        job: { work, configuration in
            let file = work.admitted
            guard MediaPolicy.needsRemux(file.type) else { return nil }
            let fallback = work.transcoding(configuration).enabled
                ? TranscodeFallback(type: file.type, limits: work.transcodeLimits(file.type.kind, configuration))
                : nil
            return .remux(source: file.path, destinationBase: work.convertedOutput(), orTranscode: fallback)
        },
        take: { answer, work in
            work.takeRemuxed(answer)
            work.takeTranscoded(answer)
        }))

    /// What iOS does not play is re-encoded: audio (Ogg, FLAC) into AAC in MPEG-4 audio, video
    /// (WebM, Matroska) into H.264 and AAC in MPEG-4; an MP3 over the audio limit is cut to fit;
    /// or fails.
    static let transcode = Stage(name: "transcode", body: .decode(
        on: .probe,
        whenLate: .fail(Reason(code: .deadlineExceeded, message: "the batch deadline passed while the media was being transcoded")),
        timing: .normalize,
        job: { work, configuration in
            let file = work.admitted
            guard MediaPolicy.needsTranscode(file.type)
                    || configuration.normalize && MediaPolicy.needsCut(file.type, bytes: work.source.bytes, limits: configuration.sizeLimits)
            else { return nil }
            return .transcode(source: file.path, type: file.type, destinationBase: work.convertedOutput(),
                              limits: work.transcodeLimits(file.type.kind, configuration))
        },
        take: { answer, work in work.takeTranscoded(answer) }))

    /// An image is decoded in full (so truncated or corrupt files fail) and thumbnailed. Late,
    /// it is delivered without a thumbnail — and so without that full decode: a truncated image
    /// whose decode the deadline cut short is delivered `ready` (the README's time contract).
    static let thumbnail = Stage(name: "thumbnail", body: .decode(
        on: .image, whenLate: .degrade, timing: .thumbnail,
        job: { work, configuration in
            let file = work.admitted
            guard file.type.kind == .image else { return nil }
            var limits = ThumbnailLimits(configuration)
            limits.suggestClip = work.plan.crop
            return .thumbnail(source: file.path, destinationBase: work.thumbnailOutput(), shape: work.plan.shape, limits: limits)
        },
        take: { answer, work in
            guard let made = answer.thumbnail else { return }
            work.thumbnail = made
            work.descriptor.record(thumbnailOf: made)
        }))

    /// Audio and video are probed with FFmpeg (streams decoded; kind from the streams) and a
    /// video gets a poster frame. Any MPEG-4 file may turn out to hold video. Late, the file is
    /// delivered as sniffed, without probe or poster. Video iOS cannot play is left to
    /// `makePlayable` (Stage+Playable.swift).
    static let probe = probing(name: "probe") { _ in true }

    /// Audio or video against its final kind's limit (an MPEG-4 file streamed under the larger
    /// of the audio and video limits).
    static let deliveredLimit = Stage(name: "delivered limit", body: .check { work, configuration in
        let file = work.admitted
        guard file.type.kind != .image else { return nil }
        return MediaPolicy.checkDelivered(file.type, bytes: work.descriptor.deliveredBytes ?? work.source.bytes,
                                          limits: configuration.sizeLimits)
    })
}

// MARK: Publishing

extension Stage {
    /// Ready files are stored content-addressed in the publish directory, when one is configured.
    /// A write that fails (disk full, permissions) fails the attachment with `ioError`.
    static let publish = Stage(name: "publish", body: .files(applies: { $0.publish != nil }) { work, configuration in
        guard let publishing = configuration.publish else { return nil }
        do throws(Reason) {
            let files = try work.publishables()
            defer { work.removeEncryptedCopies(files) }
            let urls = try files.map { (_, publishable) throws(Reason) in
                let file = publishable.file
                return publishing.url(of: try Publisher.publish(file.path, sha256: file.sha256, suffix: file.suffix, into: publishing.directory))
            }
            work.recordPublished(files, at: urls)
            return nil
        } catch {
            return error
        }
    })
}

extension Stage {
    /// Ready files are uploaded content-addressed to the object store, when one is configured.
    /// A store that refuses (after retries) fails the attachment with `publishFailed`.
    static let publishToStore = Stage(name: "publishToStore", body: .upload { work, publisher, batch in
        do throws(Reason) {
            let files = try await publisher.fileWorkers.run { [work] _ throws(Reason) in try work.publishables() }
            defer { work.removeEncryptedCopies(files) }
            var urls: [String] = []
            for (_, publishable) in files { urls.append(try await publisher.publish(publishable.file, batch: batch)) }
            work.recordPublished(files, at: urls)
            return nil
        } catch {
            return error
        }
    })
}

extension AttachmentWork {
    /// A conversion replaced the delivered file: the one before it goes now (the caller's own
    /// file, outside the ledger, is left alone).
    mutating func supersede(with file: TypedFile) {
        if let old = delivered?.path { ledger.remove(old) }
        delivered = file
    }
}

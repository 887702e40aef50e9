/// Probing, and making playable what the probe found iOS cannot play: HEVC tagged `hev1` is
/// re-tagged `hvc1` (a remux, no re-encoding); other video (H.264 above High or not 8-bit
/// 4:2:0, AV1 or VP9 in MPEG-4, ...) and sound (Opus, FLAC, PCM, AC-3 in MPEG-4) is
/// transcoded; then the new file is probed.
extension Stage {
    /// A probe stage, run when `when` says so.
    static func probing(name: String, when: @escaping @Sendable (AttachmentWork) -> Bool) -> Stage {
        Stage(name: name, body: .decode(
            on: .probe, whenLate: .degrade, timing: .probe,
            job: { work, configuration in
                let file = work.admitted
                guard file.type.kind != .image, when(work) else { return nil }
                var limits = ProbeLimits(configuration)
                limits.transcodesUnplayable = configuration.normalize && work.transcoding(configuration).enabled
                limits.thumbnail.suggestClip = work.plan.crop
                return .probe(source: file.path, type: file.type, thumbnailTime: work.plan.thumbnailTime,
                              // Audio too: a file typed as audio may hold a picture stream, and a
                              // worker makes no file by name.
                              thumbnailBase: work.thumbnailOutput(),
                              shape: work.plan.shape,
                              limits: limits)
            },
            take: { answer, work in
                guard let probed = answer.probed else { return }
                work.delivered?.type = probed.resolvedType
                if let conversion = probed.conversion {
                    work.conversion = conversion
                    return
                }
                work.descriptor.record(probed.probe)
                work.thumbnail = probed.poster
                work.descriptor.record(posterClip: probed.poster?.suggestedClip)
            }))
    }

    /// What the probe found iOS cannot play becomes what it plays, or fails.
    static let makePlayable = Stage(name: "make playable", body: .decode(
        on: .probe,
        whenLate: .fail(Reason(code: .deadlineExceeded, message: "the batch deadline passed while the video was being made playable")),
        timing: .normalize,
        job: { work, configuration in
            guard let conversion = work.conversion else { return nil }
            let file = work.admitted
            // Beside an earlier conversion's file (a QuickTime file remuxed, then found unplayable).
            let base = work.convertedOutput(".playable")
            switch conversion {
            case .retag:
                return .remux(source: file.path, destinationBase: base)
            case .transcode, .transcodeAudio:
                return .transcode(source: file.path, type: file.type, destinationBase: base,
                                  limits: work.transcodeLimits(file.type.kind, configuration))
            }
        },
        take: { answer, work in
            let conversion = work.conversion
            work.conversion = nil
            work.reprobe = true
            switch conversion {
            case .transcode(let what)?: work.takeTranscoded(answer, sourceVideo: what)
            case .transcodeAudio?: work.takeTranscoded(answer)
            case .retag?, nil: work.takeRemuxed(answer)
            }
        }))

    /// The file `makePlayable` made, probed: its codecs, size and poster.
    static let probePlayable = probing(name: "probe the playable file") { $0.reprobe }
}

extension AttachmentWork {
    /// A remuxed MPEG-4 file becomes the delivered file.
    mutating func takeRemuxed(_ answer: DecodeAnswer) {
        guard let video = answer.remuxed else { return }
        supersede(with: .init(path: video.file, type: .mp4))
        descriptor.record(video)
    }

    /// A transcoded file becomes the delivered file; `sourceVideo` says what the probe found.
    mutating func takeTranscoded(_ answer: DecodeAnswer, sourceVideo: String? = nil) {
        guard let made = answer.transcoded else { return }
        supersede(with: .init(path: made.file, type: made.type))
        descriptor.record(made, sourceVideo: sourceVideo)
    }
}

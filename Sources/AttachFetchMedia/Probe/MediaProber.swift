internal import CFFmpeg
internal import CVips
#if canImport(Glibc)
import Glibc
#endif

/// Probes audio and video with FFmpeg's libraries and makes a video's poster-frame thumbnail.
/// Blocking: call it from a worker thread.
package enum MediaProber {
    /// Demuxers per sniffed type: FFmpeg may probe a file only as what libmagic said it is.
    static func demuxers(for type: MediaType) -> String {
        switch type {
        // An AVIF sequence (`AVIFSequence`) is an ISO media file too.
        case .mp4, .m4v, .m4a, .quickTime, .threeGPP, .threeGPP2, .avif: return "mov,mp4,m4a,3gp,3g2,mj2"
        case .mp3: return "mp3"
        case .wav: return "wav"
        case .aiff: return "aiff"
        case .mpeg: return "mpeg,mpegvideo"
        case .avi: return "avi"
        case .mpegTS: return "mpegts"
        case .ogg: return "ogg"
        case .flac: return "flac"
        case .webm, .matroska: return "matroska,webm"
        case .aac: return "aac"
        case .ac3: return "ac3"
        case .ape: return "ape"
        case .musepack: return "mpc,mpc8"
        case .dsf: return "dsf"
        case .amr: return "amr,amrnb,amrwb"
        case .oggVideo: return "ogg"
        case .asf: return "asf"
        case .flv: return "flv"
        case .gif: return "gif"
        default: return "none"
        }
    }

    /// The decoders of the codecs the supported containers carry; no other decoder runs.
    package static let decoders: Set<String> = [
        "h264", "hevc", "mpeg4", "mpeg1video", "mpeg2video", "mjpeg", "h263", "msmpeg4v2", "msmpeg4v3",
        "aac", "aac_fixed", "mp3float", "mp3", "mp2float", "mp2", "alac", "ac3",
        "pcm_s16le", "pcm_s16be", "pcm_s24le", "pcm_s24be", "pcm_s32le", "pcm_s32be", "pcm_u8", "pcm_s8",
        "pcm_f32le", "pcm_f32be", "pcm_alaw", "pcm_mulaw", "adpcm_ima_wav", "adpcm_ms", "adpcm_ima_qt",
    ]
    private static let decoderList = decoders.sorted().joined(separator: ",")

    /// - Parameters:
    ///   - thumbnailTime: the poster frame's time (UNNotificationAttachmentOptionsThumbnailTimeKey),
    ///     clamped to the duration; nil: auto, the first frame when it is telling, else the most
    ///     telling of the first seconds
    ///     (PosterChoice.swift).
    ///   - thumbnailBase: where a poster thumbnail goes when there is video; nil for none.
    ///   - shouldStop: checked between packets; true when nobody waits for the result any more.
    package static func probe(source: String, type: MediaType, thumbnailTime: Double?, thumbnailBase: String?,
                      shape: ThumbnailShape, limits: ProbeLimits,
                      shouldStop: () -> Bool = { false }) -> Result<ProbeOutcome, Reason> {
        do throws(Reason) {
            return .success(try probeThrowing(source: source, type: type, thumbnailTime: thumbnailTime,
                                              thumbnailBase: thumbnailBase, shape: shape, limits: limits, shouldStop: shouldStop))
        } catch {
            return .failure(error)
        }
    }

    private static func probeThrowing(source: String, type: MediaType, thumbnailTime: Double?, thumbnailBase: String?,
                                      shape: ThumbnailShape, limits: ProbeLimits,
                                      shouldStop: () -> Bool) throws(Reason) -> ProbeOutcome {
        let input = try AVInput(path: source, demuxers: demuxers(for: type), decoders: decoderList)
        var probe = MediaProbe(duration: input.duration)
        // The largest video stream that is not cover art, and the first audio stream.
        let videoStream = input.streams
            .filter { $0.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_VIDEO
                && $0.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC == 0 }
            .max { area($0) < area($1) }
        let audioStream = input.streams.first { $0.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_AUDIO }
        guard videoStream != nil || audioStream != nil else {
            throw Reason(code: .corruptMedia, message: "the file has no audio or video stream")
        }
        let resolvedType = try resolve(type, hasVideo: videoStream != nil)
        (probe.duration, probe.statedDuration) = duration(header: input.duration,
                                                          samples: sampleDuration(of: [videoStream, audioStream].compactMap { $0 }, type: type))
        if let encrypted = input.streams.first(where: { av_stream_get_side_data($0, AV_PKT_DATA_ENCRYPTION_INIT_INFO, nil) != nil }) {
            throw encryptedMedia(encrypted)
        }
        if let videoStream, area(videoStream) > limits.thumbnail.maxPixels {
            throw Reason(code: .pixelLimitExceeded,
                               message: "video frames of \(area(videoStream)) pixels are over the limit of \(limits.thumbnail.maxPixels)")
        }
        if let decided = try decidedByHeaders(video: videoStream, audio: audioStream, probe: probe, resolvedType: resolvedType, limits: limits) {
            return decided
        }
        let maxPixels = limits.thumbnail.maxPixels
        let video = try videoStream.map { stream throws(Reason) in try AVDecoder(stream: stream, allowed: decoders, maxPixels: maxPixels) }
        let audio = try audioStream.map { stream throws(Reason) in try AVDecoder(stream: stream, allowed: decoders, maxPixels: maxPixels) }
        probe.videoCodec = video?.codecName
        probe.audioCodec = audio?.codecName

        // Seek to the keyframe at or before the thumbnail time, then decode up to it.
        var target = max(0, thumbnailTime ?? 0)
        if let duration = probe.duration { target = min(target, duration) }
        if let video, target > 0 {
            let base = video.stream.pointee.time_base
            let start = video.stream.pointee.start_time == FFmpeg.noTimestamp ? 0 : video.stream.pointee.start_time
            let timestamp = start + Int64(target / av_q2d(base))
            // A failed seek leaves the reader at the start: decoding from there is still right.
            _ = av_seek_frame(input.context, video.stream.pointee.index, timestamp, AVSEEK_FLAG_BACKWARD)
        }
        var decode = try ProbeDecode(video: video, audio: audio, thumbnailTime: thumbnailTime, target: target,
                                     maxDecodedFrames: limits.maxDecodedFrames)
        try decode.run(input, maxPackets: limits.maxPackets, shouldStop: shouldStop)
        let poster = decode.poster
        let detail = decode.lastError == 0 ? "" : " (\(FFmpeg.errorText(decode.lastError)))"
        if let video, !decode.hasPoster {
            throw Reason(code: .corruptMedia, message: "the \(video.codecName) video stream does not decode\(detail)")
        }
        if let audio, !decode.audioDecoded {
            throw Reason(code: .corruptMedia, message: "the \(audio.codecName) audio stream does not decode\(detail)")
        }

        // Otherwise only a stream that decodes is judged: damage is corruptMedia, whatever its
        // header says.
        if let videoStream {
            switch PlayableMedia.video(videoStream.pointee.codecpar, decodedFormat: poster.pointer.pointee.format) {
            case .plays:
                break
            case .needsHVC1Tag where limits.convertsUnplayable:
                return ProbeOutcome(probe: probe, resolvedType: resolvedType, conversion: .retag)
            case .cannotPlay(let what) where limits.transcodesUnplayable:
                return ProbeOutcome(probe: probe, resolvedType: resolvedType, conversion: .transcode(what))
            case .needsHVC1Tag:
                throw Reason(code: .unsupportedType,
                             message: "the video is HEVC tagged hev1, which iOS does not play (\(PlayableMedia.rule)); it is not re-encoded or re-tagged")
            case .cannotPlay(let what):
                throw Reason(code: .unsupportedType,
                             message: "the video is \(what), which iOS cannot play (\(PlayableMedia.rule)); transcoding is off, so it is not re-encoded")
            }
        }
        var outcome = ProbeOutcome(probe: probe, resolvedType: resolvedType)
        if let video {
            try describeVideo(&outcome, video: video, decode: decode, input: input, thumbnailBase: thumbnailBase, shape: shape, limits: limits)
        }
        return outcome
    }

    /// What the streams' headers decide before anything is decoded: a codec only the
    /// transcoder decodes, sound MPEG-4 cannot carry, a stated sample format iOS does not play
    /// (each re-encoded, or refused with transcoding off); nil: decode and judge.
    private static func decidedByHeaders(video: UnsafeMutablePointer<AVStream>?, audio: UnsafeMutablePointer<AVStream>?, probe: MediaProbe,
                                         resolvedType: MediaType, limits: ProbeLimits) throws(Reason) -> ProbeOutcome? {
        // A codec only the transcoder decodes (AV1, VP9 in MPEG-4): re-encoded, not probed here;
        // with transcoding off, refused as what it is, not as a codec nothing decodes.
        if let videoStream = video, let codec = avcodec_find_decoder(videoStream.pointee.codecpar.pointee.codec_id),
           case let name = String(cString: codec.pointee.name), !decoders.contains(name), MediaTranscoder.decoders.contains(name) {
            let title = PlayableMedia.title(videoStream.pointee.codecpar.pointee.codec_id)
            guard limits.transcodesUnplayable else {
                throw Reason(code: .unsupportedType,
                             message: "the video is \(title), which iOS cannot play (\(PlayableMedia.rule)); transcoding is off, so it is not re-encoded")
            }
            return ProbeOutcome(probe: probe, resolvedType: resolvedType, conversion: .transcode(title))
        }
        if [.mp4, .m4v, .m4a].contains(resolvedType), let audioStream = audio,
           case .cannotPlay(let what) = PlayableMedia.audioInMPEG4(audioStream.pointee.codecpar.pointee.codec_id) {
            guard limits.transcodesUnplayable else {
                throw Reason(code: .unsupportedType,
                             message: "the sound is \(what), which iOS cannot play (\(PlayableMedia.audioRule)); transcoding is off, so it is not re-encoded")
            }
            return ProbeOutcome(probe: probe, resolvedType: resolvedType, conversion: .transcodeAudio(what))
        }
        // A header that states its sample format and is not what iOS plays goes to the
        // transcoder, which decodes every frame and refuses a stream that does not decode: the
        // poster search here would be a second decode of the clip's first seconds.
        if limits.transcodesUnplayable, let videoStream = video, videoStream.pointee.codecpar.pointee.format >= 0,
           case .cannotPlay(let what) = PlayableMedia.video(videoStream.pointee.codecpar) {
            return ProbeOutcome(probe: probe, resolvedType: resolvedType, conversion: .transcode(what))
        }
        return nil
    }

    /// The video's shown size (its rotation and sample aspect applied) and, with
    /// `thumbnailBase`, the poster's thumbnail, made from the frame the decode pass chose.
    private static func describeVideo(_ outcome: inout ProbeOutcome, video: AVDecoder, decode: ProbeDecode, input: AVInput,
                                      thumbnailBase: String?, shape: ThumbnailShape, limits: ProbeLimits) throws(Reason) {
        let poster = decode.poster
        let turns = rotation(of: video.stream)
        let display = displaySize(poster.pointer, stream: video.stream, input: input)
        let shown = turns % 2 == 1 ? (width: display.height, height: display.width) : display
        outcome.probe.width = shown.width
        outcome.probe.height = shown.height
        if let thumbnailBase {
            // libswscale converts straight to the size the thumbnail needs (the whole frame
            // scaled so that the clip gets the thumbnail's edge): a full-size RGB copy of a
            // large frame is never made.
            let box = try Thumbnailer.boxSize(width: shown.width, height: shown.height, shape: shape,
                                              maxEdge: limits.thumbnail.maxEdge)
            let image = try rgbImage(poster.pointer, width: turns % 2 == 1 ? box.height : box.width,
                                     height: turns % 2 == 1 ? box.width : box.height)
            let rotated = try rotate(image, degrees: turns)
            var poster = try Thumbnailer.make(image: rotated, destinationBase: thumbnailBase, shape: shape,
                                              limits: limits.thumbnail).get()
            poster.time = decode.posterSeconds.map { max(0, $0) } ?? decode.target
            outcome.poster = poster
        }
    }

    /// The kind follows the streams, not the brand: an MPEG-4 file with no video is audio
    /// (`.m4a`), one with video is video. An MPEG program stream with no video is no attachment
    /// type (iOS's audio attachments are MP3, AAC in MPEG-4, WAV and AIFF).
    private static func resolve(_ type: MediaType, hasVideo: Bool) throws(Reason) -> MediaType {
        switch type {
        case .mp4, .m4v: return hasVideo ? type : .m4a
        case .m4a: return hasVideo ? .mp4 : .m4a
        case .mpeg where !hasVideo:
            throw Reason(code: .unsupportedType,
                               message: "the MPEG program stream holds only audio, which is not an audio attachment type iOS accepts")
        default: return type
        }
    }

    static func encryptedMedia(_ stream: UnsafeMutablePointer<AVStream>) -> Reason {
        Reason(code: .unsupportedType,
                     message: "the \(AVDecoder.codecLabel(stream.pointee.codecpar)) stream is encrypted (Common Encryption); no device can show it without the keys")
    }

    private static func area(_ stream: UnsafeMutablePointer<AVStream>) -> Int {
        Int(stream.pointee.codecpar.pointee.width) * Int(stream.pointee.codecpar.pointee.height)
    }
}

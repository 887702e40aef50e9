internal import CFFmpeg
internal import CVips
#if canImport(Glibc)
import Glibc
#endif

/// Probes audio and video with FFmpeg's libraries and makes a video's poster-frame thumbnail.
/// Blocking: call it from a worker thread.
extension MediaProber {
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
                      shape: Thumbnailer.Shape, limits: Limits,
                      shouldStop: () -> Bool = { false }) -> Result<ProbeOutcome, Reason> {
        do throws(Reason) {
            return .success(try probeThrowing(source: source, type: type, thumbnailTime: thumbnailTime,
                                              thumbnailBase: thumbnailBase, shape: shape, limits: limits, shouldStop: shouldStop))
        } catch {
            return .failure(error)
        }
    }

    private static func probeThrowing(source: String, type: MediaType, thumbnailTime: Double?, thumbnailBase: String?,
                                      shape: Thumbnailer.Shape, limits: Limits,
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
        // A codec only the transcoder decodes (AV1, VP9 in MPEG-4): re-encoded, not probed here;
        // with transcoding off, refused as what it is, not as a codec nothing decodes.
        if let videoStream, let codec = avcodec_find_decoder(videoStream.pointee.codecpar.pointee.codec_id),
           case let name = String(cString: codec.pointee.name), !decoders.contains(name), MediaTranscoder.decoders.contains(name) {
            let title = PlayableMedia.title(videoStream.pointee.codecpar.pointee.codec_id)
            guard limits.transcodesUnplayable else {
                throw Reason(code: .unsupportedType,
                             message: "the video is \(title), which iOS cannot play (\(PlayableMedia.rule)); transcoding is off, so it is not re-encoded")
            }
            return ProbeOutcome(probe: probe, resolvedType: resolvedType, conversion: .transcode(title))
        }
        if [.mp4, .m4v, .m4a].contains(resolvedType), let audioStream,
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
        if limits.transcodesUnplayable, let videoStream, videoStream.pointee.codecpar.pointee.format >= 0,
           case .cannotPlay(let what) = PlayableMedia.video(videoStream.pointee.codecpar) {
            return ProbeOutcome(probe: probe, resolvedType: resolvedType, conversion: .transcode(what))
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
        let packet = try AVPacketBox()
        let frame = try AVFrameBox()
        let poster = try AVFrameBox()
        var posterSeconds: Double?
        var search = PosterSearch()
        var videoDone = video == nil
        var audioDecoded = audio == nil
        var decodedFrames = 0
        var lastError: Int32 = 0

        /// Takes every frame the decoder has ready; for video, keeps the latest as the poster.
        func drain(_ decoder: AVDecoder) {
            while avcodec_receive_frame(decoder.context, frame.pointer) >= 0 {
                defer { av_frame_unref(frame.pointer) }
                if decoder === audio {
                    audioDecoded = true
                    continue
                }
                guard !videoDone else { continue }
                decodedFrames += 1
                let seconds = frameSeconds(frame.pointer, stream: decoder.stream)
                if thumbnailTime == nil {
                    // Auto (PosterChoice.swift): the most telling candidate of the first seconds.
                    let scoreable = lumaFormat(frame.pointer) != nil
                    if search.takes(frame.pointer, at: seconds, isFirst: poster.pointer.pointee.width <= 0) {
                        av_frame_unref(poster.pointer)
                        av_frame_move_ref(poster.pointer, frame.pointer)
                        posterSeconds = seconds
                    }
                    if search.isOver(at: seconds, scoreable: scoreable) || decodedFrames >= limits.maxDecodedFrames { videoDone = true }
                    continue
                }
                av_frame_unref(poster.pointer)
                av_frame_move_ref(poster.pointer, frame.pointer)
                posterSeconds = seconds
                // Half a frame early counts: frame times rarely land exactly on the target.
                if (seconds ?? target) >= target - 0.02 || decodedFrames >= limits.maxDecodedFrames { videoDone = true }
            }
        }

        var packets = 0
        while !(videoDone && audioDecoded) && packets < limits.maxPackets {
            if shouldStop() { throw Reason(code: .cancelled, message: "abandoned") }
            let status = av_read_frame(input.context, packet.pointer)
            if status < 0 {
                if status != FFmpeg.endOfFile { lastError = status }
                break
            }
            defer { av_packet_unref(packet.pointer) }
            packets += 1
            // Samples carrying CENC encryption info (senc/tenc) are ciphertext.
            if packet.isEncrypted,
               let stream = input.streams.first(where: { $0.pointee.index == packet.pointer.pointee.stream_index }) {
                throw encryptedMedia(stream)
            }
            for decoder in [video, audio].compactMap({ $0 }) where decoder.stream.pointee.index == packet.pointer.pointee.stream_index {
                if decoder === video, thumbnailTime == nil {
                    let skips = search.skipsFrame(at: packetSeconds(packet.pointer, stream: decoder.stream),
                                                  hasPoster: poster.pointer.pointee.width > 0)
                    decoder.context.pointee.skip_frame = skips ? AVDISCARD_NONREF : AVDISCARD_DEFAULT
                }
                let sent = avcodec_send_packet(decoder.context, packet.pointer)
                if sent < 0 { lastError = sent }
                drain(decoder)
            }
        }
        // The end of the file (or of the budget): flush what the decoders still hold.
        for decoder in [video, audio].compactMap({ $0 }) where !(decoder === video ? videoDone : audioDecoded) {
            avcodec_send_packet(decoder.context, nil)
            drain(decoder)
        }
        let detail = lastError == 0 ? "" : " (\(FFmpeg.errorText(lastError)))"
        if let video, poster.pointer.pointee.width <= 0 {
            throw Reason(code: .corruptMedia, message: "the \(video.codecName) video stream does not decode\(detail)")
        }
        if let audio, !audioDecoded {
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
                poster.time = posterSeconds.map { max(0, $0) } ?? target
                outcome.poster = poster
            }
        }
        return outcome
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

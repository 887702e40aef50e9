import CAttachFetchShims
import CFFmpeg
import CVips
import Glibc

/// What FFmpeg learned about an audio or video file.
struct MediaProbe: Sendable, Equatable, Codable {
    /// Seconds, when the container states a duration.
    var duration: Double?
    var videoCodec: String?
    var audioCodec: String?
    /// The video's size as displayed (sample aspect ratio and rotation applied).
    var width: Int?
    var height: Int?
}

struct ProbeOutcome: Sendable, Codable {
    var probe: MediaProbe
    /// The type the streams show: an MPEG-4 file with no real video is audio (`.m4a`), an
    /// MPEG-4 file with video is video whatever its brand says.
    var resolvedType: MediaType
    /// The poster-frame thumbnail, for video, with the frame's time.
    var poster: ThumbnailOutcome?
}

/// Probes audio and video with FFmpeg's libraries and makes a video's poster-frame thumbnail.
/// Blocking: call it from a worker thread.
enum MediaProber {
    /// The decode budgets, from the configuration.
    struct Limits: Sendable, Codable {
        /// Frames decoded at most to reach the thumbnail time (after seeking to the keyframe
        /// before it); past that, the last frame decoded is the poster.
        var maxDecodedFrames: Int
        /// Packets read at most, in all.
        var maxPackets: Int
        var thumbnail: Thumbnailer.Limits

        init(_ configuration: AttachFetchConfiguration) {
            maxDecodedFrames = configuration.maxVideoDecodeFrames
            maxPackets = configuration.maxVideoDecodeFrames * 4
            thumbnail = Thumbnailer.Limits(configuration)
        }
    }

    /// Demuxers per sniffed type: FFmpeg may probe a file only as what libmagic said it is.
    static func demuxers(for type: MediaType) -> String {
        switch type {
        case .mp4, .m4v, .m4a, .quickTime, .threeGPP, .threeGPP2: return "mov,mp4,m4a,3gp,3g2,mj2"
        case .mp3: return "mp3"
        case .wav: return "wav"
        case .aiff: return "aiff"
        case .mpeg: return "mpeg,mpegvideo"
        case .avi: return "avi"
        default: return "none"
        }
    }

    /// The decoders of the codecs the supported containers carry; no other decoder runs.
    static let decoders: Set<String> = [
        "h264", "hevc", "mpeg4", "mpeg1video", "mpeg2video", "mjpeg", "h263", "msmpeg4v2", "msmpeg4v3",
        "aac", "aac_fixed", "mp3float", "mp3", "mp2float", "mp2", "alac", "ac3",
        "pcm_s16le", "pcm_s16be", "pcm_s24le", "pcm_s24be", "pcm_s32le", "pcm_s32be", "pcm_u8", "pcm_s8",
        "pcm_f32le", "pcm_f32be", "pcm_alaw", "pcm_mulaw", "adpcm_ima_wav", "adpcm_ms", "adpcm_ima_qt",
    ]
    private static let decoderList = decoders.sorted().joined(separator: ",")

    /// - Parameters:
    ///   - thumbnailTime: the poster frame's time (UNNotificationAttachmentOptionsThumbnailTimeKey),
    ///     clamped to the duration; nil means 0.
    ///   - thumbnailBase: where a poster thumbnail goes when there is video; nil for none.
    ///   - shouldStop: checked between packets; true when nobody waits for the result any more.
    static func probe(source: String, type: MediaType, thumbnailTime: Double?, thumbnailBase: String?,
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
        if let encrypted = input.streams.first(where: { av_stream_get_side_data($0, AV_PKT_DATA_ENCRYPTION_INIT_INFO, nil) != nil }) {
            throw encryptedMedia(encrypted)
        }
        if let videoStream, area(videoStream) > limits.thumbnail.maxPixels {
            throw Reason(code: .pixelLimitExceeded,
                               message: "video frames of \(area(videoStream)) pixels are over the limit of \(limits.thumbnail.maxPixels)")
        }
        let video = try videoStream.map { stream throws(Reason) in try AVDecoder(stream: stream, allowed: decoders) }
        let audio = try audioStream.map { stream throws(Reason) in try AVDecoder(stream: stream, allowed: decoders) }
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
            if av_packet_get_side_data(packet.pointer, AV_PKT_DATA_ENCRYPTION_INFO, nil) != nil,
               let stream = input.streams.first(where: { $0.pointee.index == packet.pointer.pointee.stream_index }) {
                throw encryptedMedia(stream)
            }
            for decoder in [video, audio].compactMap({ $0 }) where decoder.stream.pointee.index == packet.pointer.pointee.stream_index {
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

    private static func encryptedMedia(_ stream: UnsafeMutablePointer<AVStream>) -> Reason {
        Reason(code: .unsupportedType,
                     message: "the \(AVDecoder.codecLabel(stream.pointee.codecpar)) stream is encrypted (Common Encryption); no device can show it without the keys")
    }

    private static func area(_ stream: UnsafeMutablePointer<AVStream>) -> Int {
        Int(stream.pointee.codecpar.pointee.width) * Int(stream.pointee.codecpar.pointee.height)
    }

    /// A frame's time in seconds from the stream's start.
    private static func frameSeconds(_ frame: UnsafeMutablePointer<AVFrame>, stream: UnsafeMutablePointer<AVStream>) -> Double? {
        let timestamp = frame.pointee.best_effort_timestamp
        guard timestamp != FFmpeg.noTimestamp else { return nil }
        let start = stream.pointee.start_time == FFmpeg.noTimestamp ? 0 : stream.pointee.start_time
        return Double(timestamp - start) * av_q2d(stream.pointee.time_base)
    }

    /// The clockwise rotation a player applies (the display matrix), in quarter turns.
    private static func rotation(of stream: UnsafeMutablePointer<AVStream>) -> Int {
        var size = 0
        guard let matrix = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size), size >= 36 else { return 0 }
        let counterClockwise = matrix.withMemoryRebound(to: Int32.self, capacity: 9) { av_display_rotation_get($0) }
        guard counterClockwise.isFinite else { return 0 }
        let quarterTurns = Int((-counterClockwise / 90).rounded())
        return ((quarterTurns % 4) + 4) % 4
    }

    /// A frame's size as displayed before rotation: anamorphic video (a sample aspect ratio
    /// other than 1) is stretched to its display width. The ratio is FFmpeg's choice between
    /// the container's (an MP4 `pasp` box wins) and the bitstream's, as players make it.
    private static func displaySize(_ frame: UnsafeMutablePointer<AVFrame>, stream: UnsafeMutablePointer<AVStream>,
                                    input: AVInput) -> (width: Int, height: Int) {
        let width = Int(frame.pointee.width)
        let aspect = av_guess_sample_aspect_ratio(input.context, stream, frame)
        let displayWidth = aspect.num > 0 && aspect.den > 0
            ? max(1, min(width * 4, Int((Double(width) * av_q2d(aspect)).rounded()))) : width
        return (displayWidth, Int(frame.pointee.height))
    }

    /// Bytes of slack libswscale may write past the end of a destination row, and after the
    /// last row: its SIMD converters (the unscaled yuv420p -> rgb24 path among them) store whole
    /// vectors, so a destination of exactly stride x height bytes is overrun by up to a vector.
    /// FFmpeg's own allocators pad for this; so does attach-fetch.
    static let scalerRowSlack = 64

    /// The decoded frame as an 8-bit RGB libvips image of `width` x `height` (libswscale
    /// converts the pixel format and scales, averaging areas when it shrinks).
    static func rgbImage(_ frame: UnsafeMutablePointer<AVFrame>, width outWidth: Int,
                         height outHeight: Int) throws(Reason) -> VipsImageRef {
        let width = Int(frame.pointee.width)
        let height = Int(frame.pointee.height)
        let format = frame.pointee.format
        guard width > 0, height > 0, outWidth > 0, outHeight > 0, format >= 0, frame.pointee.data.0 != nil else {
            throw Reason(code: .corruptMedia, message: "the decoder returned a frame without pixels")
        }
        guard let scaler = sws_getContext(Int32(width), Int32(height), AVPixelFormat(format),
                                          Int32(outWidth), Int32(outHeight), AV_PIX_FMT_RGB24, SWS_AREA, nil, nil, nil) else {
            throw Reason(code: .corruptMedia, message: "libswscale cannot convert the frame's pixel format")
        }
        defer { sws_freeContext(scaler) }
        // Each row padded and 64-byte aligned, one spare row after the last, from FFmpeg's own
        // aligned allocator: room for every store the converters make.
        let rowBytes = outWidth * 3
        let stride = (rowBytes + scalerRowSlack + 63) / 64 * 64
        let total = stride * (outHeight + 1)
        guard let raw = av_mallocz(total) else {
            throw Reason(code: .ioError, message: "out of memory for a \(outWidth)x\(outHeight) frame")
        }
        defer { av_free(raw) }
        let destinationBase = raw.assumingMemoryBound(to: UInt8.self)
        var destination: [UnsafeMutablePointer<UInt8>?] = [destinationBase, nil, nil, nil]
        var destinationStride: [Int32] = [Int32(stride), 0, 0, 0]
        let scaled = withUnsafePointer(to: &frame.pointee.data) { data in
            withUnsafePointer(to: &frame.pointee.linesize) { linesize in
                data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { planes in
                    linesize.withMemoryRebound(to: Int32.self, capacity: 8) { strides in
                        sws_scale(scaler, planes, strides, 0, Int32(height), &destination, &destinationStride)
                    }
                }
            }
        }
        guard scaled == Int32(outHeight) else {
            throw Reason(code: .corruptMedia, message: scaled < 0
                ? "libswscale cannot convert the frame: \(FFmpeg.errorText(scaled))"
                : "libswscale made \(scaled) of \(outHeight) rows")
        }
        // libvips takes rows without padding: pack them.
        var pixels = [UInt8](repeating: 0, count: rowBytes * outHeight)
        pixels.withUnsafeMutableBytes { packed in
            for row in 0..<outHeight {
                (packed.baseAddress! + row * rowBytes).copyMemory(from: destinationBase + row * stride, byteCount: rowBytes)
            }
        }
        guard let image = pixels.withUnsafeBytes({
            vips_image_new_from_memory_copy($0.baseAddress, $0.count, Int32(outWidth), Int32(outHeight), 3, VIPS_FORMAT_UCHAR)
        }) else {
            throw Vips.failure("take the frame")
        }
        let unlabelled = VipsImageRef(image)
        var labelled: UnsafeMutablePointer<VipsImage>?
        guard af_vips_copy_interpretation(unlabelled.pointer, &labelled, VIPS_INTERPRETATION_sRGB) == 0, let labelled else {
            throw Vips.failure("take the frame")
        }
        return VipsImageRef(labelled)
    }

    private static func rotate(_ image: VipsImageRef, degrees quarterTurns: Int) throws(Reason) -> VipsImageRef {
        guard quarterTurns != 0 else { return image }
        let angle: VipsAngle = quarterTurns == 1 ? VIPS_ANGLE_D90 : quarterTurns == 2 ? VIPS_ANGLE_D180 : VIPS_ANGLE_D270
        var out: UnsafeMutablePointer<VipsImage>?
        guard af_vips_rot(image.pointer, &out, angle) == 0, let out else {
            throw Vips.failure("rotate the frame")
        }
        return VipsImageRef(out)
    }
}

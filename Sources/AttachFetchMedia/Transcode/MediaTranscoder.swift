internal import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// What a transcode made: the delivered file's facts, and what it was made from.
package struct TranscodedMedia: Sendable, Codable {
    package var file: String
    package var type: MediaType
    package var bytes: Int64
    package var sha256: String
    /// The source's codecs, as people name them ("Opus", "VP9").
    package var sourceAudioCodec: String?
    package var sourceVideoCodec: String?
    /// Seconds delivered.
    package var duration: Double
    /// Cut short to fit the size limit or the time budget: the first `duration` seconds.
    package var trimmed: Bool
    /// Cut short because the time budget (`Limits.stopAt`) ran out, not the size limit.
    package var outOfTime = false
}

/// Re-encodes what iOS cannot play into what it does, with FFmpeg's libraries (never the
/// `ffmpeg` program), in the decoder workers:
/// - audio alone (Opus and Vorbis in Ogg, FLAC) into AAC-LC in MPEG-4 audio (`.m4a`);
/// - video (WebM and Matroska: VP8, VP9, AV1, ...; an animated GIF too large as a GIF) into
///   H.264 High, 8-bit 4:2:0, at most `maxLongEdge`, with its first audio stream as AAC-LC, in
///   MPEG-4 (`.mp4`).
///
/// `moov` comes first. A source whose result would not fit the limit is cut at the last frame
/// that fits, and one that cannot be encoded whole by `stopAt` at the last frame encoded by
/// then (once the first stream, the video if any, has a frame: flushing the encoder makes
/// a clip of whatever it was given); both say so (`trimmed`).
/// Blocking: a decode job.
package enum MediaTranscoder {
    package struct Limits: Sendable, Codable {
        /// The delivered file's most bytes (its kind's limit).
        package var maxBytes: Int64
        /// The most bytes when a video container turns out to hold sound alone (WMA in ASF, a
        /// Flash file without video): the result is audio, under the audio limit. Nil: `maxBytes`.
        package var audioOnlyMaxBytes: Int64? = nil
        /// The video's longest edge at most, in pixels.
        package var maxLongEdge: Int = 1280
        /// When reading stops and what was encoded is finished as a clip: `CLOCK_MONOTONIC`
        /// nanoseconds, the same clock in every process (`TranscodeBudget`). Nil: no budget.
        var stopAt: UInt64? = nil

        package init(maxBytes: Int64, maxLongEdge: Int = 1280, stopAt: UInt64? = nil) {
            (self.maxBytes, self.maxLongEdge, self.stopAt) = (maxBytes, maxLongEdge, stopAt)
        }
    }

    /// A remux's way out: transcode `type` within `limits` when a stream cannot be copied.
    package struct Fallback: Sendable, Codable {
        package var type: MediaType
        package var limits: Limits

        package init(type: MediaType, limits: Limits) { (self.type, self.limits) = (type, limits) }
    }

    /// The decoders of the codecs transcoded from; no other decoder runs.
    package static let decoders: Set<String> = [
        "opus", "vorbis", "flac", "aac", "aac_fixed", "mp3float", "mp3", "mp2float", "mp2", "ac3", "eac3", "dca", "alac",
        "amrnb", "amrwb", "pcm_s16le", "pcm_s16be", "pcm_s24le", "pcm_s24be", "pcm_s32le", "pcm_s32be", "pcm_u8", "pcm_s8",
        "pcm_f32le", "pcm_f32be", "pcm_alaw", "pcm_mulaw", "adpcm_ima_qt", "adpcm_ima_wav", "adpcm_ms",
        "vp8", "vp9", "libdav1d", "theora", "h264", "hevc", "mpeg4", "mpeg1video", "mpeg2video", "h263", "msmpeg4v2", "msmpeg4v3",
        "mjpeg", "prores", "gif",
        "wmav1", "wmav2", "wmapro", "wmalossless", "wmavoice", "wmv1", "wmv2", "wmv3", "vc1", "flv", "vp6f", "vp6a", "nellymoser",
        "ape", "mpc7", "mpc8", "dsd_lsbf", "dsd_msbf", "dsd_lsbf_planar", "dsd_msbf_planar",
    ]

    package static func transcode(source: String, type: MediaType, destinationBase: String, limits: Limits,
                          shouldStop: () -> Bool = { false }) -> Result<TranscodedMedia, Reason> {
        let file = destinationBase + (type.kind == .audio ? ".m4a" : ".mp4")
        do throws(Reason) {
            return .success(try transcodeStreams(source: source, type: type, file: file, limits: limits, shouldStop: shouldStop))
        } catch {
            unlink(file)
            return .failure(error)
        }
    }

    /// One stream being re-encoded: its decoder, its encoder's time base, and where its packets go.
    private final class Track {
        let input: UnsafeMutablePointer<AVStream>
        let decoder: AVDecoder
        let output: UnsafeMutablePointer<AVStream>
        let timeBase: AVRational
        let encode: (UnsafeMutablePointer<AVFrame>?, (UnsafeMutablePointer<AVPacket>) throws(Reason) -> Void) throws(Reason) -> Void
        var decoded = 0
        var written = 0

        init(input: UnsafeMutablePointer<AVStream>, decoder: AVDecoder, output: UnsafeMutablePointer<AVStream>, timeBase: AVRational,
             encode: @escaping (UnsafeMutablePointer<AVFrame>?, (UnsafeMutablePointer<AVPacket>) throws(Reason) -> Void) throws(Reason) -> Void) {
            (self.input, self.decoder, self.output, self.timeBase, self.encode) = (input, decoder, output, timeBase, encode)
        }
    }

    private static func transcodeStreams(source: String, type: MediaType, file: String, limits: Limits,
                                         shouldStop: () -> Bool) throws(Reason) -> TranscodedMedia {
        let input = try AVInput(path: source, demuxers: MediaProber.demuxers(for: type), decoders: decoders.sorted().joined(separator: ","))
        // An animated GIF is video here.
        let videoStream = type.kind != .audio ? input.streams.first {
            $0.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_VIDEO && $0.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC == 0
        } : nil
        let audioStream = input.streams.first { $0.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_AUDIO }
        guard videoStream != nil || audioStream != nil else {
            throw Reason(code: .corruptMedia, message: "the file has no \(type.kind == .audio ? "audio" : "audio or video") stream")
        }
        let sourceAudio = audioStream.map { PlayableMedia.title($0.pointee.codecpar.pointee.codec_id) }
        let sourceVideo = videoStream.map { PlayableMedia.title($0.pointee.codecpar.pointee.codec_id) }
        let output = try AVOutput(path: file, format: type.kind == .audio ? "ipod" : "mp4")
        var tracks: [Track] = []
        var audioEncoder: AudioEncoder?
        var videoEncoder: VideoEncoder?
        if let videoStream {
            let decoder = try AVDecoder(stream: videoStream, allowed: decoders, threads: 2)
            let parameters = videoStream.pointee.codecpar.pointee
            let duration = input.duration ?? 0
            // The most bits a second that keeps the whole clip within the limit (audio and the
            // index aside), when the duration is known; CRF decides below it. At most 8 Mb/s,
            // past what CRF 23 asks at 1280 pixels, so that a short clip's budget does not make
            // the encoder's buffer (and the margin below) huge.
            let budget = duration > 0 ? min(8_000_000, Int64(Double(limits.maxBytes) * 8 * 0.9 / duration) - 200_000) : nil
            let encoder = try VideoEncoder(stream: videoStream, width: Int(parameters.width), height: Int(parameters.height),
                                           maxLongEdge: limits.maxLongEdge, maxBitRate: budget.map { max(200_000, $0) })
            videoEncoder = encoder
            tracks.append(Track(input: videoStream, decoder: decoder,
                                output: try output.addStream(encoder: encoder.context, sideDataFrom: videoStream),
                                timeBase: encoder.context.pointee.time_base,
                                encode: { (frame, write) throws(Reason) in try encoder.encode(frame, write: write) }))
        }
        if let audioStream {
            let decoder = try AVDecoder(stream: audioStream, allowed: decoders)
            let encoder = try AudioEncoder(decoder: decoder)
            audioEncoder = encoder
            tracks.append(Track(input: audioStream, decoder: decoder,
                                output: try output.addStream(encoder: encoder.context, sideDataFrom: nil),
                                timeBase: encoder.context.pointee.time_base,
                                encode: { (frame, write) throws(Reason) in try encoder.encode(frame, write: write) }))
        }
        try output.writeHeader(moovFirst: true)
        var written: Int64 = 0, packets: Int64 = 0
        func writer(_ track: Track) -> (UnsafeMutablePointer<AVPacket>) throws(Reason) -> Void {
            { (packet: UnsafeMutablePointer<AVPacket>) throws(Reason) in
                packet.pointee.stream_index = track.output.pointee.index
                av_packet_rescale_ts(packet, track.timeBase, track.output.pointee.time_base)
                written += Int64(packet.pointee.size)
                packets += 1
                track.written += 1
                let status = av_interleaved_write_frame(output.context, packet)
                guard status >= 0 else { throw FFmpeg.failure(.ioError, "FFmpeg cannot write the MPEG-4 file", status) }
            }
        }
        // Besides the packets: the header, an index of about 8 bytes a packet, and a second of
        // margin for what the encoders still hold.
        let margin = (audioEncoder?.context.pointee.bit_rate ?? 0) / 8 + (videoEncoder?.context.pointee.rc_max_rate ?? 0) / 8
        let maxBytes = videoStream == nil ? limits.audioOnlyMaxBytes ?? limits.maxBytes : limits.maxBytes
        func fits() -> Bool { written + packets * 8 + 16_384 + margin <= maxBytes }
        let packet = try AVPacketBox(), frame = try AVFrameBox()
        var lastError: Int32 = 0, trimmed = false, outOfTime = false
        reading: while true {
            if shouldStop() { throw Reason(code: .cancelled, message: "abandoned") }
            if let stopAt = limits.stopAt, TranscodeBudget.now() >= stopAt, tracks[0].decoded > 0 {
                (trimmed, outOfTime) = (true, true)
                break
            }
            let status = av_read_frame(input.context, packet.pointer)
            if status < 0 {
                if status != FFmpeg.endOfFile { lastError = status }
                break
            }
            defer { av_packet_unref(packet.pointer) }
            guard let track = tracks.first(where: { $0.input.pointee.index == packet.pointer.pointee.stream_index }) else { continue }
            let sent = avcodec_send_packet(track.decoder.context, packet.pointer)
            if sent < 0 { lastError = sent; continue }
            while avcodec_receive_frame(track.decoder.context, frame.pointer) >= 0 {
                defer { av_frame_unref(frame.pointer) }
                track.decoded += 1
                try track.encode(frame.pointer, writer(track))
                if !fits() {
                    trimmed = true
                    break reading
                }
            }
        }
        for track in tracks {
            if !trimmed {
                avcodec_send_packet(track.decoder.context, nil)
                while avcodec_receive_frame(track.decoder.context, frame.pointer) >= 0 {
                    defer { av_frame_unref(frame.pointer) }
                    track.decoded += 1
                    try track.encode(frame.pointer, writer(track))
                }
            }
            guard track.decoded > 0 || outOfTime else {
                let detail = lastError == 0 ? "" : " (\(FFmpeg.errorText(lastError)))"
                let name = PlayableMedia.title(track.input.pointee.codecpar.pointee.codec_id)
                throw Reason(code: .corruptMedia, message: "the \(name) \(track.decoder.stream == videoStream ? "video" : "audio") stream does not decode\(detail)")
            }
            try track.encode(nil, writer(track))
        }
        try output.finish()
        let made = try VideoRemuxer.describe(file)
        let seconds = audioEncoder.map { Double($0.samples) / Double($0.context.pointee.sample_rate) } ?? videoEncoder?.seconds ?? 0
        return TranscodedMedia(file: file, type: type.kind == .audio ? .m4a : .mp4, bytes: made.bytes, sha256: made.sha256,
                               sourceAudioCodec: sourceAudio, sourceVideoCodec: sourceVideo, duration: seconds, trimmed: trimmed,
                               outOfTime: outOfTime)
    }
}

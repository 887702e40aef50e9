internal import CFFmpeg
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

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
extension MediaTranscoder {
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
        // An MP3 iOS plays; it is only too long (`MediaPolicy.needsCut`).
        if type == .mp3 {
            return MP3Cutter.cut(source: source, destinationBase: destinationBase, maxBytes: limits.audioOnlyMaxBytes ?? limits.maxBytes,
                                 shouldStop: shouldStop)
        }
        let file = destinationBase + (type.kind == .audio ? ".m4a" : ".mp4")
        var rung = 0
        while true {
            do throws(Reason) {
                switch try transcodeStreams(source: source, type: type, file: file, limits: limits, rung: rung, shouldStop: shouldStop) {
                case .made(let made): return .success(made)
                case .tooSlow(let lacking, let measured):
                    // Too slow for the whole clip by the budget's end, and what it was given could
                    // not all be kept: again from the start, as much faster as it lacks.
                    SafeFile.discard(file)
                    rung = SpeedLadder.rung(after: measured, lacking: lacking)
                }
            } catch {
                SafeFile.discard(file)
                return .failure(error)
            }
        }
    }

    /// What one try made: the file, or how many times too slow the preset of rung `measured`
    /// was to make the whole clip by the budget's end, while a faster rung is left
    /// (`SpeedLadder`).
    private enum Attempt {
        case made(TranscodedMedia)
        case tooSlow(Double, measured: Int)
    }

    private static func transcodeStreams(source: String, type: MediaType, file: String, limits: Limits, rung firstRung: Int,
                                         shouldStop: () -> Bool) throws(Reason) -> Attempt {
        let input = try AVInput(path: source, demuxers: MediaProber.demuxers(for: type), decoders: decoders.sorted().joined(separator: ","))
        // An animated GIF is video here.
        let videoStream = type.kind != .audio ? input.streams.first {
            $0.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_VIDEO && $0.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC == 0
        } : nil
        let audio = try openAudio(input, limits: limits)
        let audioStream = audio?.0.stream
        guard videoStream != nil || audioStream != nil else {
            throw Reason(code: .corruptMedia, message: "the file has no \(type.kind == .audio ? "audio" : "audio or video") stream")
        }
        let sourceAudio = audioStream.map { PlayableMedia.title($0.pointee.codecpar.pointee.codec_id) }
        let sourceVideo = videoStream.map { PlayableMedia.title($0.pointee.codecpar.pointee.codec_id) }
        // The stream's stated area, before any frame is decoded (every codec alike); each
        // decoded frame is checked again (`checkArea`), and the decoder itself refuses larger.
        if let videoStream {
            let parameters = videoStream.pointee.codecpar.pointee
            try checkArea(width: Int(parameters.width), height: Int(parameters.height), limits: limits)
        }
        let origin = origin(of: [videoStream, audioStream].compactMap { $0 })
        // The stated duration, when the file's size makes it plausible (16 kb/s or more over
        // it): a header that claims 10^12 s for a few megabytes would size the bit rate, and the
        // speed ladder's projection, for the lie. Without one, CRF alone decides and the size
        // limit still cuts what does not fit.
        let stated = input.duration.flatMap { Double(input.fileBytes) * 8 / $0 >= 16_000 ? $0 : nil }
        var tracks: [Track] = []
        var audioEncoder: AudioEncoder?
        var sourceSize: (width: Int, height: Int)?
        var videoBudget: Int64?
        if let videoStream {
            let parameters = videoStream.pointee.codecpar.pointee
            let decoder = try AVDecoder(stream: videoStream, allowed: decoders,
                                        threads: decoderThreads(width: Int(parameters.width), height: Int(parameters.height)),
                                        maxPixels: limits.maxPixels)
            sourceSize = (Int(parameters.width), Int(parameters.height))
            // The most bits a second that keeps the whole clip within the limit (audio and the
            // index aside), when the duration is known; CRF decides below it. At most 8 Mb/s,
            // past what CRF 23 asks at 1280 pixels, so that a short clip's budget does not make
            // the encoder's buffer (and the margin below) huge.
            videoBudget = stated.map { max(200_000, min(8_000_000, Int64(Double(limits.maxBytes) * 8 * 0.9 / $0) - 200_000)) }
            tracks.append(Track(input: videoStream, decoder: decoder, isVideo: true))
        }
        if let (decoder, encoder) = audio {
            try encoder.start(origin: origin, streamTimeBase: decoder.stream.pointee.time_base)
            audioEncoder = encoder
            tracks.append(Track(input: decoder.stream, decoder: decoder, isVideo: false))
        }
        var output: AVOutput!, videoEncoder: VideoEncoder?
        var written: Int64 = 0, packets: Int64 = 0
        /// Where the speed ladder's measurement keeps what a faster rung would start from.
        var replay: SpeedLadder.Replay?
        func writer(_ track: Track, keeping: Bool = true) -> (UnsafeMutablePointer<AVPacket>) throws(Reason) -> Void {
            { (packet: UnsafeMutablePointer<AVPacket>) throws(Reason) in
                if keeping, !track.isVideo { try replay?.keep(audio: packet) }
                packet.pointee.stream_index = track.output.pointee.index
                av_packet_rescale_ts(packet, track.timeBase, track.output.pointee.time_base)
                written += Int64(packet.pointee.size)
                packets += 1
                track.written += 1
                let status = av_interleaved_write_frame(output.context, packet)
                guard status >= 0 else { throw FFmpeg.failure(.ioError, "FFmpeg cannot write the MPEG-4 file", status) }
            }
        }
        /// A new file on `rung`'s preset, from what the rung before it was given, if any.
        func start(rung: Int) throws(Reason) {
            if output != nil {
                output = nil
                SafeFile.discard(file)
            }
            output = try AVOutput(path: file, format: type.kind == .audio ? "ipod" : "mp4")
            for track in tracks {
                if track.isVideo, let sourceSize {
                    let encoder = try VideoEncoder(stream: track.input, width: sourceSize.width, height: sourceSize.height,
                                                   maxLongEdge: limits.maxLongEdge, maxBitRate: videoBudget,
                                                   origin: origin, preset: SpeedLadder.presets[rung])
                    videoEncoder = encoder
                    track.connect(output: try output.addStream(encoder: encoder.context, sideDataFrom: track.input),
                                  timeBase: encoder.context.pointee.time_base,
                                  encode: { (frame, write) throws(Reason) in try encoder.encode(frame, write: write) })
                } else if let audioEncoder {
                    track.connect(output: try output.addStream(encoder: audioEncoder.context, sideDataFrom: nil),
                                  timeBase: audioEncoder.context.pointee.time_base,
                                  encode: { (frame, write) throws(Reason) in try audioEncoder.encode(frame, write: write) })
                }
            }
            try output.writeHeader(moovFirst: true)
            (written, packets) = (0, 0)
            if let replay {
                for track in tracks {
                    let write = writer(track, keeping: false)
                    if track.isVideo {
                        try videoEncoder?.resume(from: replay, write: write)
                    } else {
                        for kept in replay.audio {
                            // The box owns the packet: alive until the muxer has taken its data.
                            let packet = try AVPacketBox(referencing: kept.pointer)
                            try withExtendedLifetime(packet) { () throws(Reason) in try write(packet.pointer) }
                        }
                    }
                }
            }
        }
        try start(rung: firstRung)
        // Besides the packets: the header, an index of about 8 bytes a packet, and a second of
        // margin for what the encoders still hold.
        let margin = (audioEncoder?.context.pointee.bit_rate ?? 0) / 8 + (videoEncoder?.context.pointee.rc_max_rate ?? 0) / 8
        let maxBytes = videoStream == nil ? limits.audioOnlyMaxBytes ?? limits.maxBytes : limits.maxBytes
        func fits() -> Bool { written + packets * 8 + 16_384 + margin <= maxBytes }
        let packet = try AVPacketBox(), frame = try AVFrameBox()
        var lastError: Int32 = 0, readError: Int32 = 0, trimmed = false, outOfTime = false, packetBytes: Int64 = 0
        /// Every frame the decoder has ready, encoded; false once the result no longer fits.
        func drainDecoder(_ track: Track) throws(Reason) -> Bool {
            while true {
                let received = avcodec_receive_frame(track.decoder.context, frame.pointer)
                if received == FFmpeg.tryAgain || received == FFmpeg.endOfFile { return true }
                if received < 0 {
                    track.decodeErrors += 1
                    (lastError, track.lastDecodeError) = (received, received)
                    return true
                }
                defer { av_frame_unref(frame.pointer) }
                if track.isVideo { try checkArea(width: Int(frame.pointer.pointee.width), height: Int(frame.pointer.pointee.height), limits: limits) }
                track.decoded += 1
                try track.encode(frame.pointer, writer(track))
                if !fits() { return false }
            }
        }
        // The pace is measured when a faster rung is left, the budget is known, and so is the
        // clip's length (its stated duration at its frame rate); what the rung is given is kept
        // meanwhile (`SpeedLadder.Replay`).
        var pace: SpeedLadder.Pace?, rung = firstRung, replayed = 0
        func measure() {
            pace = nil
            if rung + 1 < SpeedLadder.presets.count, let stopAt = limits.stopAt, let videoStream, let duration = stated,
               case let rate = av_guess_frame_rate(nil, videoStream, nil), rate.num > 0, rate.den > 0 {
                pace = SpeedLadder.Pace(started: TranscodeBudget.now(), stopAt: stopAt, frames: duration * av_q2d(rate))
            }
            replay = pace == nil ? nil : replay ?? SpeedLadder.Replay()
            videoEncoder?.replay = replay
        }
        measure()
        reading: while true {
            if shouldStop() { throw Reason(code: .cancelled, message: "abandoned") }
            if let video = tracks.first(where: \.isVideo), let lacking = pace?.lacking(written: video.written, now: TranscodeBudget.now(),
                                                                                             early: replay?.isNearlyFull == true) {
                guard let kept = replay, !kept.overflowed else { return .tooSlow(lacking, measured: rung) }
                rung = kept.hasRoomForAsMuchAgain ? SpeedLadder.rung(after: rung, lacking: lacking) : SpeedLadder.presets.count - 1
                try start(rung: rung)
                replayed = kept.frames.count
                measure()
            } else if pace?.decided == true {
                // Fast enough: nothing more is kept.
                (pace, replay) = (nil, nil)
                videoEncoder?.replay = nil
            }
            if let stopAt = limits.stopAt, TranscodeBudget.now() >= stopAt, tracks[0].decoded > 0 {
                (trimmed, outOfTime) = (true, true)
                break
            }
            let status = av_read_frame(input.context, packet.pointer)
            if status < 0 {
                if status != FFmpeg.endOfFile { (lastError, readError) = (status, status) }
                break
            }
            defer { av_packet_unref(packet.pointer) }
            packetBytes += Int64(packet.pointer.pointee.size)
            guard let track = tracks.first(where: { $0.input.pointee.index == packet.pointer.pointee.stream_index }) else { continue }
            // Samples carrying CENC encryption info are ciphertext, as the probe says of them.
            if packet.isEncrypted { throw MediaProber.encryptedMedia(track.input) }
            let time = packet.pointer.pointee.pts != FFmpeg.noTimestamp ? packet.pointer.pointee.pts : packet.pointer.pointee.dts
            if time != FFmpeg.noTimestamp {
                let end = av_rescale_q(time + max(0, packet.pointer.pointee.duration), track.input.pointee.time_base, FFmpeg.microseconds) - origin
                track.sourceEnd = max(track.sourceEnd, Double(end) / Double(AV_TIME_BASE))
            }
            let sent = avcodec_send_packet(track.decoder.context, packet.pointer)
            if sent < 0 && sent != FFmpeg.tryAgain {
                track.decodeErrors += 1
                (lastError, track.lastDecodeError) = (sent, sent)
                continue
            }
            if try !drainDecoder(track) {
                trimmed = true
                break reading
            }
        }
        for track in tracks {
            if !trimmed {
                // A threaded decoder reports a damaged packet's error late, here among them.
                let flushed = avcodec_send_packet(track.decoder.context, nil)
                if flushed < 0 && flushed != FFmpeg.endOfFile {
                    track.decodeErrors += 1
                    (lastError, track.lastDecodeError) = (flushed, flushed)
                }
                if try !drainDecoder(track) { trimmed = true }
            }
            guard track.decoded > 0 || outOfTime else {
                let detail = lastError == 0 ? "" : " (\(FFmpeg.errorText(lastError)))"
                let name = PlayableMedia.title(track.input.pointee.codecpar.pointee.codec_id)
                throw Reason(code: .corruptMedia, message: "the \(name) \(track.isVideo ? "video" : "audio") stream does not decode\(detail)")
            }
            try track.encode(nil, writer(track))
        }
        try output.finish()
        let delivered = try DeliveredStreams.read(file)
        try delivered.check(sourceVideo: tracks.first(where: \.isVideo).map { (sourceVideo ?? "video", $0.sourceEnd) },
                            sourceAudio: tracks.first(where: { !$0.isVideo }).map { (sourceAudio ?? "audio", $0.sourceEnd) })
        // Far less than the header states, and the demuxer gave up with an error or skipped
        // most of the file's bytes (damaged clusters): what could be read is not the file. With
        // neither, a header that states more is a lie, and the streams read are the file.
        if !trimmed, let stated = input.duration,
           stated - delivered.duration > DeliveredStreams.longestShortfall, delivered.duration < stated * DeliveredStreams.shortestShare,
           readError != 0 || packetBytes < input.fileBytes / 2 {
            let why = readError != 0 ? FFmpeg.errorText(readError) : "\(packetBytes) of its \(input.fileBytes) bytes are media"
            throw Reason(code: .corruptMedia, message: "FFmpeg cannot read the file past \(TextFormat.fixed(delivered.duration, digits: 2)) s of the \(TextFormat.fixed(stated, digits: 2)) s its header states (\(why))")
        }
        let made = try VideoRemuxer.describe(file)
        // Made from what could be decoded, and still the source's length: said, not hidden.
        let damage = tracks.flatMap { $0.damage() }
        var media = TranscodedMedia(file: file, type: type.kind == .audio ? .m4a : .mp4, bytes: made.bytes, sha256: made.sha256,
                               sourceAudioCodec: sourceAudio, sourceVideoCodec: sourceVideo, duration: delivered.duration, trimmed: trimmed,
                               outOfTime: outOfTime, sourceWidth: sourceSize?.width, sourceHeight: sourceSize?.height,
                               preset: videoEncoder == nil ? nil : SpeedLadder.presets[rung])
        media.damage = damage.isEmpty ? nil : damage.joined(separator: "; ")
        media.replayedFrames = replayed
        return .made(media)
    }
}

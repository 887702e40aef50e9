internal import CFFmpeg

extension MediaTranscoder {
    /// One try at a transcode, on one rung of the speed ladder: the packets read once, each
    /// decoded and encoded, the file written as it goes. Its state (the muxer, the encoders,
    /// the bytes and packets written, the pace and what a faster rung would start from, the
    /// errors met) is its fields, and each step a method. It starts the file again on a faster
    /// rung when the pace says this one cannot make the clip by the budget's end, and stops
    /// when the result would no longer fit or the budget is spent (`trimmed`). Not Sendable:
    /// made and used by one decode job.
    final class TranscodePass {
        private let input: AVInput
        private let file: String, type: MediaType, limits: TranscodeLimits
        private let tracks: [Track]
        private let audioEncoder: AudioEncoder?
        private let videoStream: UnsafeMutablePointer<AVStream>?
        private let sourceSize: (width: Int, height: Int)?
        private let videoBudget: Int64?
        /// The earliest stream's start, which every output stream starts at 0 from.
        private let origin: Int64
        /// The duration the header states, when the file's size makes it plausible.
        private let stated: Double?
        private let maxBytes: Int64
        private let packet: AVPacketBox, frame: AVFrameBox
        private var output: AVOutput!
        private var videoEncoder: VideoEncoder?
        private var written: Int64 = 0, packets: Int64 = 0
        /// Besides the packets: the header, and a second of what the encoders still hold.
        private var margin: Int64 = 0
        /// Where the speed ladder's measurement keeps what a faster rung would start from.
        private var replay: SpeedLadder.Replay?
        private var pace: SpeedLadder.Pace?
        private var rung: Int, replayed = 0
        private var lastError: Int32 = 0, readError: Int32 = 0, packetBytes: Int64 = 0
        private var trimmed = false, outOfTime = false

        init(input: AVInput, file: String, type: MediaType, limits: TranscodeLimits, tracks: [Track], audioEncoder: AudioEncoder?,
             videoStream: UnsafeMutablePointer<AVStream>?, sourceSize: (width: Int, height: Int)?, videoBudget: Int64?,
             origin: Int64, stated: Double?, rung: Int) throws(Reason) {
            (self.input, self.file, self.type, self.limits, self.tracks) = (input, file, type, limits, tracks)
            (self.audioEncoder, self.videoStream, self.sourceSize, self.videoBudget) = (audioEncoder, videoStream, sourceSize, videoBudget)
            (self.origin, self.stated, self.rung) = (origin, stated, rung)
            maxBytes = videoStream == nil ? limits.audioOnlyMaxBytes ?? limits.maxBytes : limits.maxBytes
            (packet, frame) = (try AVPacketBox(), try AVFrameBox())
        }

        /// The file made, or how much too slow this rung was (`Attempt.tooSlow`).
        func run(sourceAudio: String?, sourceVideo: String?, shouldStop: () -> Bool) throws(Reason) -> Attempt {
            try start(rung: rung)
            // An index of about 8 bytes a packet is counted in `fits`.
            margin = (audioEncoder?.context.pointee.bit_rate ?? 0) / 8 + (videoEncoder?.context.pointee.rc_max_rate ?? 0) / 8
            measure()
            if let tooSlow = try read(shouldStop: shouldStop) { return tooSlow }
            try flush()
            return .made(try finish(sourceAudio: sourceAudio, sourceVideo: sourceVideo))
        }

        private func fits() -> Bool { written + packets * 8 + 16_384 + margin <= maxBytes }

        /// What writes `track`'s encoded packets to the file (and keeps its audio for a replay).
        private func writer(_ track: Track, keeping: Bool = true) -> (UnsafeMutablePointer<AVPacket>) throws(Reason) -> Void {
            { [self] (packet: UnsafeMutablePointer<AVPacket>) throws(Reason) in
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
        private func start(rung: Int) throws(Reason) {
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
            guard let replay else { return }
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

        /// The pace is measured when a faster rung is left, the budget is known, and so is the
        /// clip's length (its stated duration at its frame rate); what the rung is given is kept
        /// meanwhile (`SpeedLadder.Replay`).
        private func measure() {
            pace = nil
            if rung + 1 < SpeedLadder.presets.count, let stopAt = limits.stopAt, let videoStream, let duration = stated,
               case let rate = av_guess_frame_rate(nil, videoStream, nil), rate.num > 0, rate.den > 0 {
                pace = SpeedLadder.Pace(started: TranscodeBudget.now(), stopAt: stopAt, frames: duration * av_q2d(rate))
            }
            replay = pace == nil ? nil : replay ?? SpeedLadder.Replay()
            videoEncoder?.replay = replay
        }

        /// Every frame the decoder has ready, encoded; false once the result no longer fits.
        private func drainDecoder(_ track: Track) throws(Reason) -> Bool {
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

        /// The packets, until the file ends, the result would not fit or the budget is spent
        /// (`trimmed`); `tooSlow` when this rung cannot make the clip and what it was given
        /// could not all be kept for a faster one.
        private func read(shouldStop: () -> Bool) throws(Reason) -> Attempt? {
            while true {
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
                    return nil
                }
                let status = av_read_frame(input.context, packet.pointer)
                if status < 0 {
                    if status != FFmpeg.endOfFile { (lastError, readError) = (status, status) }
                    return nil
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
                    return nil
                }
            }
        }

        /// What the decoders and encoders still hold, into the file; a stream of which no frame
        /// decoded (and the budget did not end it first) fails the transcode.
        private func flush() throws(Reason) {
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
        }

        /// The file finished and checked against the source: its streams' lengths, and a
        /// source the demuxer could not read to its stated end.
        private func finish(sourceAudio: String?, sourceVideo: String?) throws(Reason) -> TranscodedMedia {
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
            return media
        }
    }
}

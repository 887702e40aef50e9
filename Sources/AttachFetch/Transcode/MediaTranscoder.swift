internal import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// What a transcode made: the delivered file's facts, and what it was made from.
struct TranscodedMedia: Sendable, Codable {
    var file: String
    var type: MediaType
    var bytes: Int64
    var sha256: String
    /// The source's audio codec, as people name it ("Opus").
    var sourceAudioCodec: String?
    /// Seconds delivered.
    var duration: Double
    /// Cut short to fit the size limit: the first `duration` seconds.
    var trimmed: Bool
}

/// Re-encodes audio iOS cannot play (Opus and Vorbis in Ogg, FLAC) into AAC-LC in MPEG-4 audio
/// (`.m4a`, `moov` first), within the audio limit: a source longer than fits is cut at the last
/// frame that fits, and says so (`trimmed`). FFmpeg's libraries only, never the `ffmpeg`
/// program. Blocking: a decode job, run in the decoder workers.
enum MediaTranscoder {
    struct Limits: Sendable, Codable {
        /// The delivered file's most bytes (the audio limit).
        var maxBytes: Int64
    }

    /// The decoders of the codecs transcoded from; no other decoder runs.
    static let decoders: Set<String> = ["opus", "vorbis", "flac"]

    static func transcode(source: String, type: MediaType, destinationBase: String, limits: Limits,
                          shouldStop: () -> Bool = { false }) -> Result<TranscodedMedia, Reason> {
        let file = destinationBase + ".m4a"
        do throws(Reason) {
            return .success(try transcodeAudio(source: source, type: type, file: file, limits: limits, shouldStop: shouldStop))
        } catch {
            unlink(file)
            return .failure(error)
        }
    }

    private static func transcodeAudio(source: String, type: MediaType, file: String, limits: Limits,
                                       shouldStop: () -> Bool) throws(Reason) -> TranscodedMedia {
        let input = try AVInput(path: source, demuxers: MediaProber.demuxers(for: type), decoders: decoders.sorted().joined(separator: ","))
        guard let stream = input.streams.first(where: { $0.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_AUDIO }) else {
            throw Reason(code: .corruptMedia, message: "the file has no audio stream")
        }
        let sourceCodec = PlayableMedia.title(stream.pointee.codecpar.pointee.codec_id)
        let decoder = try AVDecoder(stream: stream, allowed: decoders)
        let encoder = try AudioEncoder(decoder: decoder)
        let output = try AVOutput(path: file, format: "ipod")
        let outputStream = try output.addStream(encoder: encoder.context)
        try output.writeHeader(moovFirst: true)
        var written: Int64 = 0, packets: Int64 = 0
        func write(_ packet: UnsafeMutablePointer<AVPacket>) throws(Reason) {
            packet.pointee.stream_index = outputStream.pointee.index
            av_packet_rescale_ts(packet, encoder.context.pointee.time_base, outputStream.pointee.time_base)
            written += Int64(packet.pointee.size)
            packets += 1
            let status = av_interleaved_write_frame(output.context, packet)
            guard status >= 0 else { throw FFmpeg.failure(.ioError, "FFmpeg cannot write the MPEG-4 audio file", status) }
        }
        // What the file holds besides the packets: the header, and an index of about 8 bytes a
        // packet (sizes and chunk offsets); a second of margin for what the encoder still holds.
        func fits() -> Bool {
            let secondOfAudio = encoder.context.pointee.bit_rate / 8
            return written + packets * 8 + 8_192 + secondOfAudio <= limits.maxBytes
        }
        let packet = try AVPacketBox(), frame = try AVFrameBox()
        var decoded = 0, lastError: Int32 = 0, trimmed = false
        reading: while true {
            if shouldStop() { throw Reason(code: .cancelled, message: "abandoned") }
            let status = av_read_frame(input.context, packet.pointer)
            if status < 0 {
                if status != FFmpeg.endOfFile { lastError = status }
                break
            }
            defer { av_packet_unref(packet.pointer) }
            guard packet.pointer.pointee.stream_index == stream.pointee.index else { continue }
            let sent = avcodec_send_packet(decoder.context, packet.pointer)
            if sent < 0 { lastError = sent; continue }
            while avcodec_receive_frame(decoder.context, frame.pointer) >= 0 {
                defer { av_frame_unref(frame.pointer) }
                decoded += 1
                try encoder.encode(frame.pointer, write: write)
                if !fits() {
                    trimmed = true
                    break reading
                }
            }
        }
        if !trimmed {
            avcodec_send_packet(decoder.context, nil)
            while avcodec_receive_frame(decoder.context, frame.pointer) >= 0 {
                defer { av_frame_unref(frame.pointer) }
                decoded += 1
                try encoder.encode(frame.pointer, write: write)
            }
        }
        guard decoded > 0 else {
            let detail = lastError == 0 ? "" : " (\(FFmpeg.errorText(lastError)))"
            throw Reason(code: .corruptMedia, message: "the \(sourceCodec) audio stream does not decode\(detail)")
        }
        try encoder.encode(nil, write: write)
        try output.finish()
        let made = try VideoRemuxer.describe(file)
        return TranscodedMedia(file: file, type: .m4a, bytes: made.bytes, sha256: made.sha256, sourceAudioCodec: sourceCodec,
                               duration: Double(encoder.samples) / Double(encoder.context.pointee.sample_rate), trimmed: trimmed)
    }
}

internal import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// Cuts an MP3 longer than the audio limit after the last whole frame that fits, without
/// re-encoding: a prefix of Layer III frames plays (a cut inside a frame, or one that skipped
/// frames, would break the bit reservoir the next frame reads back into).
///
/// The frames are copied packet by packet into FFmpeg's MP3 muxer, which writes a new Xing (or
/// Info) frame first and, at the end, rewrites its frame count, byte count and table of
/// contents for the frames kept; the source's own Xing, Info or VBRI frame, which describes
/// the whole file, is the demuxer's and never a packet. Tags (ID3v2, ID3v1, APE) are not
/// written: they are not sound, and a cover art picture would take the sound's room.
/// Blocking: a decode job.
enum MP3Cutter {
    static func cut(source: String, destinationBase: String, maxBytes: Int64,
                    shouldStop: () -> Bool = { false }) -> Result<TranscodedMedia, Reason> {
        let file = destinationBase + ".mp3"
        do throws(Reason) {
            let duration = try copyFrames(source: source, file: file, maxBytes: maxBytes, shouldStop: shouldStop)
            let made = try VideoRemuxer.describe(file)
            guard made.bytes <= maxBytes else {
                throw Reason(code: .sizeLimitExceeded, message: "the MP3 cut to fit is \(made.bytes) bytes, over the limit of \(maxBytes)")
            }
            var media = TranscodedMedia(file: file, type: .mp3, bytes: made.bytes, sha256: "", sourceAudioCodec: nil,
                                        sourceVideoCodec: nil, duration: duration, trimmed: true)
            media.reencoded = false
            return .success(media)
        } catch {
            SafeFile.discard(file)
            return .failure(error)
        }
    }

    /// Copies frames while the next one fits; returns the seconds kept.
    private static func copyFrames(source: String, file: String, maxBytes: Int64, shouldStop: () -> Bool) throws(Reason) -> Double {
        let input = try AVInput(path: source, demuxers: MediaProber.demuxers(for: .mp3), decoders: "mp3float,mp3")
        guard let stream = input.streams.first(where: { $0.pointee.codecpar.pointee.codec_id == AV_CODEC_ID_MP3 }) else {
            throw Reason(code: .corruptMedia, message: "the file has no MP3 audio stream")
        }
        let output = try AVOutput(path: file, format: "mp3")
        let copy = try output.addStream(copying: stream)
        // The source's padding at its end is not where the cut ends.
        copy.pointee.codecpar.pointee.trailing_padding = 0
        try output.writeHeader(options: [("id3v2_version", "0"), ("write_id3v1", "0"), ("write_xing", "1")])
        let packet = try AVPacketBox()
        var samples: Int64 = 0
        while true {
            if shouldStop() { throw Reason(code: .cancelled, message: "abandoned") }
            let status = av_read_frame(input.context, packet.pointer)
            if status == FFmpeg.endOfFile { break }
            guard status >= 0 else { throw FFmpeg.failure(.corruptMedia, "FFmpeg cannot read the MP3 file", status) }
            guard packet.pointer.pointee.stream_index == stream.pointee.index else {
                av_packet_unref(packet.pointer)
                continue
            }
            // The muxer writes each frame as it comes (no queue for a lone audio stream), so the
            // output's position is the file's size so far; the trailer only rewrites the first frame.
            if avio_tell(output.context.pointee.pb) + Int64(packet.pointer.pointee.size) > maxBytes {
                av_packet_unref(packet.pointer)
                break
            }
            samples += packet.pointer.pointee.duration > 0
                ? av_rescale_q(packet.pointer.pointee.duration, stream.pointee.time_base, AVRational(num: 1, den: copy.pointee.codecpar.pointee.sample_rate))
                : Int64(copy.pointee.codecpar.pointee.frame_size)
            packet.pointer.pointee.stream_index = copy.pointee.index
            packet.pointer.pointee.pos = -1
            av_packet_rescale_ts(packet.pointer, stream.pointee.time_base, copy.pointee.time_base)
            let written = av_write_frame(output.context, packet.pointer)
            av_packet_unref(packet.pointer)
            guard written >= 0 else { throw FFmpeg.failure(.corruptMedia, "FFmpeg cannot write the MP3 file", written) }
        }
        guard samples > 0 else {
            throw Reason(code: .sizeLimitExceeded, message: "not one MP3 frame of the file fits the limit of \(maxBytes) bytes")
        }
        try output.finish()
        return Double(samples) / Double(max(1, copy.pointee.codecpar.pointee.sample_rate))
    }
}

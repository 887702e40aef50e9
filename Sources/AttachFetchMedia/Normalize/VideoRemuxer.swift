internal import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// Moves the streams of a QuickTime (`.mov`, what iPhones record), 3GPP or MPEG transport
/// stream file into an MPEG-4 file without re-encoding: the codecs MPEG-4 carries (H.264, HEVC,
/// MPEG-4 Part 2, AAC, MP3, ALAC, AC-3) are copied packet by packet; data, timecode and
/// subtitle tracks are dropped; any other audio or video codec is refused. The display matrix
/// (rotation) and the sample aspect ratio go along. Blocking: a decode job.
///
/// Timestamps are made what the MPEG-4 muxer requires, as `ffmpeg -c copy` makes them: a
/// decoding time that does not increase (two frames at one instant, as variable-frame-rate
/// phone recordings have) is moved just past the previous one, and a presentation time is
/// never before its decoding time. Without that the muxer refuses the packet ("Invalid
/// argument") and a file every player shows would be refused.
///
/// The file starts at 0: the start common to every stream kept (`MediaTranscoder.origin`: an
/// HLS segment's clock at 3600 s, a Matroska file cut from 5 s) is taken off every timestamp,
/// so the stream that starts first has no empty edit and the other keeps its offset from it.
enum VideoRemuxer {
    /// Codecs copied into MPEG-4 as they are.
    static let copyable: Set<String> = ["h264", "hevc", "mpeg4", "aac", "mp3", "alac", "ac3"]

    /// The demuxers of every container that is remuxed (the sniffed type chose it).
    static let demuxers = MediaType.convertible.filter(MediaPolicy.needsRemux)
        .map { MediaProber.demuxers(for: $0) }.joined(separator: ",")

    static func remux(source: String, destinationBase: String,
                      shouldStop: () -> Bool = { false }) -> Result<RemuxedVideo, Reason> {
        let file = destinationBase + ".mp4"
        do throws(Reason) {
            try copyStreams(source: source, file: file, shouldStop: shouldStop)
            return .success(try describe(file))
        } catch {
            SafeFile.discard(file)
            return .failure(error)
        }
    }

    private static func copyStreams(source: String, file: String, shouldStop: () -> Bool) throws(Reason) {
        let input = try AVInput(path: source, demuxers: demuxers,
                                decoders: MediaProber.decoders.sorted().joined(separator: ","))
        let media = input.streams.filter {
            let type = $0.pointee.codecpar.pointee.codec_type
            return (type == AVMEDIA_TYPE_VIDEO && $0.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC == 0) || type == AVMEDIA_TYPE_AUDIO
        }
        guard !media.isEmpty else { throw Reason(code: .corruptMedia, message: "the file has no audio or video stream") }
        if let other = media.first(where: { !copyable.contains(AVDecoder.codecLabel($0.pointee.codecpar)) }) {
            throw Reason(code: .unsupportedType,
                               message: "the \(PlayableMedia.title(other.pointee.codecpar.pointee.codec_id)) stream cannot be carried in MPEG-4 without re-encoding"
                                   + " (iOS plays H.264, HEVC or MPEG-4 video with AAC, MP3, ALAC or AC-3 audio): re-encode it")
        }
        let output = try AVOutput(path: file, format: "mp4")
        var mapping: [Int32: (output: UnsafeMutablePointer<AVStream>, input: UnsafeMutablePointer<AVStream>)] = [:]
        for stream in media {
            let copy = try output.addStream(copying: stream)
            mapping[stream.pointee.index] = (copy, stream)
        }
        try output.writeHeader(moovFirst: true)
        let origin = MediaTranscoder.origin(of: media)
        let packet = try AVPacketBox()
        var lastDTS: [Int32: Int64] = [:]
        while true {
            if shouldStop() { throw Reason(code: .cancelled, message: "abandoned") }
            let status = av_read_frame(input.context, packet.pointer)
            if status == FFmpeg.endOfFile { break }
            guard status >= 0 else {
                throw FFmpeg.failure(.corruptMedia, "FFmpeg cannot read the file", status)
            }
            guard let target = mapping[packet.pointer.pointee.stream_index] else {
                av_packet_unref(packet.pointer)
                continue
            }
            packet.pointer.pointee.stream_index = target.output.pointee.index
            Self.rebase(packet.pointer, on: av_rescale_q(origin, FFmpeg.microseconds, target.input.pointee.time_base))
            av_packet_rescale_ts(packet.pointer, target.input.pointee.time_base, target.output.pointee.time_base)
            packet.pointer.pointee.pos = -1
            lastDTS[target.output.pointee.index] = Self.orderTimestamps(packet.pointer, after: lastDTS[target.output.pointee.index])
            // Takes the packet's reference whatever it answers.
            let written = av_interleaved_write_frame(output.context, packet.pointer)
            guard written >= 0 else {
                throw FFmpeg.failure(.corruptMedia, "FFmpeg cannot write the MPEG-4 file", written)
            }
        }
        try output.finish()
    }

    /// Takes `origin` (in the packet's time base) off the packet's timestamps that are set.
    static func rebase(_ packet: UnsafeMutablePointer<AVPacket>, on origin: Int64) {
        guard origin != 0 else { return }
        if packet.pointee.pts != FFmpeg.noTimestamp { packet.pointee.pts -= origin }
        if packet.pointee.dts != FFmpeg.noTimestamp { packet.pointee.dts -= origin }
    }

    /// Sets a packet's timestamps as the muxer requires them, given the stream's last decoding
    /// time; returns the packet's decoding time.
    static func orderTimestamps(_ packet: UnsafeMutablePointer<AVPacket>, after last: Int64?) -> Int64 {
        let unset = Int64(bitPattern: UInt64(0x8000_0000_0000_0000)) // AV_NOPTS_VALUE
        var dts = packet.pointee.dts
        if dts == unset { dts = packet.pointee.pts != unset ? packet.pointee.pts : (last.map { $0 + 1 } ?? 0) }
        if let last, dts <= last { dts = last + 1 }
        packet.pointee.dts = dts
        if packet.pointee.pts == unset || packet.pointee.pts < dts { packet.pointee.pts = dts }
        return dts
    }

    /// The made file's size. Its SHA-256 is left to the keeper, which computes it from the
    /// file itself whatever the worker says (`AnswerCheck`).
    package static func describe(_ file: String) throws(Reason) -> RemuxedVideo {
        var status = stat()
        let described = UnnamedFile.descriptor(in: file).map { fstat($0, &status) } ?? stat(file, &status)
        guard described == 0 else { throw Reason(code: .ioError, message: "cannot read the made file") }
        return RemuxedVideo(file: file, bytes: Int64(status.st_size), sha256: "")
    }
}

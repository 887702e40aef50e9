internal import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

extension MediaTranscoder {
    /// One stream being re-encoded: its decoder, its encoder's time base, and where its packets
    /// go (`connect`: again when the speed ladder starts a faster rung's file).
    final class Track {
        let input: UnsafeMutablePointer<AVStream>
        let decoder: AVDecoder
        let isVideo: Bool
        private(set) var output: UnsafeMutablePointer<AVStream>!
        private(set) var timeBase = AVRational(num: 1, den: 1)
        private(set) var encode: (UnsafeMutablePointer<AVFrame>?, (UnsafeMutablePointer<AVPacket>) throws(Reason) -> Void) throws(Reason) -> Void
            = { _, _ throws(Reason) in }
        var decoded = 0
        /// Packets written to the current file.
        var written = 0
        /// Packets or frames the decoder refused (real errors, not EAGAIN or the end).
        var decodeErrors = 0
        /// The last of those errors, in FFmpeg's words.
        var lastDecodeError: Int32 = 0
        /// What the decoder's errors are logged under (`DecoderErrorLog`).
        let logToken = DecoderErrorLog.begin()
        /// Where the source's packets read for this stream end, in seconds on the output's
        /// timeline: what the delivered stream is checked against.
        var sourceEnd = 0.0

        init(input: UnsafeMutablePointer<AVStream>, decoder: AVDecoder, isVideo: Bool) {
            (self.input, self.decoder, self.isVideo) = (input, decoder, isVideo)
            decoder.context.pointee.opaque = UnsafeMutableRawPointer(bitPattern: logToken)
        }

        deinit { _ = DecoderErrorLog.take(logToken) }

        func connect(output: UnsafeMutablePointer<AVStream>, timeBase: AVRational,
                     encode: @escaping (UnsafeMutablePointer<AVFrame>?, (UnsafeMutablePointer<AVPacket>) throws(Reason) -> Void) throws(Reason) -> Void) {
            (self.output, self.timeBase, self.encode, written) = (output, timeBase, encode, 0)
        }

        /// What the decoder reported when some of the stream did not decode, in its words.
        func damage() -> [String] {
            let name = PlayableMedia.title(input.pointee.codecpar.pointee.codec_id), kind = isVideo ? "video" : "audio"
            let logged = DecoderErrorLog.take(logToken)
            let refused = decodeErrors == 0 ? nil
                : "\(decodeErrors) \(name) \(kind) \(decodeErrors == 1 ? "packet" : "packets") did not decode (\(FFmpeg.errorText(lastDecodeError)))"
            let reported = logged.count == 0 ? nil
                : "the \(name) \(kind) decoder reported \(logged.count) \(logged.count == 1 ? "error" : "errors") (\(logged.last))"
            return [refused, reported].compactMap { $0 }
        }
    }

    /// The video decoder's threads: one more than the cores, as the ffmpeg program's `auto`
    /// gives, so that a frame is being decoded while this thread scales and hands the last to
    /// libx264 (on 2 cores a 60-s 1080p clip took 1.14x the ffmpeg program's wall time with 2
    /// threads, the same CPU time: docs/performance.md#transcoding). At most 4, and 2 past 4K
    /// frames: each thread holds frames and a stack of its own within the worker's memory
    /// limit, and a large machine runs many jobs at once.
    static func decoderThreads(width: Int, height: Int) -> Int32 {
        let cores = max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        return HEIFImageSize.area(width, height) <= 3840 * 2160 ? Int32(min(4, cores + 1)) : 2
    }

    /// The earliest start of `streams`, in `AV_TIME_BASE` units (0 when none states one). Both
    /// streams kept are rebased on it: the file starts at 0, and an offset between sound and
    /// picture stays in their timestamps, which the MPEG-4 muxer writes as an edit list.
    static func origin(of streams: [UnsafeMutablePointer<AVStream>]) -> Int64 {
        streams.compactMap { stream -> Int64? in
            let start = stream.pointee.start_time
            return start == FFmpeg.noTimestamp ? nil : av_rescale_q(start, stream.pointee.time_base, FFmpeg.microseconds)
        }.min() ?? 0
    }

    /// The first audio stream whose decoder and encoder open: a file whose first sound is one
    /// FFmpeg cannot decode may carry a second that it can. None open: the first one's reason.
    static func openAudio(_ input: AVInput, limits: TranscodeLimits) throws(Reason) -> (AVDecoder, AudioEncoder)? {
        var firstProblem: Reason?
        for stream in input.streams where stream.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_AUDIO {
            do throws(Reason) {
                let decoder = try AVDecoder(stream: stream, allowed: decoders, maxPixels: limits.maxPixels)
                return (decoder, try AudioEncoder(decoder: decoder))
            } catch {
                firstProblem = firstProblem ?? error
            }
        }
        if let firstProblem { throw firstProblem }
        return nil
    }
}

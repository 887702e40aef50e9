internal import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// Decoded video in, H.264 packets out: libswscale scales each frame to at most the long edge
/// and converts it to 8-bit 4:2:0, and libx264 encodes it at High profile, which every iPhone
/// plays. Owns its encoder and scaler; not thread-safe, not Sendable.
final class VideoEncoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    private var scaler: OpaquePointer?
    /// The frame size and format `scaler` was made for.
    private var scalerSource: (width: Int32, height: Int32, format: Int32)?
    private let sourceTimeBase: AVRational
    /// Where the output's timeline starts, in the source's time base: every frame's time is
    /// taken from this (`MediaTranscoder.origin(of:)`).
    private let origin: Int64
    private var lastTimestamp: Int64 = .min
    /// The frame scaled into, kept for the next (`scaled(_:)`).
    private var scaledFrame: AVFrameBox?
    /// For a PQ or HLG source: its frames made BT.709 at the output size (`toneMapped(_:)`).
    private var toneMapper: ToneMapper?
    private var toneMappedFrame: AVFrameBox?
    /// Where each frame given to libx264 is also kept while the speed ladder measures.
    var replay: SpeedLadder.Replay?

    /// libx264's settings: CRF 23 (x264's default quality), High profile; the preset is the
    /// speed ladder's (`SpeedLadder`: `veryfast` unless the budget needs faster).
    static let quality = "23", profile = "high"

    /// - Parameters:
    ///   - size: the source's width and height, in pixels.
    ///   - maxLongEdge: the output's longest edge at most (never enlarged).
    ///   - maxBitRate: a cap (bits a second) so that the whole clip fits its limit, or nil.
    ///   - origin: the output's start, in `AV_TIME_BASE` units.
    init(stream: UnsafeMutablePointer<AVStream>, width: Int, height: Int, maxLongEdge: Int, maxBitRate: Int64?,
         origin: Int64, preset: String) throws(Reason) {
        guard let codec = avcodec_find_encoder_by_name("libx264"), let context = avcodec_alloc_context3(codec) else {
            throw Reason(code: .ioError, message: "FFmpeg has no libx264 encoder")
        }
        self.context = context
        sourceTimeBase = stream.pointee.time_base
        self.origin = av_rescale_q(origin, FFmpeg.microseconds, stream.pointee.time_base)
        let size = Self.outputSize(width: width, height: height, maxLongEdge: maxLongEdge)
        context.pointee.width = Int32(size.width)
        context.pointee.height = Int32(size.height)
        context.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        context.pointee.time_base = sourceTimeBase
        let rate = av_guess_frame_rate(nil, stream, nil)
        if rate.num > 0 && rate.den > 0 { context.pointee.framerate = rate }
        context.pointee.sample_aspect_ratio = stream.pointee.sample_aspect_ratio
        Self.tagColour(context, from: stream.pointee.codecpar)
        context.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER
        // Two threads: a worker's job may use both cores of a small machine.
        context.pointee.thread_count = 2
        if let maxBitRate {
            context.pointee.rc_max_rate = maxBitRate
            context.pointee.rc_buffer_size = Int32(clamping: maxBitRate * 2)
        }
        for (name, value) in [("preset", preset), ("crf", Self.quality), ("profile", Self.profile)] {
            let set = av_opt_set(context.pointee.priv_data, name, value, 0)
            guard set >= 0 else { throw FFmpeg.failure(.ioError, "libx264 refused \(name) \(value)", set) }
        }
        let opened = avcodec_open2(context, codec, nil)
        guard opened >= 0 else { throw FFmpeg.failure(.ioError, "FFmpeg cannot open libx264", opened) }
    }

    /// The encoded size: the source's scaled to fit `maxLongEdge` (never enlarged), each side
    /// rounded down to even (4:2:0 needs even sizes), so never past `maxLongEdge`.
    static func outputSize(width: Int, height: Int, maxLongEdge: Int) -> (width: Int, height: Int) {
        let scale = min(1, Double(maxLongEdge) / Double(max(width, height, 1)))
        // The small addend keeps an exact product (1920 x 1280/1920) from landing just below.
        func even(_ side: Int) -> Int { max(2, Int(Double(side) * scale + 1e-6) / 2 * 2) }
        return (even(width), even(height))
    }

    deinit {
        sws_freeContext(scaler)
        freeCodecContext(context)
    }

    /// Scales and encodes one decoded frame (nil: the end, which flushes the encoder), giving
    /// each packet made to `write`.
    package func encode(_ frame: UnsafeMutablePointer<AVFrame>?, write: (UnsafeMutablePointer<AVPacket>) throws(Reason) -> Void) throws(Reason) {
        guard let frame else {
            let flushed = avcodec_send_frame(context, nil)
            guard flushed >= 0 || flushed == FFmpeg.endOfFile else { throw FFmpeg.failure(.ioError, "libx264 cannot be flushed", flushed) }
            try drain(write)
            return
        }
        let width = frame.pointee.width, height = frame.pointee.height
        guard width > 0, height > 0, frame.pointee.format >= 0 else { throw Reason(code: .corruptMedia, message: "the decoder returned a frame without pixels") }
        // A frame already of the output's size in 8-bit 4:2:0 goes to libx264 as it is, as the
        // ffmpeg program's scale filter passes it on: no copy of every frame.
        let input: UnsafeMutablePointer<AVFrame>
        if ToneMapper.isHDR(frame.pointee.color_trc) {
            input = try toneMapped(frame)
        } else if width == context.pointee.width && height == context.pointee.height && frame.pointee.format == AV_PIX_FMT_YUV420P.rawValue {
            input = frame
        } else {
            input = try scaled(frame)
        }
        // Timestamps that never go back: a frame at or before the last one is moved just past it.
        var timestamp = frame.pointee.best_effort_timestamp
        if timestamp == FFmpeg.noTimestamp {
            timestamp = lastTimestamp == .min ? 0 : lastTimestamp + 1
        } else {
            timestamp -= origin
        }
        if timestamp <= lastTimestamp { timestamp = lastTimestamp + 1 }
        lastTimestamp = timestamp
        input.pointee.pts = timestamp
        // libx264 takes a frame's picture type as an order (a decoded B frame would be forced to
        // be one): x264 chooses, as for the ffmpeg program, which clears it too.
        input.pointee.pict_type = AV_PICTURE_TYPE_NONE
        try replay?.keep(frame: input)
        try send(input, write: write)
    }

    /// Encodes the frames another encoder was given (`SpeedLadder.Replay`: scaled and timed
    /// already), as the start of this one's stream.
    func resume(from replay: SpeedLadder.Replay, write: (UnsafeMutablePointer<AVPacket>) throws(Reason) -> Void) throws(Reason) {
        for kept in replay.frames {
            lastTimestamp = kept.pointer.pointee.pts
            try send(kept.pointer, write: write)
        }
    }

    /// One frame, ready for libx264, given to it; each packet made to `write`.
    private func send(_ frame: UnsafeMutablePointer<AVFrame>, write: (UnsafeMutablePointer<AVPacket>) throws(Reason) -> Void) throws(Reason) {
        let sent = avcodec_send_frame(context, frame)
        guard sent >= 0 else { throw FFmpeg.failure(.ioError, "libx264 refused a frame", sent) }
        try drain(write)
    }

    /// The output's colour tags, which libx264 writes into the stream: BT.709 for a PQ or HLG
    /// source, which is tone-mapped (`ToneMapper`); otherwise the source's own (libswscale
    /// scales YUV without changing its matrix), BT.601's matrix for RGB (libswscale's default
    /// converting it), and always limited range (libswscale converts a full-range source).
    private static func tagColour(_ context: UnsafeMutablePointer<AVCodecContext>, from source: UnsafeMutablePointer<AVCodecParameters>) {
        context.pointee.color_range = AVCOL_RANGE_MPEG
        if ToneMapper.isHDR(source.pointee.color_trc) {
            (context.pointee.color_primaries, context.pointee.color_trc, context.pointee.colorspace) = (AVCOL_PRI_BT709, AVCOL_TRC_BT709, AVCOL_SPC_BT709)
            return
        }
        (context.pointee.color_primaries, context.pointee.color_trc) = (source.pointee.color_primaries, source.pointee.color_trc)
        let descriptor = av_pix_fmt_desc_get(AVPixelFormat(source.pointee.format))
        let rgb = descriptor.map { $0.pointee.flags & UInt64(AV_PIX_FMT_FLAG_RGB) != 0 } ?? false
        context.pointee.colorspace = rgb ? AVCOL_SPC_SMPTE170M : source.pointee.color_space
    }

    /// A PQ or HLG frame tone-mapped to BT.709 at the output size, into the one frame kept for it.
    private func toneMapped(_ frame: UnsafeMutablePointer<AVFrame>) throws(Reason) -> UnsafeMutablePointer<AVFrame> {
        let source = (width: frame.pointee.width, height: frame.pointee.height, format: frame.pointee.format)
        if let mapper = toneMapper, mapper.input != source || toneMappedFrame == nil {
            toneMapper = nil
        }
        if toneMapper == nil {
            toneMapper = try ToneMapper(width: source.width, height: source.height, format: source.format,
                                        outputWidth: context.pointee.width, outputHeight: context.pointee.height)
            toneMappedFrame = try AVFrameBox()
        }
        guard let mapper = toneMapper, let made = toneMappedFrame else { throw Reason(code: .ioError, message: "no tone mapper") }
        try mapper.map(frame, into: made.pointer)
        return made.pointer
    }

    /// `frame` scaled and converted into the one output frame, reused from frame to frame: a
    /// new 1280×720 buffer a frame was a fresh mapping of 1.4 MB to fault in each time.
    private func scaled(_ frame: UnsafeMutablePointer<AVFrame>) throws(Reason) -> UnsafeMutablePointer<AVFrame> {
        let source = (width: frame.pointee.width, height: frame.pointee.height, format: frame.pointee.format)
        if scaler == nil || scalerSource.map({ $0 != source }) ?? true {
            sws_freeContext(scaler)
            scaler = try Self.makeScaler(from: source, to: (context.pointee.width, context.pointee.height))
            scalerSource = source
        }
        let made: AVFrameBox
        if let reused = scaledFrame {
            made = reused
        } else {
            made = try AVFrameBox()
            scaledFrame = made
        }
        let output = made.pointer
        // Someone else holds the last one (the encoder, or the speed ladder's replay): a new
        // buffer, not a copy of a picture about to be overwritten.
        if output.pointee.buf.0 != nil && av_frame_is_writable(output) == 0 { av_frame_unref(output) }
        if output.pointee.buf.0 == nil {
            output.pointee.width = context.pointee.width
            output.pointee.height = context.pointee.height
            output.pointee.format = AV_PIX_FMT_YUV420P.rawValue
            // 64-byte alignment: libswscale's vector code writes whole rows of 64 bytes.
            let allocated = av_frame_get_buffer(output, 64)
            guard allocated >= 0 else { throw FFmpeg.failure(.ioError, "FFmpeg cannot allocate a frame", allocated) }
        }
        let converted = sws_scale_frame(scaler, output, frame)
        guard converted >= 0 else { throw FFmpeg.failure(.corruptMedia, "libswscale cannot scale the frame", converted) }
        return output
    }


    /// A scaler to 8-bit 4:2:0 at the output size, bicubic, on as many threads as there are
    /// cores (libswscale's `threads`, as the ffmpeg program's scale filter sets it): scaling a
    /// 1080p frame on one thread was a serial step between the decoder's and libx264's threads.
    private static func makeScaler(from source: (width: Int32, height: Int32, format: Int32),
                                   to output: (Int32, Int32)) throws(Reason) -> OpaquePointer {
        guard let made = sws_alloc_context() else { throw Reason(code: .ioError, message: "libswscale cannot allocate a scaler: out of memory") }
        let object = UnsafeMutableRawPointer(made)
        let settings: [(String, Int64)] = [
            ("srcw", Int64(source.width)), ("srch", Int64(source.height)), ("src_format", Int64(source.format)),
            ("dstw", Int64(output.0)), ("dsth", Int64(output.1)), ("dst_format", Int64(AV_PIX_FMT_YUV420P.rawValue)),
            ("sws_flags", Int64(SWS_BICUBIC)), ("threads", Int64(min(4, max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))))),
        ]
        for (name, value) in settings where av_opt_set_int(object, name, value, 0) < 0 {
            sws_freeContext(made)
            throw Reason(code: .ioError, message: "libswscale refused \(name)")
        }
        guard sws_init_context(made, nil, nil) >= 0 else {
            sws_freeContext(made)
            throw Reason(code: .corruptMedia, message: "libswscale cannot convert the frame's pixel format")
        }
        return made
    }

    private func drain(_ write: (UnsafeMutablePointer<AVPacket>) throws(Reason) -> Void) throws(Reason) {
        let packet = try AVPacketBox()
        let rate = context.pointee.framerate
        while true {
            let received = avcodec_receive_packet(context, packet.pointer)
            if received == FFmpeg.tryAgain || received == FFmpeg.endOfFile { return }
            guard received >= 0 else { throw FFmpeg.failure(.ioError, "libx264 failed", received) }
            defer { av_packet_unref(packet.pointer) }
            // libx264 leaves durations unset; without one the muxer ends the track (and its edit
            // list) at the last frame's start, and players drop that frame.
            if packet.pointer.pointee.duration <= 0, rate.num > 0, rate.den > 0 {
                packet.pointer.pointee.duration = max(1, av_rescale_q(1, av_inv_q(rate), context.pointee.time_base))
            }
            try write(packet.pointer)
        }
    }
}

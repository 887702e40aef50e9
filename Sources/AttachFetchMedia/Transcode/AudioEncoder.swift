internal import CFFmpeg
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Decoded audio in, AAC-LC packets out: libswresample converts each frame to the encoder's
/// planar float at its rate and channels, a FIFO cuts the samples into the encoder's frames
/// (1,024 samples), and FFmpeg's own AAC encoder encodes them. Owns its encoder, resampler and
/// FIFO; not thread-safe, not Sendable.
final class AudioEncoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    private var resampler: OpaquePointer?
    private let fifo: OpaquePointer
    /// The next sample's time, in samples at the encoder's rate from the output's start: the
    /// first frame's own time, then counted on (the resampler fills gaps and drops overlaps, so
    /// the count stays on the frames' times).
    private var nextTimestamp: Int64 = 0
    private var started = false
    /// Where the output's timeline starts, in the stream's time base (`start`).
    private var origin: Int64 = 0
    private var streamTimeBase = AVRational(num: 1, den: 1)
    /// Samples handed to the encoder so far.
    private(set) var samples: Int64 = 0

    /// A gap or overlap between the frames' times and the samples, in seconds, past which the
    /// resampler inserts silence or drops samples: within the 40 ms that sound and picture may
    /// drift apart.
    static let compensationThreshold = 0.02
    /// A jump forward in the frames' times longer than this is damage, not a pause: filling it
    /// with silence would write that much of it. A jump back longer than `longestOverlap` is
    /// damage too: dropping that much sound would eat what follows. Both are refused
    /// (`corruptMedia`), as ffprobe reports such a stream's timestamps as invalid.
    static let longestGap = 10.0
    static let longestOverlap = 1.0

    /// AVERROR_INPUT_CHANGED (a macro Swift does not import).
    static let inputChanged: Int32 = -0x636e_6701

    /// The AAC bit rate per channel: 64 kb/s, which keeps speech and music clear (iTunes'
    /// AAC-LC guidance is 128 kb/s for stereo) and 5 MiB for 5 min of stereo.
    static let bitRatePerChannel = 64_000

    /// The highest source rate converted: 768 kHz, the highest PCM rate recorded (a DSD file
    /// decodes to 352.8 kHz). A header may state any rate, and libswresample's filter for a
    /// ratio of thousands to one takes seconds and a gigabyte to build (scripts/fuzz.sh found a
    /// 104-byte file stating 380 MHz).
    static let highestSourceRate: Int32 = 768_000

    init(decoder: AVDecoder) throws(Reason) {
        let input = decoder.context
        let sourceRate = input.pointee.sample_rate
        guard sourceRate <= Self.highestSourceRate else {
            throw Reason(code: .corruptMedia, message: "the audio states \(sourceRate) samples a second, past the highest a recording has (768 kHz)")
        }
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_AAC), let context = avcodec_alloc_context3(codec) else {
            throw Reason(code: .ioError, message: "FFmpeg has no AAC encoder")
        }
        self.context = context
        let channels = min(2, max(1, input.pointee.ch_layout.nb_channels))
        av_channel_layout_default(&context.pointee.ch_layout, channels)
        context.pointee.sample_rate = Self.rate(for: input.pointee.sample_rate)
        context.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
        context.pointee.bit_rate = Int64(Self.bitRatePerChannel) * Int64(channels)
        context.pointee.profile = 1 // FF_PROFILE_AAC_LOW
        context.pointee.time_base = AVRational(num: 1, den: context.pointee.sample_rate)
        // MPEG-4 keeps the decoder configuration in the sample description, not in each packet.
        context.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER
        context.pointee.thread_count = 1
        guard let fifo = av_audio_fifo_alloc(AV_SAMPLE_FMT_FLTP, channels, 4_096) else {
            freeCodecContext(context)
            throw Reason(code: .ioError, message: "FFmpeg cannot allocate an audio FIFO: out of memory")
        }
        self.fifo = fifo
        let opened = avcodec_open2(context, codec, nil)
        guard opened >= 0 else { throw FFmpeg.failure(.ioError, "FFmpeg cannot open the AAC encoder", opened) }
        let made = swr_alloc_set_opts2(&resampler, &context.pointee.ch_layout, AV_SAMPLE_FMT_FLTP, context.pointee.sample_rate,
                                       &input.pointee.ch_layout, input.pointee.sample_fmt, input.pointee.sample_rate, 0, nil)
        // Timestamps drive the samples (`swr_next_pts`): a gap in the source is filled with
        // silence and an overlap dropped, each once it passes the threshold.
        guard made >= 0,
              av_opt_set_double(UnsafeMutableRawPointer(resampler), "min_comp", 0.001, 0) >= 0,
              av_opt_set_double(UnsafeMutableRawPointer(resampler), "min_hard_comp", Self.compensationThreshold, 0) >= 0,
              swr_init(resampler) >= 0 else {
            throw Reason(code: .unsupportedType, message: "FFmpeg cannot convert this audio's channels or sample format")
        }
    }

    deinit {
        swr_free(&resampler)
        av_audio_fifo_free(fifo)
        freeCodecContext(context)
    }

    /// The encoder's rate: the source's where AAC has it (8 to 48 kHz), else 48 kHz.
    package static func rate(for source: Int32) -> Int32 {
        let rates: [Int32] = [8_000, 11_025, 12_000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000]
        return rates.contains(source) ? source : 48_000
    }

    /// Sets the output's start (`MediaTranscoder.origin(of:)`, in `AV_TIME_BASE` units) for a
    /// stream of `streamTimeBase`. Before the first frame.
    func start(origin: Int64, streamTimeBase: AVRational) throws(Reason) {
        guard streamTimeBase.num > 0, streamTimeBase.den > 0 else {
            throw Reason(code: .corruptMedia, message: "the audio stream has no time base")
        }
        self.origin = av_rescale_q(origin, FFmpeg.microseconds, streamTimeBase)
        self.streamTimeBase = streamTimeBase
    }

    /// Seconds from the output's start to the end of the last sample handed to the encoder.
    var end: Double { Double(nextTimestamp) / Double(context.pointee.sample_rate) }

    /// Tells the resampler where `frame` belongs (`swr_next_pts`), so that it compensates a gap
    /// or an overlap; the first frame's time becomes the first sample's.
    private func place(_ frame: UnsafeMutablePointer<AVFrame>) throws(Reason) {
        let timestamp = frame.pointee.best_effort_timestamp
        let inputRate = Int64(frame.pointee.sample_rate > 0 ? frame.pointee.sample_rate : 1)
        let outputRate = Int64(context.pointee.sample_rate)
        guard timestamp != FFmpeg.noTimestamp else { return }
        // swr_next_pts counts in 1 / (input rate x output rate) of a second: past Int32, so not
        // an AVRational.
        let wanted = av_rescale(timestamp - origin, Int64(streamTimeBase.num) * inputRate * outputRate, Int64(streamTimeBase.den))
        if started {
            let due = swr_next_pts(resampler, Int64.min) + swr_get_delay(resampler, inputRate * outputRate)
            let gap = Double(wanted - due) / Double(inputRate * outputRate)
            guard gap < Self.longestGap, gap > -Self.longestOverlap else {
                throw Reason(code: .corruptMedia,
                             message: "the audio's timestamps jump \(TextFormat.fixed(abs(gap), digits: 1)) s \(gap > 0 ? "ahead" : "back"): the stream is damaged")
            }
        }
        let placed = swr_next_pts(resampler, wanted)
        if !started {
            started = true
            nextTimestamp = (placed + inputRate / 2) / inputRate
        }
    }

    /// Converts and queues one decoded frame (nil: the end, which flushes the resampler, the
    /// FIFO's last short frame and the encoder), giving each packet made to `write`.
    package func encode(_ frame: UnsafeMutablePointer<AVFrame>?, write: (UnsafeMutablePointer<AVPacket>) throws(Reason) -> Void) throws(Reason) {
        let converted = try AVFrameBox()
        converted.pointer.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
        converted.pointer.pointee.sample_rate = context.pointee.sample_rate
        av_channel_layout_copy(&converted.pointer.pointee.ch_layout, &context.pointee.ch_layout)
        // The frame's own layout may be unset (some decoders leave it to the stream's).
        if let frame, frame.pointee.ch_layout.nb_channels == 0 { av_channel_layout_default(&frame.pointee.ch_layout, 1) }
        if let frame { try place(frame) }
        var status = swr_convert_frame(resampler, converted.pointer, frame)
        // A frame whose layout, rate or format differs from what the decoder announced (WMA's
        // decoders name the layout only in their frames): the resampler is set up from it.
        if status == Self.inputChanged, let frame {
            status = swr_config_frame(resampler, converted.pointer, frame)
            if status >= 0 { status = swr_convert_frame(resampler, converted.pointer, frame) }
        }
        guard status >= 0 else { throw FFmpeg.failure(.corruptMedia, "FFmpeg cannot convert the audio", status) }
        if converted.pointer.pointee.nb_samples > 0 {
            let queued = converted.pointer.pointee.extended_data.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: 2) {
                av_audio_fifo_write(fifo, $0, converted.pointer.pointee.nb_samples)
            }
            guard queued >= 0 else { throw FFmpeg.failure(.ioError, "FFmpeg cannot queue the audio", queued) }
        }
        let frameSize = max(1, context.pointee.frame_size)
        while av_audio_fifo_size(fifo) >= frameSize || (frame == nil && av_audio_fifo_size(fifo) > 0) {
            try send(count: min(frameSize, av_audio_fifo_size(fifo)), write: write)
        }
        if frame == nil {
            let flushed = avcodec_send_frame(context, nil)
            guard flushed >= 0 || flushed == FFmpeg.endOfFile else { throw FFmpeg.failure(.ioError, "the AAC encoder cannot be flushed", flushed) }
            try drain(write)
        }
    }

    private func send(count: Int32, write: (UnsafeMutablePointer<AVPacket>) throws(Reason) -> Void) throws(Reason) {
        let chunk = try AVFrameBox()
        chunk.pointer.pointee.nb_samples = count
        chunk.pointer.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
        chunk.pointer.pointee.sample_rate = context.pointee.sample_rate
        av_channel_layout_copy(&chunk.pointer.pointee.ch_layout, &context.pointee.ch_layout)
        let allocated = av_frame_get_buffer(chunk.pointer, 0)
        guard allocated >= 0 else { throw FFmpeg.failure(.ioError, "FFmpeg cannot allocate audio", allocated) }
        let read = chunk.pointer.pointee.extended_data.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: 2) {
            av_audio_fifo_read(fifo, $0, count)
        }
        guard read == count else { throw Reason(code: .ioError, message: "FFmpeg's audio FIFO gave \(read) of \(count) samples") }
        chunk.pointer.pointee.pts = nextTimestamp
        nextTimestamp += Int64(count)
        samples += Int64(count)
        let sent = avcodec_send_frame(context, chunk.pointer)
        guard sent >= 0 else { throw FFmpeg.failure(.ioError, "the AAC encoder refused a frame", sent) }
        try drain(write)
    }

    private func drain(_ write: (UnsafeMutablePointer<AVPacket>) throws(Reason) -> Void) throws(Reason) {
        let packet = try AVPacketBox()
        while true {
            let received = avcodec_receive_packet(context, packet.pointer)
            if received == FFmpeg.tryAgain || received == FFmpeg.endOfFile { return }
            guard received >= 0 else { throw FFmpeg.failure(.ioError, "the AAC encoder failed", received) }
            defer { av_packet_unref(packet.pointer) }
            try write(packet.pointer)
        }
    }
}

/// `avcodec_free_context` on a context this code owns.
func freeCodecContext(_ context: UnsafeMutablePointer<AVCodecContext>) {
    var owned: UnsafeMutablePointer<AVCodecContext>? = context
    avcodec_free_context(&owned)
}

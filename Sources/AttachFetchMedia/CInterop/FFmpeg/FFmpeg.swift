internal import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// FFmpeg's process-wide set-up, once: its log goes nowhere but the errors a transcode's decoders
/// report (`DecoderErrorLog`); what went wrong reaches the descriptor through return codes and that log.
package enum FFmpeg {
    static let startup: Void = {
        av_log_set_level(AV_LOG_QUIET)
        DecoderErrorLog.install()
    }()

    /// AVERROR_EOF and AV_NOPTS_VALUE are C macros Swift cannot import.
    static let endOfFile: Int32 = -Int32(bitPattern: 0x45 | 0x4F << 8 | 0x46 << 16 | 0x20 << 24)
    static let noTimestamp = Int64.min
    /// AVERROR(EAGAIN): the codec wants input first (or has output first), not an error.
    static let tryAgain = -EAGAIN
    /// `AV_TIME_BASE_Q` (a macro Swift does not import): microseconds.
    static let microseconds = AVRational(num: 1, den: AV_TIME_BASE)

    /// An AVIOContext's seek callback on a file descriptor: AVSEEK_SIZE asks for the size, and
    /// AVSEEK_FORCE is a hint for network streams that a file ignores.
    static func seek(_ fd: Int32, _ offset: Int64, _ whence: Int32) -> Int64 {
        if whence & AVSEEK_SIZE != 0 {
            var info = stat()
            return fstat(fd, &info) == 0 ? Int64(info.st_size) : Int64(-errno)
        }
        let position = lseek(fd, off_t(offset), whence & ~AVSEEK_FORCE)
        return position < 0 ? Int64(-errno) : Int64(position)
    }

    /// The one mapping of an FFmpeg failure: the code the caller decides (what failed tells
    /// whether the media is corrupt, unsupported, or the machine failed), with FFmpeg's own text.
    /// Out of memory, or of threads (a thread's stack counts as data), is this process's limits,
    /// never the media's fault: `ioError`, whatever `code` the caller gave, with the limit.
    package static func failure(_ code: ReasonCode, _ what: String, _ status: Int32) -> Reason {
        let resources = status == -ENOMEM || status == -EAGAIN
        return Reason(code: resources ? .ioError : code, message: "\(what): \(errorText(status))" + (resources ? dataLimitText : ""))
    }

    /// Out of memory in a worker is most often its own data limit (`RLIMIT_DATA`) reached: said,
    /// with the limit, so that the reason names what to raise.
    static var dataLimitText: String {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_DATA.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return "" }
        return "; this process may hold \(limit.rlim_cur >> 20) MiB of data \(AttachmentDescriptor.Reason.dataLimitEnding)"
    }

    /// FFmpeg's own text for an error code.
    static func errorText(_ code: Int32) -> String {
        var text = [CChar](repeating: 0, count: 128)
        guard av_strerror(code, &text, text.count) == 0 else { return "FFmpeg error \(code)" }
        return String(nulTerminated: text)
    }
}

/// A file descriptor as an AVIOContext: FFmpeg reads or writes the file only through these
/// callbacks, never through a protocol. Owns the descriptor, the context and its buffer; used
/// by one demuxer or muxer on one thread, so not Sendable.
final class AVFileIO {
    /// The callbacks' opaque pointer: it holds only the descriptor.
    private final class Descriptor {
        let fd: Int32
        init(fd: Int32) { self.fd = fd }
    }

    let context: UnsafeMutablePointer<AVIOContext>
    private let descriptor: Descriptor, owning: Bool
    /// The descriptor read or written through.
    var fd: Int32 { descriptor.fd }

    /// Takes `fd` over (closed with this object, or at once when this throws) unless `owning` is
    /// false: a job's unnamed output, whose descriptor is the job's.
    init(fd: Int32, writable: Bool, owning: Bool = true) throws(Reason) {
        descriptor = Descriptor(fd: fd)
        self.owning = owning
        let bufferSize: Int32 = 65_536
        guard let buffer = av_malloc(Int(bufferSize))?.assumingMemoryBound(to: UInt8.self) else {
            if owning { close(fd) }
            throw Reason(code: .ioError, message: "FFmpeg cannot allocate its file buffer: out of memory")
        }
        let opaque = Unmanaged.passUnretained(descriptor).toOpaque()
        let made = writable
            ? avio_alloc_context(buffer, bufferSize, 1, opaque, nil, { opaque, buffer, size in
                AVFileIO.write(Unmanaged<Descriptor>.fromOpaque(opaque!).takeUnretainedValue().fd, buffer!, size)
            }, { opaque, offset, whence in
                FFmpeg.seek(Unmanaged<Descriptor>.fromOpaque(opaque!).takeUnretainedValue().fd, offset, whence)
            })
            : avio_alloc_context(buffer, bufferSize, 0, opaque, { opaque, buffer, size in
                let count = read(Unmanaged<Descriptor>.fromOpaque(opaque!).takeUnretainedValue().fd, buffer, Int(size))
                if count == 0 { return FFmpeg.endOfFile }
                return count < 0 ? -errno : Int32(count)
            }, nil, { opaque, offset, whence in
                FFmpeg.seek(Unmanaged<Descriptor>.fromOpaque(opaque!).takeUnretainedValue().fd, offset, whence)
            })
        guard let made else {
            // The context did not take the buffer: it is still ours to free.
            av_free(buffer)
            if owning { close(fd) }
            throw Reason(code: .ioError, message: "FFmpeg cannot allocate its file context: out of memory")
        }
        context = made
    }

    deinit {
        // The buffer may have been replaced by FFmpeg; free whatever the context holds now.
        av_freep(&context.pointee.buffer)
        var context: UnsafeMutablePointer<AVIOContext>? = context
        avio_context_free(&context)
        if owning { close(descriptor.fd) }
    }

    private static func write(_ fd: Int32, _ buffer: UnsafeMutablePointer<UInt8>, _ size: Int32) -> Int32 {
        var offset = 0
        while offset < Int(size) {
            let written = Glibc.write(fd, buffer + offset, Int(size) - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return -errno
            }
            offset += written
        }
        return size
    }
}

/// One media file opened for demuxing. FFmpeg reads it only through callbacks on a descriptor
/// this class opened, never through a protocol: no URL is opened, and `io_open` (how demuxers
/// open side files such as MOV data references) always refuses. Only the demuxers named for the
/// sniffed type may probe it, and only the allowed decoders may run.
///
/// Owns the AVFormatContext, the AVIOContext and the descriptor; not thread-safe, so not Sendable.
final class AVInput {
    let context: UnsafeMutablePointer<AVFormatContext>
    private let file: AVFileIO

    init(path: String, demuxers: String, decoders: String) throws(Reason) {
        _ = FFmpeg.startup
        let fd = open(UnnamedFile.openable(path), O_RDONLY | O_CLOEXEC)  // a working path through /proc/self/fd
        guard fd >= 0 else {
            throw Reason(code: .ioError, message: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        file = try AVFileIO(fd: fd, writable: false)
        guard var context = avformat_alloc_context() else {
            throw Reason(code: .ioError, message: "FFmpeg cannot allocate a format context: out of memory")
        }
        context.pointee.pb = file.context
        context.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        context.pointee.io_open = { _, _, _, _, _ in -EPERM }
        // Bounds on what probing may read and decode before the streams are known.
        context.pointee.probesize = 4 << 20
        context.pointee.max_analyze_duration = 5 * Int64(AV_TIME_BASE)
        var options: OpaquePointer?
        av_dict_set(&options, "format_whitelist", demuxers, 0)
        av_dict_set(&options, "codec_whitelist", decoders, 0)
        av_dict_set(&options, "enable_drefs", "0", 0)
        var opened: UnsafeMutablePointer<AVFormatContext>? = context
        let status = avformat_open_input(&opened, "", nil, &options)
        av_dict_free(&options)
        // avformat_open_input frees the context when it fails (the file's context stays ours).
        guard status >= 0, let opened else {
            throw FFmpeg.failure(.corruptMedia, "FFmpeg cannot read the container", status)
        }
        context = opened
        self.context = context
        // Probing opens a decoder per stream; one thread each (FFmpeg's default is one per
        // core, each holding frames), as the decoders attach-fetch opens itself.
        var streamOptions = [OpaquePointer?](repeating: nil, count: Int(context.pointee.nb_streams))
        for index in streamOptions.indices { av_dict_set(&streamOptions[index], "threads", "1", 0) }
        let found = streamOptions.withUnsafeMutableBufferPointer { avformat_find_stream_info(context, $0.baseAddress) }
        for index in streamOptions.indices { av_dict_free(&streamOptions[index]) }
        guard found >= 0 else {
            throw FFmpeg.failure(.corruptMedia, "FFmpeg cannot find the streams", found)
        }
    }

    deinit {
        // Before `file` (released after this body): the demuxer may still touch its context.
        var context: UnsafeMutablePointer<AVFormatContext>? = context
        avformat_close_input(&context)
    }

    package var streams: [UnsafeMutablePointer<AVStream>] {
        (0..<Int(context.pointee.nb_streams)).compactMap { context.pointee.streams[$0] }
    }

    /// The file's size in bytes.
    var fileBytes: Int64 {
        var info = stat()
        return fstat(file.fd, &info) == 0 ? Int64(info.st_size) : 0
    }

    /// The container's duration in seconds, when it states one.
    package var duration: Double? {
        let value = context.pointee.duration
        return value == FFmpeg.noTimestamp || value <= 0 ? nil : Double(value) / Double(AV_TIME_BASE)
    }
}

/// An opened decoder for one stream. Owns its AVCodecContext; not thread-safe, not Sendable.
final class AVDecoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    package let stream: UnsafeMutablePointer<AVStream>
    package let name: String

    /// - Parameters:
    ///   - threads: 1 for the probe's few frames (the pipeline's worker threads are the
    ///     parallelism); a transcode, which decodes every frame beside libx264's two threads,
    ///     asks for more (`MediaTranscoder.decoderThreads`).
    ///   - maxPixels: the most pixels a frame may have (`max_pixels`): the decoder refuses a
    ///     larger one, even when the stream's header states a smaller size and a later frame
    ///     grows (libdav1d and libavcodec's own decoders honour it).
    init(stream: UnsafeMutablePointer<AVStream>, allowed: Set<String>, threads: Int32 = 1, maxPixels: Int) throws(Reason) {
        self.stream = stream
        let parameters = stream.pointee.codecpar!
        // A codec FFmpeg cannot decode at all (MPEG-H 3D audio, AC-4, VVC on Debian 12's
        // FFmpeg) is a type no device here can show, not damage.
        guard let codec = avcodec_find_decoder(parameters.pointee.codec_id) else {
            let label = parameters.pointee.codec_id == AV_CODEC_ID_NONE ? AVDecoder.codecLabel(parameters) : PlayableMedia.title(parameters.pointee.codec_id)
            throw Reason(code: .unsupportedType, message: "FFmpeg has no decoder for the \(label) codec")
        }
        name = String(cString: codec.pointee.name)
        guard allowed.contains(name) else {
            throw Reason(code: .unsupportedType, message: "the \(PlayableMedia.title(parameters.pointee.codec_id)) codec is not one attach-fetch decodes")
        }
        guard let context = avcodec_alloc_context3(codec) else {
            throw Reason(code: .ioError, message: "FFmpeg cannot allocate a decoder: out of memory")
        }
        self.context = context
        let copied = avcodec_parameters_to_context(context, parameters)
        guard copied >= 0 else {
            throw FFmpeg.failure(.corruptMedia, "bad \(name) parameters", copied)
        }
        context.pointee.thread_count = threads
        context.pointee.max_pixels = Int64(max(1, maxPixels))
        let status = avcodec_open2(context, codec, nil)
        guard status >= 0 else {
            throw FFmpeg.failure(.corruptMedia, "FFmpeg cannot open the \(name) decoder", status)
        }
    }

    deinit {
        var context: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&context)
    }

    /// The codec's name, or its four-character code when FFmpeg does not know the codec.
    static func codecLabel(_ parameters: UnsafeMutablePointer<AVCodecParameters>) -> String {
        guard parameters.pointee.codec_id == AV_CODEC_ID_NONE else { return String(cString: avcodec_get_name(parameters.pointee.codec_id)) }
        let tag = parameters.pointee.codec_tag
        let letters = (0..<4).map { UInt8((tag >> ($0 * 8)) & 0xFF) }
        return letters.allSatisfy({ (0x20...0x7E).contains($0) }) ? String(decoding: letters, as: UTF8.self) : "unknown"
    }

    /// The codec's common name ("h264", "aac"), which is what the descriptor reports.
    var codecName: String { String(cString: avcodec_get_name(context.pointee.codec_id)) }
}

/// Owns one AVFrame.
final class AVFrameBox {
    package let pointer: UnsafeMutablePointer<AVFrame>
    init() throws(Reason) {
        guard let frame = av_frame_alloc() else { throw Reason(code: .ioError, message: "out of memory") }
        pointer = frame
    }
    /// A new reference to `frame`'s buffers (no copy of the picture).
    convenience init(referencing frame: UnsafePointer<AVFrame>) throws(Reason) {
        try self.init()
        let status = av_frame_ref(pointer, frame)
        guard status >= 0 else { throw FFmpeg.failure(.ioError, "FFmpeg cannot keep a frame", status) }
    }
    deinit {
        var frame: UnsafeMutablePointer<AVFrame>? = pointer
        av_frame_free(&frame)
    }
}

/// Owns one AVPacket.
final class AVPacketBox {
    package let pointer: UnsafeMutablePointer<AVPacket>
    init() throws(Reason) {
        guard let packet = av_packet_alloc() else { throw Reason(code: .ioError, message: "out of memory") }
        pointer = packet
    }
    /// A new reference to `packet`'s data (no copy).
    convenience init(referencing packet: UnsafePointer<AVPacket>) throws(Reason) {
        try self.init()
        let status = av_packet_ref(pointer, packet)
        guard status >= 0 else { throw FFmpeg.failure(.ioError, "FFmpeg cannot keep a packet", status) }
    }

    /// Whether the packet is a sample encrypted with Common Encryption (`senc` info): its data
    /// is ciphertext, which no decoder may be given as media.
    var isEncrypted: Bool { av_packet_get_side_data(pointer, AV_PKT_DATA_ENCRYPTION_INFO, nil) != nil }
    deinit {
        var packet: UnsafeMutablePointer<AVPacket>? = pointer
        av_packet_free(&packet)
    }
}

internal import CFFmpeg
import AttachFetchCore
#if canImport(Glibc)
import Glibc
#endif

/// One media file being written by a muxer. FFmpeg writes only through callbacks on a
/// descriptor this class created (O_EXCL, mode 0600), never through a protocol. Owns the
/// output AVFormatContext and its file; not thread-safe, not Sendable.
final class AVOutput {
    let context: UnsafeMutablePointer<AVFormatContext>
    private let file: AVFileIO
    private let fd: Int32
    /// The read-back contexts the muxer opened (`moovFirst`), each with its own position.
    private var readers: [UnsafeMutablePointer<AVIOContext>: ReadBack] = [:]

    /// A reader of the output at a position of its own (`pread`), so the writer's offset stays.
    private final class ReadBack {
        let fd: Int32
        var position: Int64 = 0
        init(fd: Int32) { self.fd = fd }
    }

    init(path: String, format: String) throws(Reason) {
        _ = FFmpeg.startup
        // Read and write: a muxer may read back what it wrote (``writeHeader(moovFirst:)``). A
        // working path's file is the job's, handed over empty (or emptied by `SafeFile.discard`),
        // written through the job's own descriptor: a worker makes no file by name.
        let working = UnnamedFile.descriptor(in: path)
        let fd = working ?? open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw Reason(code: .ioError, message: "cannot create the output file: \(String(cString: strerror(errno)))")
        }
        self.fd = fd
        file = try AVFileIO(fd: fd, writable: true, owning: working == nil)
        var made: UnsafeMutablePointer<AVFormatContext>?
        let status = avformat_alloc_output_context2(&made, nil, format, nil)
        guard status >= 0, let made else {
            throw FFmpeg.failure(.ioError, "FFmpeg cannot start the \(format) muxer", status)
        }
        context = made
        context.pointee.pb = file.context
        context.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        context.pointee.opaque = Unmanaged.passUnretained(self).toOpaque()
        // Only the output itself, read back (the MPEG-4 muxer's faststart reads what it wrote to
        // move `moov` before `mdat`); no other file or protocol is ever opened.
        context.pointee.io_open = { formatContext, pb, _, flags, _ in
            guard flags & AVIO_FLAG_WRITE == 0, let formatContext, let pb, let opaque = formatContext.pointee.opaque else { return -EPERM }
            return Unmanaged<AVOutput>.fromOpaque(opaque).takeUnretainedValue().openReadBack(pb)
        }
        context.pointee.io_close2 = { formatContext, pb in
            guard let formatContext, let pb, let opaque = formatContext.pointee.opaque else { return 0 }
            Unmanaged<AVOutput>.fromOpaque(opaque).takeUnretainedValue().closeReadBack(pb)
            return 0
        }
    }

    private func openReadBack(_ pb: UnsafeMutablePointer<UnsafeMutablePointer<AVIOContext>?>) -> Int32 {
        let reader = ReadBack(fd: fd)
        let bufferSize: Int32 = 65_536
        guard let buffer = av_malloc(Int(bufferSize))?.assumingMemoryBound(to: UInt8.self) else { return -ENOMEM }
        let made = avio_alloc_context(buffer, bufferSize, 0, Unmanaged.passUnretained(reader).toOpaque(), { opaque, buffer, size in
            let reader = Unmanaged<ReadBack>.fromOpaque(opaque!).takeUnretainedValue()
            let count = pread(reader.fd, buffer, Int(size), off_t(reader.position))
            if count == 0 { return FFmpeg.endOfFile }
            guard count > 0 else { return -errno }
            reader.position += Int64(count)
            return Int32(count)
        }, nil, { opaque, offset, whence in
            let reader = Unmanaged<ReadBack>.fromOpaque(opaque!).takeUnretainedValue()
            var info = stat()
            guard fstat(reader.fd, &info) == 0 else { return Int64(-errno) }
            if whence & AVSEEK_SIZE != 0 { return Int64(info.st_size) }
            switch whence & ~AVSEEK_FORCE {
            case SEEK_SET: reader.position = offset
            case SEEK_CUR: reader.position += offset
            case SEEK_END: reader.position = Int64(info.st_size) + offset
            default: return Int64(-EINVAL)
            }
            return reader.position
        })
        guard let made else {
            av_free(buffer)
            return -ENOMEM
        }
        readers[made] = reader
        pb.pointee = made
        return 0
    }

    private func closeReadBack(_ pb: UnsafeMutablePointer<AVIOContext>) {
        guard readers.removeValue(forKey: pb) != nil else { return }
        av_freep(&pb.pointee.buffer)
        var context: UnsafeMutablePointer<AVIOContext>? = pb
        avio_context_free(&context)
    }

    deinit { avformat_free_context(context) }

    /// A new output stream with the input stream's parameters, time base, aspect ratio and
    /// display matrix.
    func addStream(copying input: UnsafeMutablePointer<AVStream>) throws(Reason) -> UnsafeMutablePointer<AVStream> {
        guard let stream = avformat_new_stream(context, nil) else {
            throw Reason(code: .ioError, message: "FFmpeg cannot add a stream: out of memory")
        }
        let copied = avcodec_parameters_copy(stream.pointee.codecpar, input.pointee.codecpar)
        guard copied >= 0 else {
            throw FFmpeg.failure(.corruptMedia, "FFmpeg cannot copy the stream's parameters", copied)
        }
        // The tag is the input container's; the MPEG-4 muxer chooses its own, except for HEVC,
        // where it would choose hev1 and AVFoundation plays only hvc1.
        stream.pointee.codecpar.pointee.codec_tag = input.pointee.codecpar.pointee.codec_id == AV_CODEC_ID_HEVC ? PlayableMedia.hvc1Tag : 0
        stream.pointee.time_base = input.pointee.time_base
        stream.pointee.sample_aspect_ratio = input.pointee.sample_aspect_ratio
        Self.copyDisplayMatrix(from: input, to: stream)
        return stream
    }

    /// A new output stream for what `encoder` makes, with `sideDataFrom`'s display matrix
    /// (rotation) when given.
    func addStream(encoder: UnsafeMutablePointer<AVCodecContext>,
                   sideDataFrom source: UnsafeMutablePointer<AVStream>?) throws(Reason) -> UnsafeMutablePointer<AVStream> {
        guard let stream = avformat_new_stream(context, nil) else {
            throw Reason(code: .ioError, message: "FFmpeg cannot add a stream: out of memory")
        }
        let copied = avcodec_parameters_from_context(stream.pointee.codecpar, encoder)
        guard copied >= 0 else { throw FFmpeg.failure(.ioError, "FFmpeg cannot describe the encoded stream", copied) }
        stream.pointee.time_base = encoder.pointee.time_base
        if let source { Self.copyDisplayMatrix(from: source, to: stream) }
        return stream
    }

    private static func copyDisplayMatrix(from input: UnsafeMutablePointer<AVStream>, to stream: UnsafeMutablePointer<AVStream>) {
        var size = 0
        if let matrix = av_stream_get_side_data(input, AV_PKT_DATA_DISPLAYMATRIX, &size), size > 0,
           let copy = av_stream_new_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, size) {
            copy.update(from: matrix, count: size)
        }
    }

    /// `moovFirst`: the MPEG-4 index before the media (`movflags +faststart`), as a file that
    /// plays while it downloads is written. `options`: the muxer's own, by name.
    func writeHeader(moovFirst: Bool = false, options muxerOptions: [(String, String)] = []) throws(Reason) {
        var options: OpaquePointer?
        if moovFirst { av_dict_set(&options, "movflags", "+faststart", 0) }
        for (name, value) in muxerOptions { av_dict_set(&options, name, value, 0) }
        defer { av_dict_free(&options) }
        let status = avformat_write_header(context, &options)
        guard status >= 0 else {
            let format = context.pointee.oformat.map { String(cString: $0.pointee.name) } ?? "the output"
            throw FFmpeg.failure(.unsupportedType, "FFmpeg cannot write these streams as \(format == "mp4" ? "MPEG-4" : format)", status)
        }
    }

    package func finish() throws(Reason) {
        let status = av_write_trailer(context)
        avio_flush(file.context)
        guard status >= 0, file.context.pointee.error >= 0 else {
            throw FFmpeg.failure(.ioError, "FFmpeg cannot finish the file", status < 0 ? status : file.context.pointee.error)
        }
    }
}

internal import CFFmpeg
#if canImport(Glibc)
#if canImport(Glibc)
import Glibc
#endif
#endif

/// One media file being written by a muxer. FFmpeg writes only through callbacks on a
/// descriptor this class created (O_EXCL, mode 0600), never through a protocol. Owns the
/// output AVFormatContext and its file; not thread-safe, not Sendable.
final class AVOutput {
    let context: UnsafeMutablePointer<AVFormatContext>
    private let file: AVFileIO

    init(path: String, format: String) throws(Reason) {
        _ = FFmpeg.startup
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw Reason(code: .ioError, message: "cannot create the output file: \(String(cString: strerror(errno)))")
        }
        file = try AVFileIO(fd: fd, writable: true)
        var made: UnsafeMutablePointer<AVFormatContext>?
        let status = avformat_alloc_output_context2(&made, nil, format, nil)
        guard status >= 0, let made else {
            throw FFmpeg.failure(.ioError, "FFmpeg cannot start the \(format) muxer", status)
        }
        context = made
        context.pointee.pb = file.context
        context.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        context.pointee.io_open = { _, _, _, _, _ in -EPERM }
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
        var size = 0
        if let matrix = av_stream_get_side_data(input, AV_PKT_DATA_DISPLAYMATRIX, &size), size > 0,
           let copy = av_stream_new_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, size) {
            copy.update(from: matrix, count: size)
        }
        return stream
    }

    func writeHeader() throws(Reason) {
        let status = avformat_write_header(context, nil)
        guard status >= 0 else {
            throw FFmpeg.failure(.unsupportedType, "FFmpeg cannot write these streams as MPEG-4", status)
        }
    }

    func finish() throws(Reason) {
        let status = av_write_trailer(context)
        avio_flush(file.context)
        guard status >= 0, file.context.pointee.error >= 0 else {
            throw FFmpeg.failure(.ioError, "FFmpeg cannot finish the file", status < 0 ? status : file.context.pointee.error)
        }
    }
}

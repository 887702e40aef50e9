internal import CVipsShims
internal import CFFmpeg
internal import CVips
#if canImport(Glibc)
import Glibc
#endif

/// The poster frame: its time, its size as displayed, and its pixels for libvips.
extension MediaProber {
    /// A frame's time in seconds from the stream's start.
    static func frameSeconds(_ frame: UnsafeMutablePointer<AVFrame>, stream: UnsafeMutablePointer<AVStream>) -> Double? {
        seconds(frame.pointee.best_effort_timestamp, in: stream)
    }

    /// A packet's presentation time in seconds from the stream's start, as `frameSeconds` counts.
    static func packetSeconds(_ packet: UnsafeMutablePointer<AVPacket>, stream: UnsafeMutablePointer<AVStream>) -> Double? {
        seconds(packet.pointee.pts, in: stream)
    }

    /// `timestamp` (in `stream`'s time base) in seconds from the stream's start; nil when unset.
    private static func seconds(_ timestamp: Int64, in stream: UnsafeMutablePointer<AVStream>) -> Double? {
        guard timestamp != FFmpeg.noTimestamp else { return nil }
        let start = stream.pointee.start_time == FFmpeg.noTimestamp ? 0 : stream.pointee.start_time
        return Double(timestamp - start) * av_q2d(stream.pointee.time_base)
    }

    /// The clockwise rotation a player applies (the display matrix), in quarter turns.
    static func rotation(of stream: UnsafeMutablePointer<AVStream>) -> Int {
        var size = 0
        guard let matrix = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size), size >= 36 else { return 0 }
        let counterClockwise = matrix.withMemoryRebound(to: Int32.self, capacity: 9) { av_display_rotation_get($0) }
        guard counterClockwise.isFinite else { return 0 }
        let quarterTurns = Int((-counterClockwise / 90).rounded())
        return ((quarterTurns % 4) + 4) % 4
    }

    /// A frame's size as displayed before rotation: anamorphic video (a sample aspect ratio
    /// other than 1) is stretched to its display width. The ratio is FFmpeg's choice between
    /// the container's (an MP4 `pasp` box wins) and the bitstream's, as players make it.
    static func displaySize(_ frame: UnsafeMutablePointer<AVFrame>, stream: UnsafeMutablePointer<AVStream>,
                                    input: AVInput) -> (width: Int, height: Int) {
        let width = Int(frame.pointee.width)
        let aspect = av_guess_sample_aspect_ratio(input.context, stream, frame)
        let displayWidth = aspect.num > 0 && aspect.den > 0
            ? max(1, min(width * 4, Int((Double(width) * av_q2d(aspect)).rounded()))) : width
        return (displayWidth, Int(frame.pointee.height))
    }

    /// The YUV matrix a player applies to `frame`, as libswscale numbers it (`SWS_CS_*`, which
    /// are the `AVColorSpace` numbers of the matrices it has): the stated one, or for a stream
    /// that states none BT.709 from 720 rows up and BT.601 below, as players guess.
    static func swscaleMatrix(of frame: UnsafeMutablePointer<AVFrame>) -> Int32 {
        switch frame.pointee.colorspace {
        case AVCOL_SPC_BT709: return SWS_CS_ITU709
        case AVCOL_SPC_FCC: return SWS_CS_FCC
        case AVCOL_SPC_BT470BG, AVCOL_SPC_SMPTE170M: return SWS_CS_ITU601
        case AVCOL_SPC_SMPTE240M: return SWS_CS_SMPTE240M
        case AVCOL_SPC_BT2020_NCL, AVCOL_SPC_BT2020_CL: return SWS_CS_BT2020
        default: return frame.pointee.height >= 720 ? SWS_CS_ITU709 : SWS_CS_ITU601
        }
    }

    /// Bytes of slack libswscale may write past the end of a destination row, and after the
    /// last row: its SIMD converters (the unscaled yuv420p -> rgb24 path among them) store whole
    /// vectors, so a destination of exactly stride x height bytes is overrun by up to a vector.
    /// FFmpeg's own allocators pad for this; so does attach-fetch.
    static let scalerRowSlack = 64

    /// The decoded frame as an 8-bit RGB libvips image of `width` x `height` (libswscale
    /// converts the pixel format and scales, averaging areas when it shrinks).
    static func rgbImage(_ decoded: UnsafeMutablePointer<AVFrame>, width outWidth: Int,
                         height outHeight: Int) throws(Reason) -> VipsImageRef {
        // A PQ or HLG frame is tone-mapped first, at the size asked for: a picture is shown as
        // standard dynamic range by Android, by a web page, and in iOS's notification.
        var frame = decoded
        var toneMapped: AVFrameBox?
        if ToneMapper.isHDR(decoded.pointee.color_trc), outWidth > 0, outHeight > 0 {
            let mapper = try ToneMapper(width: decoded.pointee.width, height: decoded.pointee.height, format: decoded.pointee.format,
                                        outputWidth: Int32(outWidth), outputHeight: Int32(outHeight))
            let made = try AVFrameBox()
            try mapper.map(decoded, into: made.pointer)
            (frame, toneMapped) = (made.pointer, made)
        }
        defer { withExtendedLifetime(toneMapped) {} }
        let width = Int(frame.pointee.width)
        let height = Int(frame.pointee.height)
        let format = frame.pointee.format
        guard width > 0, height > 0, outWidth > 0, outHeight > 0, format >= 0, frame.pointee.data.0 != nil else {
            throw Reason(code: .corruptMedia, message: "the decoder returned a frame without pixels")
        }
        guard let scaler = sws_getContext(Int32(width), Int32(height), AVPixelFormat(format),
                                          Int32(outWidth), Int32(outHeight), AV_PIX_FMT_RGB24, SWS_AREA, nil, nil, nil) else {
            throw Reason(code: .corruptMedia, message: "libswscale cannot convert the frame's pixel format")
        }
        defer { sws_freeContext(scaler) }
        // The stream's matrix and range, not libswscale's default (BT.601, limited range): an
        // HD clip's colours are BT.709's. An RGB source refuses the call, and needs none.
        _ = sws_setColorspaceDetails(scaler, sws_getCoefficients(swscaleMatrix(of: frame)), frame.pointee.color_range == AVCOL_RANGE_JPEG ? 1 : 0,
                                     sws_getCoefficients(SWS_CS_DEFAULT), 1, 0, 1 << 16, 1 << 16)
        // Each row padded and 64-byte aligned, one spare row after the last, from FFmpeg's own
        // aligned allocator: room for every store the converters make.
        let rowBytes = outWidth * 3
        let stride = (rowBytes + scalerRowSlack + 63) / 64 * 64
        let total = stride * (outHeight + 1)
        guard let raw = av_mallocz(total) else {
            throw Reason(code: .ioError, message: "out of memory for a \(outWidth)x\(outHeight) frame")
        }
        defer { av_free(raw) }
        let destinationBase = raw.assumingMemoryBound(to: UInt8.self)
        var destination: [UnsafeMutablePointer<UInt8>?] = [destinationBase, nil, nil, nil]
        var destinationStride: [Int32] = [Int32(stride), 0, 0, 0]
        let scaled = withUnsafePointer(to: &frame.pointee.data) { data in
            withUnsafePointer(to: &frame.pointee.linesize) { linesize in
                data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { planes in
                    linesize.withMemoryRebound(to: Int32.self, capacity: 8) { strides in
                        sws_scale(scaler, planes, strides, 0, Int32(height), &destination, &destinationStride)
                    }
                }
            }
        }
        guard scaled == Int32(outHeight) else {
            throw Reason(code: .corruptMedia, message: scaled < 0
                ? "libswscale cannot convert the frame: \(FFmpeg.errorText(scaled))"
                : "libswscale made \(scaled) of \(outHeight) rows")
        }
        // libvips takes rows without padding: pack them.
        var pixels = [UInt8](repeating: 0, count: rowBytes * outHeight)
        pixels.withUnsafeMutableBytes { packed in
            for row in 0..<outHeight {
                (packed.baseAddress! + row * rowBytes).copyMemory(from: destinationBase + row * stride, byteCount: rowBytes)
            }
        }
        let image = pixels.withUnsafeBytes { packed in
            Result { () throws(Reason) in try Vips.rgbImage(packed, width: outWidth, height: outHeight) }
        }
        return try image.get()
    }

    static func rotate(_ image: VipsImageRef, degrees quarterTurns: Int) throws(Reason) -> VipsImageRef {
        guard quarterTurns != 0 else { return image }
        let angle: VipsAngle = quarterTurns == 1 ? VIPS_ANGLE_D90 : quarterTurns == 2 ? VIPS_ANGLE_D180 : VIPS_ANGLE_D270
        var out: UnsafeMutablePointer<VipsImage>?
        guard af_vips_rot(image.pointer, &out, angle) == 0, let out else {
            throw Vips.failure("rotate the frame")
        }
        return VipsImageRef(out)
    }
}

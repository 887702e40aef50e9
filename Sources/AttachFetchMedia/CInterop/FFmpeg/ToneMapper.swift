internal import CFFmpeg

/// High-dynamic-range video (PQ or HLG) made standard: libavfilter's `zscale` (libzimg) takes
/// each frame to linear light at 100 nits, to BT.709 primaries, `tonemap` (Hable, no
/// desaturation) compresses the highlights, and `zscale` writes BT.709's transfer and matrix in
/// limited range, 8-bit 4:2:0, at the size asked for (resized in linear light). This is the
/// ffmpeg program's usual recipe (`zscale=t=linear:npl=100,format=gbrpf32le,zscale=p=bt709,
/// tonemap=tonemap=hable:desat=0,zscale=t=bt709:m=bt709:r=tv,format=yuv420p`), so a test can
/// render the same frame with it. Shown without it, a PQ frame's numbers read as BT.709 are
/// washed out and an HLG frame's dim and grey.
///
/// libavfilter is loaded at the first use (`LibAVFilter`). Owns its filter graph, made for one frame size and pixel format; not thread-safe, not
/// Sendable.
final class ToneMapper {
    private let filters: LibAVFilter
    private let graph: UnsafeMutablePointer<AVFilterGraph>
    private let source: UnsafeMutablePointer<AVFilterContext>
    private let sink: UnsafeMutablePointer<AVFilterContext>
    /// What the graph was made for.
    let input: (width: Int32, height: Int32, format: Int32)
    let output: (width: Int32, height: Int32)

    /// Whether a frame is high dynamic range: its transfer is PQ (SMPTE ST 2084, HDR10 and
    /// Dolby Vision's base) or HLG (ARIB STD-B67, what iPhones record).
    static func isHDR(_ transfer: AVColorTransferCharacteristic) -> Bool {
        transfer == AVCOL_TRC_SMPTE2084 || transfer == AVCOL_TRC_ARIB_STD_B67
    }

    init(width: Int32, height: Int32, format: Int32, outputWidth: Int32, outputHeight: Int32) throws(Reason) {
        let filters = try LibAVFilter.shared.get()
        self.filters = filters
        guard let graph = filters.graphAlloc() else { throw Reason(code: .ioError, message: "libavfilter cannot allocate a graph: out of memory") }
        do throws(Reason) {
            (source, sink) = try Self.build(graph, filters: filters, width: width, height: height, format: format, outputWidth: outputWidth, outputHeight: outputHeight)
        } catch {
            var failed: UnsafeMutablePointer<AVFilterGraph>? = graph
            filters.graphFree(&failed)
            throw error
        }
        self.graph = graph
        input = (width, height, format)
        output = (outputWidth, outputHeight)
    }

    private static func build(_ graph: UnsafeMutablePointer<AVFilterGraph>, filters: LibAVFilter, width: Int32, height: Int32, format: Int32,
                              outputWidth: Int32, outputHeight: Int32) throws(Reason) -> (UnsafeMutablePointer<AVFilterContext>, UnsafeMutablePointer<AVFilterContext>) {
        // One thread: a decode job's threads are the decoder's and the encoder's.
        graph.pointee.nb_threads = 1
        var source: UnsafeMutablePointer<AVFilterContext>?, sink: UnsafeMutablePointer<AVFilterContext>?
        let arguments = "video_size=\(width)x\(height):pix_fmt=\(format):time_base=1/1:pixel_aspect=1/1"
        var status = filters.graphCreateFilter(&source, filters.getByName("buffer"), "in", arguments, nil, graph)
        guard status >= 0, let source else { throw FFmpeg.failure(.corruptMedia, "libavfilter cannot take the frame", status) }
        status = filters.graphCreateFilter(&sink, filters.getByName("buffersink"), "out", nil, nil, graph)
        guard status >= 0, let sink else { throw FFmpeg.failure(.ioError, "libavfilter cannot make its output", status) }
        let chain = "zscale=w=\(outputWidth):h=\(outputHeight):t=linear:npl=100,format=gbrpf32le,zscale=p=bt709,"
            + "tonemap=tonemap=hable:desat=0,zscale=t=bt709:m=bt709:r=tv,format=yuv420p"
        // The chain's open ends: its input is fed by `in`, its output feeds `out`. The parse
        // links them and leaves what it did not use, freed here either way.
        var outputs = filters.inoutAlloc(), inputs = filters.inoutAlloc()
        defer {
            filters.inoutFree(&outputs)
            filters.inoutFree(&inputs)
        }
        guard let open = outputs, let close = inputs else { throw Reason(code: .ioError, message: "libavfilter cannot allocate its pads: out of memory") }
        open.pointee.name = av_strdup("in")
        open.pointee.filter_ctx = source
        close.pointee.name = av_strdup("out")
        close.pointee.filter_ctx = sink
        status = filters.graphParse(graph, chain, &inputs, &outputs, nil)
        guard status >= 0 else { throw FFmpeg.failure(.ioError, "libavfilter cannot build the tone mapping (zscale, tonemap)", status) }
        status = filters.graphConfig(graph, nil)
        guard status >= 0 else { throw FFmpeg.failure(.corruptMedia, "libavfilter cannot tone-map this frame's format", status) }
        return (source, sink)
    }

    deinit {
        var graph: UnsafeMutablePointer<AVFilterGraph>? = graph
        filters.graphFree(&graph)
    }

    /// `frame` tone-mapped into `into` (its buffers replaced), tagged BT.709.
    func map(_ frame: UnsafeMutablePointer<AVFrame>, into made: UnsafeMutablePointer<AVFrame>) throws(Reason) {
        // A stream that states PQ or HLG but not its matrix or primaries is BT.2020's.
        let saved = (frame.pointee.colorspace, frame.pointee.color_primaries)
        if frame.pointee.colorspace == AVCOL_SPC_UNSPECIFIED { frame.pointee.colorspace = AVCOL_SPC_BT2020_NCL }
        if frame.pointee.color_primaries == AVCOL_PRI_UNSPECIFIED { frame.pointee.color_primaries = AVCOL_PRI_BT2020 }
        defer { (frame.pointee.colorspace, frame.pointee.color_primaries) = saved }
        let pts = frame.pointee.pts
        let added = filters.sourceWriteFrame(source, frame)
        guard added >= 0 else { throw FFmpeg.failure(.corruptMedia, "libavfilter refused the frame", added) }
        av_frame_unref(made)
        let got = filters.sinkGetFrame(sink, made)
        guard got >= 0 else { throw FFmpeg.failure(.corruptMedia, "libavfilter made no tone-mapped frame", got) }
        made.pointee.pts = pts
        made.pointee.color_trc = AVCOL_TRC_BT709
        made.pointee.color_primaries = AVCOL_PRI_BT709
        made.pointee.colorspace = AVCOL_SPC_BT709
        made.pointee.color_range = AVCOL_RANGE_MPEG
    }
}

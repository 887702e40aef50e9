internal import CFFmpeg
internal import CVipsShims
internal import CVips

/// A still that states its colour as PQ or HLG (an AVIF or HEIF `nclx`, a PNG `cICP`): high
/// dynamic range, which no ICC profile stands for. Read as it is, its numbers are washed out
/// (PQ) or dim and grey (HLG). Its pixels are tone-mapped as an HDR video's poster is
/// (`ToneMapper`, the ffmpeg program's `zscale` and `tonemap` recipe) to 8-bit BT.709, which
/// is shown as sRGB; every picture made from it (a converted attachment, the thumbnail, the
/// Android variant) is made from that.
enum ToneMappedStill {
    /// H.273's transfers for PQ (SMPTE ST 2084) and HLG (ARIB STD-B67).
    static func isHighDynamicRange(_ statement: (primaries: Int, transfer: Int)) -> Bool {
        statement.transfer == 16 || statement.transfer == 18
    }

    /// The largest output made in one pass of the filters. Their float planes cost 12 bytes a
    /// pixel, several at once: a 12 MP still in one pass would hold about 400 MB, near an
    /// image worker's 512 MiB. A larger output is tone-mapped at the source's size in strips of
    /// rows (each pixel's mapping is its own) and scaled by libvips after.
    static let maxPixelsPerPass = 4 << 20

    /// `source` decoded, turned as its EXIF orientation says (a PNG's `eXIf`; libheif turns a
    /// HEIF itself), its alpha dropped, tone-mapped and scaled to `width` x `height`.
    static func image(_ source: String, statement: (primaries: Int, transfer: Int), width: Int, height: Int,
                      failOn: VipsFailOn = VIPS_FAIL_ON_ERROR, maxPixelsPerPass: Int = maxPixelsPerPass) throws(Reason) -> VipsImageRef {
        let pixels = try SourcePixels(source, failOn: failOn)
        if width * height <= maxPixelsPerPass {
            return try pixels.toneMapped(rows: 0..<pixels.height, statement: statement, width: width, height: height)
        }
        var joined: VipsImageRef?
        // Each strip is mapped with `margin` rows of its neighbours, then cut to its own: the
        // 4:2:0 step's chroma filters reach across rows.
        let margin = 16
        let stripRows = max(2, maxPixelsPerPass / pixels.width / 2 * 2)
        for top in stride(from: 0, to: pixels.height, by: stripRows) {
            let rows = top..<min(pixels.height, top + stripRows)
            let mapped = max(0, top - margin)..<min(pixels.height, rows.upperBound + margin)
            let wide = try pixels.toneMapped(rows: mapped, statement: statement, width: pixels.width, height: mapped.count)
            var own: UnsafeMutablePointer<VipsImage>?
            guard af_vips_extract_area(wide.pointer, &own, 0, Int32(top - mapped.lowerBound), Int32(pixels.width), Int32(rows.count)) == 0,
                  let own else { throw Vips.failure("cut the tone-mapped rows") }
            let strip = VipsImageRef(own)
            guard let above = joined else {
                joined = strip
                continue
            }
            var out: UnsafeMutablePointer<VipsImage>?
            guard af_vips_join_below(above.pointer, strip.pointer, &out) == 0, let out else { throw Vips.failure("join the tone-mapped rows") }
            joined = VipsImageRef(out)
        }
        guard let whole = joined, let rendered = vips_image_copy_memory(whole.pointer) else { throw Vips.failure("tone-map the image") }
        guard (width, height) != (pixels.width, pixels.height) else { return VipsImageRef(rendered) }
        var out: UnsafeMutablePointer<VipsImage>?
        guard af_vips_thumbnail_image(rendered, &out, Int32(width), Int32(height), VIPS_SIZE_DOWN) == 0, let out else {
            g_object_unref(UnsafeMutableRawPointer(rendered))
            throw Vips.failure("scale the tone-mapped image")
        }
        g_object_unref(UnsafeMutableRawPointer(rendered))
        return VipsImageRef(out)
    }

    /// The decoded source's samples as libvips wrote them to memory (8 or 16 bits, one to four
    /// bands), read in place for each strip rather than copied: red, green and blue, grey
    /// repeated, alpha left out.
    private final class SourcePixels {
        private let memory: UnsafeMutableRawPointer
        private let bands: Int, wide: Bool
        let width: Int, height: Int

        init(_ source: String, failOn: VipsFailOn) throws(Reason) {
            guard let opened = af_vips_image_new_from_file(source, failOn) else { throw Vips.failure("read the image") }
            var image = VipsImageRef(opened)
            var out: UnsafeMutablePointer<VipsImage>?
            guard af_vips_autorot(image.pointer, &out) == 0, let turned = out else { throw Vips.failure("turn the image") }
            image = VipsImageRef(turned)
            let format = image.pointer.pointee.BandFmt
            bands = Int(image.pointer.pointee.Bands)
            guard format == VIPS_FORMAT_UCHAR || format == VIPS_FORMAT_USHORT, bands >= 1 else {
                throw Reason(code: .corruptMedia, message: "the image states high dynamic range but its samples are neither 8 nor 16 bits")
            }
            (width, height, wide) = (image.width, image.height, format == VIPS_FORMAT_USHORT)
            var size = 0
            guard let memory = vips_image_write_to_memory(image.pointer, &size) else { throw Vips.failure("decode the image") }
            self.memory = memory
        }

        deinit { g_free(memory) }

        /// Band `band` (0 red, 1 green, 2 blue) of pixel `x`, `y`; 8-bit samples widened so that
        /// 255 is 65535.
        private func sample(x: Int, y: Int, band: Int) -> UInt16 {
            let at = (y * width + x) * bands + (bands >= 3 ? band : 0)
            return wide ? memory.load(fromByteOffset: at * 2, as: UInt16.self) : UInt16(memory.load(fromByteOffset: at, as: UInt8.self)) * 257
        }

        /// `rows` as a 16-bit planar RGB frame tagged with the statement, tone-mapped to an
        /// 8-bit image of `width` x `height`.
        func toneMapped(rows: Range<Int>, statement: (primaries: Int, transfer: Int),
                        width outWidth: Int, height outHeight: Int) throws(Reason) -> VipsImageRef {
            let frame = try AVFrameBox()
            let f = frame.pointer
            (f.pointee.width, f.pointee.height, f.pointee.format) = (Int32(width), Int32(rows.count), AV_PIX_FMT_GBRP16LE.rawValue)
            let allocated = av_frame_get_buffer(f, 0)
            guard allocated >= 0 else { throw FFmpeg.failure(.ioError, "FFmpeg cannot allocate a frame", allocated) }
            // H.273's code points are FFmpeg's enumerations' values.
            f.pointee.color_trc = AVColorTransferCharacteristic(UInt32(statement.transfer))
            f.pointee.color_primaries = AVColorPrimaries(UInt32(statement.primaries))
            f.pointee.colorspace = AVCOL_SPC_RGB
            f.pointee.color_range = AVCOL_RANGE_JPEG
            // GBRP's planes are green, blue, red.
            let planes = [(f.pointee.data.0, f.pointee.linesize.0, 1), (f.pointee.data.1, f.pointee.linesize.1, 2),
                          (f.pointee.data.2, f.pointee.linesize.2, 0)]
            for (data, linesize, band) in planes {
                guard let data else { continue }
                for (row, y) in rows.enumerated() {
                    let line = UnsafeMutableRawPointer(data + row * Int(linesize)).assumingMemoryBound(to: UInt16.self)
                    for x in 0..<width { line[x] = sample(x: x, y: y, band: band).littleEndian }
                }
            }
            return try MediaProber.rgbImage(f, width: outWidth, height: outHeight)
        }
    }
}

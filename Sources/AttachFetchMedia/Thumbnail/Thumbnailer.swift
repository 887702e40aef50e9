internal import CVipsShims
internal import CVips
#if canImport(Glibc)
import Glibc
#endif

/// What an image made from a decoded one keeps of the source's colour (docs/media.md,
/// "Colour"). iOS manages colour, so its attachment keeps wide colour; Android's notification
/// and the web show a file's numbers as sRGB, so thumbnails and variants are converted.
enum ColourRule {
    /// The source's values, its ICC profile embedded: a Display P3 photo stays P3.
    case sourceProfile
    /// Converted to sRGB through the source's ICC profile (relative colorimetric), written
    /// without a profile; a source without one is taken as sRGB already and costs nothing more.
    case sRGB

    /// Whether a source is converted on its way to the output, given whether it carries a
    /// usable ICC profile (`VipsImageRef.hasColourProfile`).
    func converts(profiled: Bool) -> Bool { self == .sRGB && profiled }
}

/// An encoded image in memory.
struct EncodedImage {
    package var data: [UInt8]
    package var type: MediaType
    package var width: Int
    package var height: Int
}

/// Makes clipped thumbnails with libvips. Stateless; safe to call from many threads
/// (libvips is thread-safe once started). Blocking: call it from a worker thread.
package enum Thumbnailer {
    /// Decodes `source` in full (so truncated or corrupt files fail), and writes a thumbnail of
    /// the clipping rectangle, longest edge `maxEdge`, to `destinationBase` + ".jpg" (or ".png"
    /// when the image has alpha).
    package static func make(source: String, destinationBase: String, shape: ThumbnailShape,
                     limits: ThumbnailLimits) -> Result<ThumbnailOutcome, Reason> {
        do throws(Reason) {
            return .success(try makeThrowing(source: source, destinationBase: destinationBase, shape: shape, limits: limits))
        } catch {
            return .failure(error)
        }
    }

    /// The square a thumbnail of the whole image should show (`ThumbnailLimits.suggestClip`), chosen on
    /// the thumbnail's pixels, already in memory; nil when not asked, for a clipped thumbnail,
    /// or when it cannot be chosen (the thumbnail stands).
    static func suggestedSquare(width: Int, height: Int, shape: ThumbnailShape, limits: ThumbnailLimits, cues: () -> AttentionCues?,
                                image: () -> VipsImageRef?) -> ClippingRectangle? {
        guard let crop = limits.suggestClip, crop.crops, case .clip(let clip) = shape, clip == .whole else { return nil }
        return try? PictureCropper.square(width: width, height: height, crop: crop, cues: cues, image: image)
    }

    /// The same, for a frame already in memory (a video's poster frame).
    static func make(image: VipsImageRef, destinationBase: String, shape: ThumbnailShape,
                     limits: ThumbnailLimits) -> Result<ThumbnailOutcome, Reason> {
        do throws(Reason) {
            let box = try boxSize(width: image.width, height: image.height, shape: shape, maxEdge: limits.maxEdge)
            var out: UnsafeMutablePointer<VipsImage>?
            guard af_vips_thumbnail_image(image.pointer, &out, Int32(box.width), Int32(box.height), VIPS_SIZE_DOWN) == 0,
                  let out else {
                throw Vips.failure("scale the frame")
            }
            return .success(try finish(VipsImageRef(out), clip: box.clip, sourceWidth: image.width, sourceHeight: image.height,
                                       destinationBase: destinationBase, shape: shape, limits: limits))
        } catch {
            return .failure(error)
        }
    }

    private static func makeThrowing(source: String, destinationBase: String, shape: ThumbnailShape,
                                     limits: ThumbnailLimits) throws(Reason) -> ThumbnailOutcome {
        var layout: JPEGLayout?
        if let fast = JPEGThumbnailer.make(source: source, destinationBase: destinationBase, shape: shape, limits: limits, layout: &layout) {
            return try fast.get()
        }
        return try makeWithLibvips(source: source, destinationBase: destinationBase, shape: shape, limits: limits, jpegLayout: layout)
    }

    /// The general path: any image libvips' enabled loaders read.
    /// - Parameter jpegLayout: the JPEG's layout where the fast path read it already.
    static func makeWithLibvips(source: String, destinationBase: String, shape: ThumbnailShape,
                                limits: ThumbnailLimits, jpegLayout: JPEGLayout? = nil) throws(Reason) -> ThumbnailOutcome {
        let header = try openHeader(source, limits: limits)
        let box = try boxSize(width: header.width, height: header.height, shape: shape, maxEdge: limits.maxEdge)
        let colour = SourceColour(header.image, source: source)
        // An HDR still's numbers are not sRGB's either: an Android variant is made for it too.
        let profiled = colour.profiled || colour.toneMapped != nil
        var thumbnail = try Vips.decodingUnderPolicy(isJPEG: header.image.isJPEG) { failOn throws(Reason) in
            try finish(try colour.scaled(source, width: box.width, height: box.height, failOn: failOn, toSRGB: colour.profiled), clip: box.clip,
                       sourceWidth: header.width, sourceHeight: header.height, destinationBase: destinationBase,
                       shape: shape, limits: limits)
        }
        if header.image.orientation != 1 { thumbnail.orientation = header.image.orientation }
        if header.image.isJPEG, (jpegLayout ?? JPEGLayout.of(file: source))?.orientationsDisagree == true {
            thumbnail.orientationsDisagree = true
        }
        if profiled { thumbnail.hasColourProfile = true }
        if (header.image.integer("n-pages") ?? 1) > 1 {
            do throws(Reason) { try decodeEveryFrame(source) } catch {
                unlink(thumbnail.file)
                throw error
            }
        }
        return thumbnail
    }

    /// The thumbnail shows frame 0; the other frames of an animation are decoded too (a sink
    /// that keeps one strip at a time), so a damaged frame anywhere is caught. The frame and
    /// pixel budgets were checked on the header.
    ///
    /// The frames are read sequentially: opened for random access, libvips decodes an image
    /// over its disc threshold (100 MB of pixels: 400 frames of 472x298 RGBA are 225 MB) into a
    /// temporary file first, which the decoder worker's file-size limit stops (SIGXFSZ).
    /// Read in order, nothing is written and one strip of frames is held at a time.
    private static func decodeEveryFrame(_ source: String) throws(Reason) {
        guard let pointer = af_vips_image_new_from_file_all_pages(source, VIPS_FAIL_ON_ERROR) else {
            throw Vips.failure("read the animation")
        }
        // Every band is decoded either way; scanning one is a quarter of the work of scanning four.
        _ = try Vips.minimum(ofBand: 0, in: VipsImageRef(pointer), doing: "decode a frame of the animation")
    }

    /// An image's header (no pixels decoded yet), its size as displayed (EXIF orientation
    /// applied), after every budget the header alone can check.
    static func openHeader(_ source: String, limits: ThumbnailLimits) throws(Reason) -> (image: VipsImageRef, width: Int, height: Int) {
        do throws(AttachFetchError) { try Vips.ensureStarted() } catch {
            throw Reason(code: .ioError, message: error.message)
        }
        try PNGChunkCheck.check(source)
        if let declared = HEIFImageSize.largest(source) ?? GIFScreen.size(source) {
            try checkBudgets(width: declared.width, height: declared.height, interlaced: false, frames: 1, limits: limits)
        }
        guard let headerPointer = af_vips_image_new_from_file(source, VIPS_FAIL_ON_ERROR) else {
            throw Vips.failure("read the image")
        }
        let header = VipsImageRef(headerPointer)
        let rotated = (5...8).contains(header.orientation)
        let width = rotated ? header.height : header.width
        let height = rotated ? header.width : header.height
        guard width > 0, height > 0 else {
            throw Reason(code: .corruptMedia, message: "the image has no pixels")
        }
        try checkBudgets(width: width, height: height, interlaced: header.integer("interlaced") == 1,
                         frames: header.integer("n-pages") ?? 1, limits: limits)
        return (header, width, height)
    }

    /// The box the whole image is scaled into so that the clipped region's longest edge becomes
    /// `maxEdge` (never enlarged), and the clip in the unit square.
    static func boxSize(width: Int, height: Int, shape: ThumbnailShape,
                                maxEdge: Int) throws(Reason) -> (width: Int, height: Int, clip: ClippingRectangle) {
        guard width > 0, height > 0 else { throw Reason(code: .corruptMedia, message: "the image has no pixels") }
        let clip: ClippingRectangle
        switch shape {
        case .clip(let rectangle):
            clip = rectangle
        case .squareCenter:
            let side = Double(min(width, height))
            clip = (try? ClippingRectangle(x: (Double(width) - side) / 2 / Double(width),
                                           y: (Double(height) - side) / 2 / Double(height),
                                           width: side / Double(width), height: side / Double(height))) ?? .whole
        }
        let clipWidth = clip.width * Double(width)
        let clipHeight = clip.height * Double(height)
        let scale = min(1, Double(maxEdge) / max(clipWidth, clipHeight))
        return (max(1, Int((Double(width) * scale).rounded(.up))), max(1, Int((Double(height) * scale).rounded(.up))), clip)
    }

    /// Cuts the clip out of the scaled image, renders it, and writes the thumbnail file.
    private static func finish(_ scaled: VipsImageRef, clip: ClippingRectangle, sourceWidth: Int, sourceHeight: Int,
                               destinationBase: String, shape: ThumbnailShape, limits: ThumbnailLimits) throws(Reason) -> ThumbnailOutcome {
        var image = scaled
        if clip != .whole {
            let area = clipRegion(clip, width: image.width, height: image.height)
            var region: UnsafeMutablePointer<VipsImage>?
            guard af_vips_extract_area(image.pointer, &region, Int32(area.left), Int32(area.top),
                                       Int32(area.width), Int32(area.height)) == 0, let region else {
                throw Vips.failure("clip the image")
            }
            image = VipsImageRef(region)
        }
        // Render once into memory (a thumbnail is small): this decodes the whole source, so a
        // truncated or corrupt file fails here, and the checks below do not decode it again.
        guard let rendered = vips_image_copy_memory(image.pointer) else {
            throw Vips.failure("decode the image")
        }
        image = VipsImageRef(rendered)
        let square = suggestedSquare(width: image.width, height: image.height, shape: shape, limits: limits,
                                     cues: { AttentionCues(image) }, image: { image })
        let encoded = try encode(image)
        let file = destinationBase + "." + encoded.type.fileExtension
        if let problem = encoded.data.withUnsafeBytes({ SafeFile.create(file, contents: $0) }) {
            throw Reason(code: .ioError, message: problem)
        }
        var outcome = ThumbnailOutcome(sourceWidth: sourceWidth, sourceHeight: sourceHeight, file: file,
                                       width: encoded.width, height: encoded.height, bytes: Int64(encoded.data.count))
        outcome.suggestedClip = square
        return outcome
    }

    /// Encodes a rendered image as JPEG, or as PNG when some pixel is transparent. With
    /// `.sourceProfile` the image's ICC profile is embedded (its pixels are the source's values);
    /// with `.sRGB` (the pixels converted already, or the source sRGB) nothing is.
    static func encode(_ rendered: VipsImageRef, jpegQuality: Int = 80, colour: ColourRule = .sRGB) throws(Reason) -> EncodedImage {
        var image = rendered
        if image.hasAlpha, let opaque = try dropOpaqueAlpha(image) { image = opaque }
        let keepsProfile = colour == .sourceProfile && image.hasColourProfile
        if keepsProfile { image = try Vips.keepingOnlyProfile(image) }
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        let encoded = switch (image.hasAlpha, keepsProfile) {
        case (true, false): af_vips_pngsave_buffer(image.pointer, &buffer, &length)
        case (false, false): af_vips_jpegsave_buffer(image.pointer, &buffer, &length, Int32(jpegQuality))
        case (true, true): af_vips_pngsave_buffer_unstripped(image.pointer, &buffer, &length)
        case (false, true): af_vips_jpegsave_buffer_unstripped(image.pointer, &buffer, &length, Int32(jpegQuality))
        }
        defer { g_free(buffer) }
        guard encoded == 0, let buffer else {
            throw Vips.failure("encode the image")
        }
        return EncodedImage(data: [UInt8](UnsafeRawBufferPointer(start: buffer, count: length)),
                            type: image.hasAlpha ? .png : .jpeg, width: image.width, height: image.height)
    }

    /// An alpha channel that is opaque everywhere (common in GIFs and PNGs) is dropped, so the
    /// thumbnail can be a JPEG; returns nil when some pixel is transparent.
    private static func dropOpaqueAlpha(_ image: VipsImageRef) throws(Reason) -> VipsImageRef? {
        let bands = Int32(vips_image_get_bands(image.pointer))
        let minimum = try Vips.minimum(ofBand: bands - 1, in: image, doing: nil)
        let interpretation = vips_image_get_interpretation(image.pointer)
        let opaqueValue: Double = interpretation == VIPS_INTERPRETATION_RGB16 || interpretation == VIPS_INTERPRETATION_GREY16 ? 65535 : 255
        guard minimum >= opaqueValue else { return nil }
        var colour: UnsafeMutablePointer<VipsImage>?
        guard af_vips_extract_bands(image.pointer, &colour, 0, bands - 1) == 0, let colour else {
            throw Vips.failure(nil)
        }
        return VipsImageRef(colour)
    }

    /// The clip, in the unit square, as whole pixels of a `width` x `height` image (at least one).
    static func clipRegion(_ clip: ClippingRectangle, width: Int, height: Int) -> (left: Int, top: Int, width: Int, height: Int) {
        let left = min(width - 1, Int((clip.x * Double(width)).rounded()))
        let top = min(height - 1, Int((clip.y * Double(height)).rounded()))
        return (left, top, max(1, min(width - left, Int((clip.width * Double(width)).rounded()))),
                max(1, min(height - top, Int((clip.height * Double(height)).rounded()))))
    }

    /// Every size check that the header alone can answer, before any pixel is decoded.
    static func checkBudgets(width: Int, height: Int, interlaced: Bool, frames: Int,
                             limits: ThumbnailLimits) throws(Reason) {
        // Sides come from headers an attacker wrote: products saturate rather than overflow.
        let pixels = HEIFImageSize.area(width, height)
        guard pixels <= limits.maxPixels else {
            throw Reason(code: .pixelLimitExceeded,
                               message: "\(width)x\(height) is \(pixels) pixels, over the limit of \(limits.maxPixels)")
        }
        if interlaced, pixels > limits.maxProgressivePixels {
            throw Reason(code: .pixelLimitExceeded,
                               message: "\(width)x\(height) progressive/interlaced image is \(pixels) pixels, over the limit of \(limits.maxProgressivePixels) for images that cannot be shrunk while loading")
        }
        if frames > 1 {
            guard frames <= limits.maxAnimationFrames else {
                // libvips' GIF loader stops counting one frame past 4096 ("Excessive number of frames").
                let count = frames > 4_096 ? "more than 4096" : "\(frames)"
                throw Reason(code: .pixelLimitExceeded,
                                   message: "the animation has \(count) frames, over the limit of \(limits.maxAnimationFrames)")
            }
            let total = HEIFImageSize.area(frames, pixels)
            guard total <= limits.maxAnimationPixels else {
                throw Reason(code: .pixelLimitExceeded,
                                   message: "the animation's \(frames) frames hold \(total) pixels, over the limit of \(limits.maxAnimationPixels)")
            }
        }
    }
}

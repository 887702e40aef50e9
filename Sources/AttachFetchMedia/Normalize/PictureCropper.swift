internal import CVipsShims
internal import CVips

/// Where a picture is cut when a platform shows only part of it: a 2:1 crop for Android's and
/// web push's big picture, and the square iOS shows as the attachment's thumbnail. libvips'
/// `smartcrop` chooses by attention (edges, skin tones, saturation) or entropy; a focal point,
/// when given, is the crop's centre instead, moved only as far as keeps it inside the image.
enum PictureCropper {
    /// The 2:1 crop's size for a `width` x `height` image: at most `maxWidth` wide, never wider
    /// than the image nor taller, even sides.
    static func twoToOneSize(width: Int, height: Int, maxWidth: Int) -> (width: Int, height: Int) {
        let widest = max(2, min(maxWidth, width, 2 * height))
        let even = widest - widest % 2
        return (even, even / 2)
    }

    static func interesting(_ mode: CropMode) -> VipsInteresting {
        switch mode {
        case .attention: return VIPS_INTERESTING_ATTENTION
        case .entropy: return VIPS_INTERESTING_ENTROPY
        case .centre, .none: return VIPS_INTERESTING_CENTRE
        }
    }

    /// The left or top edge of a `part`-long cut centred on `centre` (in the unit interval) of
    /// a `whole`-long side, kept inside it.
    static func edge(centredOn centre: Double, part: Int, whole: Int) -> Int {
        min(max(0, Int((centre * Double(whole) - Double(part) / 2).rounded())), max(0, whole - part))
    }

    /// `source` (an image of `width` x `height` as displayed) cut to 2:1 and scaled to at most
    /// `maxWidth` wide: shrunk on load, then cut where `crop` says; `toSRGB`: converted through
    /// its ICC profile (only a variant is ever cut, and variants are sRGB); `toneMapped`: a PQ or
    /// HLG still's statement, made standard first (`ToneMappedStill`).
    static func twoToOne(_ source: String, width: Int, height: Int, crop: PictureCrop, toSRGB: Bool, statedProfile: Vips.StatedProfile? = nil,
                         toneMapped: (primaries: Int, transfer: Int)? = nil, maxWidth: Int, failOn: VipsFailOn) throws(Reason) -> VipsImageRef {
        let size = twoToOneSize(width: width, height: height, maxWidth: maxWidth)
        // Scaled so that the 2:1 box is covered, then cut around the focal point.
        let scale = max(Double(size.width) / Double(width), Double(size.height) / Double(height))
        let cover = (width: max(size.width, Int((Double(width) * scale).rounded(.up))),
                     height: max(size.height, Int((Double(height) * scale).rounded(.up))))
        if let toneMapped {
            let scaled = try ToneMappedStill.image(source, statement: toneMapped, width: cover.width, height: cover.height, failOn: failOn)
            let (cutWidth, cutHeight) = (min(size.width, scaled.width), min(size.height, scaled.height))
            if let focus = crop.focus { return try cut(scaled, around: focus, width: cutWidth, height: cutHeight) }
            var out: UnsafeMutablePointer<VipsImage>?
            guard af_vips_smartcrop(scaled.pointer, &out, Int32(cutWidth), Int32(cutHeight), interesting(crop.mode)) == 0, let out else {
                throw Vips.failure("crop the image")
            }
            return VipsImageRef(out)
        }
        guard let focus = crop.focus else {
            var out: UnsafeMutablePointer<VipsImage>?
            let status = toSRGB && statedProfile == nil
                ? af_vips_thumbnail_crop_srgb(source, &out, Int32(size.width), Int32(size.height), interesting(crop.mode), failOn)
                : af_vips_thumbnail_crop(source, &out, Int32(size.width), Int32(size.height), interesting(crop.mode), failOn)
            guard status == 0,
                  let out else {
                throw Vips.failure("crop the image")
            }
            if let statedProfile { return try Vips.withStatedProfile(VipsImageRef(out), statedProfile, toSRGB: toSRGB) }
            return VipsImageRef(out)
        }
        let scaled = try Vips.thumbnail(source, width: cover.width, height: cover.height, failOn: failOn,
                                        toSRGB: toSRGB, statedProfile: statedProfile)
        return try cut(scaled, around: focus, width: min(size.width, scaled.width), height: min(size.height, scaled.height))
    }

    /// The `width` x `height` part of `image` centred on `focus`, kept inside it.
    static func cut(_ image: VipsImageRef, around focus: FocusPoint, width: Int, height: Int) throws(Reason) -> VipsImageRef {
        var out: UnsafeMutablePointer<VipsImage>?
        guard af_vips_extract_area(image.pointer, &out, Int32(edge(centredOn: focus.x, part: width, whole: image.width)),
                                   Int32(edge(centredOn: focus.y, part: height, whole: image.height)),
                                   Int32(width), Int32(height)) == 0, let out else {
            throw Vips.failure("crop the image")
        }
        return VipsImageRef(out)
    }

    /// The largest square of a picture that `crop` chooses, in the unit square. `cues` reads
    /// its pixels for the attention model; `image` (rendered) is smartcrop's for entropy.
    static func square(width: Int, height: Int, crop: PictureCrop, cues: () -> AttentionCues?,
                       image: () -> VipsImageRef?) throws(Reason) -> ClippingRectangle {
        let side = min(width, height)
        var left = (width - side) / 2, top = (height - side) / 2
        if let focus = crop.focus {
            (left, top) = (edge(centredOn: focus.x, part: side, whole: width), edge(centredOn: focus.y, part: side, whole: height))
        } else if crop.mode == .attention, width != height, let cues = cues() {
            let start = cues.bestWindow(side: side, length: max(width, height))
            (left, top) = width > height ? (start, 0) : (0, start)
        } else if crop.mode == .entropy, width != height, let picture = image() {
            var out: UnsafeMutablePointer<VipsImage>?
            guard af_vips_smartcrop(picture.pointer, &out, Int32(side), Int32(side), VIPS_INTERESTING_ENTROPY) == 0, let out else {
                throw Vips.failure("choose the thumbnail's square")
            }
            let cut = VipsImageRef(out)
            // smartcrop's output carries minus its left and top as its offsets.
            (left, top) = (min(max(0, -Int(cut.pointer.pointee.Xoffset)), width - side), min(max(0, -Int(cut.pointer.pointee.Yoffset)), height - side))
        }
        do throws(AttachFetchError) {
            return try ClippingRectangle(x: Double(left) / Double(width), y: Double(top) / Double(height),
                                         width: Double(side) / Double(width), height: Double(side) / Double(height))
        } catch {
            throw Reason(code: .ioError, message: error.message)
        }
    }
}

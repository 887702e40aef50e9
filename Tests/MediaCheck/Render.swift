import CTestSupport
import CVips

/// An image as a phone that manages colour shows it, made by libvips alone: its first page,
/// turned by its EXIF orientation (`autorot`), converted to sRGB through its embedded ICC
/// profile (relative colorimetric; CMYK through libvips' CMYK profile when it has none) or, with
/// no profile, by libvips' colourspace conversion, and with any alpha flattened onto black.
/// `difference` compares an output of attach-fetch with its source rendered so, scaled to the
/// output's size: where the output is a crop of another shape (a 2:1 Android picture), the
/// source is scaled to cover it and the best place along the longer side counts. Both are
/// compared at 48 pixels on the long side at most, and never at more than the source's own.
enum Render {
    /// Owns one reference to a libvips image.
    final class Image {
        let pointer: UnsafeMutablePointer<VipsImage>
        init(_ pointer: UnsafeMutablePointer<VipsImage>) { self.pointer = pointer }
        deinit { g_object_unref(pointer) }
        var width: Int { Int(vips_image_get_width(pointer)) }
        var height: Int { Int(vips_image_get_height(pointer)) }

        func then(_ operation: (UnsafeMutablePointer<VipsImage>, UnsafeMutablePointer<UnsafeMutablePointer<VipsImage>?>) -> Int32) -> Image? {
            var out: UnsafeMutablePointer<VipsImage>?
            guard operation(pointer, &out) == 0, let out else { return nil }
            return Image(out)
        }
    }

    static func rendered(_ file: String) -> Image? {
        guard let opened = af_test_vips_open(file), let turned = Image(opened).then(af_test_vips_autorot) else { return nil }
        let cmyk = vips_image_get_interpretation(turned.pointer) == VIPS_INTERPRETATION_CMYK
        // A profile LittleCMS cannot read is ignored, as a browser ignores it.
        let profiled = vips_image_get_typeof(turned.pointer, "icc-profile-data") != 0 || cmyk
        let srgb = (profiled ? turned.then { af_test_vips_icc_srgb($0, $1, cmyk ? "cmyk" : "srgb") } : nil)
            ?? turned.then(af_test_vips_colourspace_srgb)
        guard let srgb else { return nil }
        return vips_image_hasalpha(srgb.pointer) != 0 ? srgb.then(af_test_vips_flatten) : srgb
    }

    static func difference(source: String, output: String) -> Double? {
        guard let original = rendered(source), let made = rendered(output), original.width > 0, original.height > 0 else { return nil }
        let (sourceWidth, sourceHeight) = (Double(original.width), Double(original.height))
        let (width, height) = (Double(made.width), Double(made.height))
        let sameShape = abs(sourceWidth / sourceHeight - width / height) / (width / height) < 0.015
        let cover = max(width / sourceWidth, height / sourceHeight)
        let (hscale, vscale) = sameShape ? (width / sourceWidth, height / sourceHeight) : (cover, cover)
        // Compared at most 48 pixels on the long side, both the same way: colour and orientation
        // show there, while two resampling kernels' difference on one-pixel lines (pixel art,
        // text) does not. Nor at more pixels than the source has: an enlarged 4x4 image is
        // compared at 4x4, where two enlarging kernels agree.
        let reduce = min(1, 48 / max(width, height), 1 / max(hscale, vscale))
        guard let scaled = original.then({ af_test_vips_resize($0, $1, hscale * reduce, vscale * reduce) }),
              let small = reduce < 1 ? made.then({ af_test_vips_resize($0, $1, reduce, reduce) }) : made else { return nil }
        let common = (width: min(scaled.width, small.width), height: min(scaled.height, small.height))
        guard let target = small.then({ af_test_vips_crop($0, $1, 0, 0, Int32(common.width), Int32(common.height)) }) else { return nil }
        // A crop is placed where it matches best, at every pixel of the reduced size.
        let slack = (x: scaled.width - common.width, y: scaled.height - common.height)
        var best: Double?
        for place in 0...max(slack.x, slack.y) {
            let (left, top) = slack.x >= slack.y ? (place, 0) : (0, place)
            guard let part = scaled.then({ af_test_vips_crop($0, $1, Int32(left), Int32(top), Int32(common.width), Int32(common.height)) }),
                  let signed = part.then({ af_test_vips_subtract($0, target.pointer, $1) }),
                  let absolute = signed.then(af_test_vips_abs) else { return nil }
            var mean = 0.0
            guard af_test_vips_avg(absolute.pointer, &mean) == 0 else { return nil }
            best = min(best ?? mean, mean)
        }
        return best
    }
}

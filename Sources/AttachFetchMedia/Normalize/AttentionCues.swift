internal import CVipsShims
internal import CVips
#if canImport(Glibc)
import Glibc
#endif

/// Where a small picture draws the eye, along its longer side: the cues libvips' attention
/// model weighs (edges, skin tones, saturated colour), summed per column of a wide picture or
/// per row of a tall one, for the iOS thumbnail's square.
///
/// Why not `vips_smartcrop`: on a thumbnail it costs about 53 million instructions a call
/// whatever the size (callgrind, 64x43 to 320x213 pictures; 2 million for `centre`), ten times a
/// whole small image's attachment, most of it building its operations. These sums cost a pass
/// over the thumbnail's pixels. The Android variant's 2:1 cut, made once per picture that
/// needs it, still uses libvips' own model (`PictureCropper.twoToOne`).
struct AttentionCues {
    /// Cue per sampled column (wide) or row (tall).
    let profile: [Double]
    /// The grid's points along the longer side, about.
    static let samples = 32
    /// Pixels between grid points.
    let step: Int

    /// Reads `image`'s pixels (8-bit, 1 to 4 bands; a rendered image, so this is a copy, not
    /// a decode); nil for another format.
    init?(_ image: VipsImageRef) {
        let (width, height) = (image.width, image.height)
        let bands = Int(vips_image_get_bands(image.pointer))
        guard vips_image_get_format(image.pointer) == VIPS_FORMAT_UCHAR, (1...4).contains(bands) else { return nil }
        var size = 0
        guard let memory = vips_image_write_to_memory(image.pointer, &size) else { return nil }
        defer { g_free(memory) }
        self.init(pixels: UnsafeBufferPointer(start: memory.assumingMemoryBound(to: UInt8.self), count: size),
                  width: width, height: height, bands: bands)
    }

    /// Reads `width` x `height` pixels of `bands` 8-bit samples each (RGB first, or grey).
    init?(pixels: UnsafeBufferPointer<UInt8>, width: Int, height: Int, bands: Int) {
        guard (1...4).contains(bands), width > 1, height > 1, pixels.count >= width * height * bands else { return nil }
        let colour = bands >= 3
        // A grid of about `samples` points along the longer side: enough to place a square on
        // a thumbnail, and a fixed cost whatever its size.
        let step = max(1, max(width, height) / Self.samples)
        let wide = width > height
        var profile = [Double](repeating: 0, count: ((wide ? width : height) + step - 1) / step)
        let columns = (width + step - 1) / step
        var previousRow = [Int](repeating: 0, count: columns)
        var y = 0, row = 0
        while y < height {
            var previous = 0
            var x = 0, column = 0
            while x < width {
                let at = (y * width + x) * bands
                let (r, g, b) = colour ? (Int(pixels[at]), Int(pixels[at + 1]), Int(pixels[at + 2])) : (Int(pixels[at]), Int(pixels[at]), Int(pixels[at]))
                let luma = (2 * r + 5 * g + b) >> 3
                // Edges: the change from the sample to the left and the one above.
                var cue = column > 0 ? abs(luma - previous) : 0
                if row > 0 { cue += abs(luma - previousRow[column]) }
                (previous, previousRow[column]) = (luma, luma)
                // Saturated colour, past a threshold.
                let saturation = max(r, g, b) - min(r, g, b)
                if saturation > 64 { cue += saturation / 2 }
                // Skin: red over green over blue, a common RGB rule.
                if r > 95, g > 40, b > 20, r > g + 15, r > b, saturation > 15 { cue += 64 }
                profile[wide ? column : row] += Double(cue)
                x += step
                column += 1
            }
            y += step
            row += 1
        }
        self.profile = profile
        self.step = step
    }

    /// The start, in pixels, of the `side`-pixel window whose cues sum highest; among equals,
    /// the one nearest the middle (a flat picture keeps the centred square).
    func bestWindow(side pixels: Int, length: Int) -> Int {
        let count = profile.count
        let side = max(1, pixels / step)
        guard side < count else { return 0 }
        var sum = profile[0..<side].reduce(0, +)
        let middle = (count - side) / 2
        var (best, bestSum) = (0, -Double.infinity)
        for start in 0...(count - side) {
            if start > 0 { sum += profile[start + side - 1] - profile[start - 1] }
            let better = sum > bestSum + 1e-9 || (abs(sum - bestSum) <= 1e-9 && abs(start - middle) < abs(best - middle))
            if better { (best, bestSum) = (start, sum) }
        }
        // The window's centre, in pixels, kept inside the picture.
        let centre = (Double(best) + Double(side) / 2) * Double(step)
        return min(max(0, Int(centre.rounded()) - pixels / 2), length - pixels)
    }
}

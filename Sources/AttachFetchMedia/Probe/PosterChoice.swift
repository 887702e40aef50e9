internal import CFFmpeg

/// With no thumbnail time asked for, the poster is the most telling frame of the clip's first
/// seconds rather than its first: many clips open on black or fade in from it. Candidates are
/// taken every `autoPosterStep` seconds up to `autoPosterWindow` (every frame is decoded, only
/// the candidates are scored, on a sparse grid of luma samples), within the probe's frame
/// budget. The one with the most detail wins; a later one must beat the best by a margin, so a
/// still or black clip keeps its first frame, and a fade gets a frame from after it, where the
/// contrast is whole.
extension MediaProber {
    /// How far into the clip candidates are looked for, in seconds.
    static let autoPosterWindow = 2.0
    /// Seconds between candidates.
    static let autoPosterStep = 0.25
    /// Detail (the luma's standard deviation, 0-255) a later candidate must add to replace the best.
    static let autoPosterMargin = 2.0

    /// A frame's detail: the standard deviation of its luma over every 4th sample of every 4th
    /// row, scaled to 8 bits; nil for a pixel format without a luma plane read this way (RGB,
    /// palette, big-endian, hardware frames).
    static func detail(_ frame: UnsafeMutablePointer<AVFrame>) -> Double? {
        guard let descriptor = lumaFormat(frame), let plane = frame.pointee.data.0 else { return nil }
        let luma = descriptor.pointee.comp.0
        let (width, height, stride) = (Int(frame.pointee.width), Int(frame.pointee.height), Int(frame.pointee.linesize.0))
        let (step, offset, depth) = (Int(luma.step), Int(luma.offset), Int(luma.depth))
        guard width > 0, height > 0, stride > 0, step > 0, (1...16).contains(depth) else { return nil }
        let wide = depth > 8
        let scale = wide ? 1 / Double(1 << (depth - 8)) : 1
        var (sum, squares, count) = (0.0, 0.0, 0.0)
        for y in Swift.stride(from: 0, to: height, by: 4) {
            let row = UnsafeRawPointer(plane + y * stride + offset)
            for x in Swift.stride(from: 0, to: width, by: 4) {
                let sample = wide ? Double(UInt16(littleEndian: row.loadUnaligned(fromByteOffset: x * step, as: UInt16.self)) >> UInt16(luma.shift))
                    : Double(row.load(fromByteOffset: x * step, as: UInt8.self))
                let value = sample * scale
                sum += value
                squares += value * value
                count += 1
            }
        }
        let mean = sum / count
        return (max(0, squares / count - mean * mean)).squareRoot()
    }

    /// The frame's pixel format, when its first plane is luma read as `detail` reads it.
    static func lumaFormat(_ frame: UnsafeMutablePointer<AVFrame>) -> UnsafePointer<AVPixFmtDescriptor>? {
        guard let descriptor = av_pix_fmt_desc_get(AVPixelFormat(frame.pointee.format)) else { return nil }
        let refused = UInt64(AV_PIX_FMT_FLAG_RGB) | UInt64(AV_PIX_FMT_FLAG_PAL) | UInt64(AV_PIX_FMT_FLAG_BE) | UInt64(AV_PIX_FMT_FLAG_HWACCEL)
        return descriptor.pointee.flags & refused == 0 ? descriptor : nil
    }

    /// The search for the auto poster, frame by frame.
    struct PosterSearch {
        private(set) var best = -1.0
        private var nextCandidate = 0.0

        /// Whether `frame` (at `seconds`) becomes the poster; false for a frame between
        /// candidates or one no more telling than the best.
        mutating func takes(_ frame: UnsafeMutablePointer<AVFrame>, at seconds: Double?, isFirst: Bool) -> Bool {
            let time = seconds ?? 0
            guard isFirst || time >= nextCandidate else { return false }
            nextCandidate = time + MediaProber.autoPosterStep
            guard let detail = MediaProber.detail(frame) else { return isFirst }
            guard isFirst || detail > best + MediaProber.autoPosterMargin else { return false }
            best = detail
            return true
        }

        /// Whether the search is over at this frame: past the window, or unscoreable.
        func isOver(at seconds: Double?, scoreable: Bool) -> Bool {
            !scoreable || (seconds ?? MediaProber.autoPosterWindow) >= MediaProber.autoPosterWindow
        }
    }
}

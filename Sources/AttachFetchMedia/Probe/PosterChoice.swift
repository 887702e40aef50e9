internal import CFFmpeg

/// With no thumbnail time asked for, the poster is the clip's first frame when that frame is
/// telling (its detail at least `tellingDetail`), and otherwise the most telling frame of the
/// first seconds: many clips open on black or fade in from it. Only a dim first frame pays for
/// the search (docs/performance.md, "The poster search"). Candidates are taken every
/// `autoPosterStep` seconds up to `autoPosterWindow`, within the probe's frame budget; frames
/// between candidates that no other frame refers to are not decoded at all (`skipsFrame`), the
/// others are decoded but not scored. The candidate with the most detail wins; a later one must
/// beat the best by a margin, so a still or black clip keeps its first frame, and a fade gets a
/// frame from after it, where the contrast is whole.
extension MediaProber {
    /// How far into the clip candidates are looked for, in seconds.
    static let autoPosterWindow = 2.0
    /// Seconds between candidates.
    static let autoPosterStep = 0.25
    /// Detail (the luma's standard deviation, 0-255) a later candidate must add to replace the best.
    static let autoPosterMargin = 2.0
    /// Detail at which the first frame is the poster without a search. Black measures 0 and
    /// ffmpeg's test pattern 65 (33 at half contrast); of the corpus's 44 videos, one opens dim
    /// enough to be searched (docs/performance.md, "The poster search").
    static let tellingDetail = 20.0

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
        private(set) var nextCandidate = 0.0
        /// The first frame was telling: no later frame is looked at.
        private var firstIsTelling = false

        /// Whether `frame` (at `seconds`) becomes the poster; false for a frame between
        /// candidates or one no more telling than the best.
        mutating func takes(_ frame: UnsafeMutablePointer<AVFrame>, at seconds: Double?, isFirst: Bool) -> Bool {
            let time = seconds ?? 0
            guard isFirst || time >= nextCandidate else { return false }
            nextCandidate = time + MediaProber.autoPosterStep
            guard let detail = MediaProber.detail(frame) else { return isFirst }
            guard isFirst || detail > best + MediaProber.autoPosterMargin else { return false }
            best = detail
            if isFirst { firstIsTelling = detail >= MediaProber.tellingDetail }
            return true
        }

        /// Whether the search is over at this frame: a telling first frame, past the window, or
        /// unscoreable.
        func isOver(at seconds: Double?, scoreable: Bool) -> Bool {
            !scoreable || firstIsTelling || (seconds ?? MediaProber.autoPosterWindow) >= MediaProber.autoPosterWindow
        }

        /// Whether a frame the decoder may drop unseen (one no other frame refers to) can be left
        /// undecoded: once the first frame is taken, a frame before the next candidate's time is
        /// never scored. `seconds` is the packet's presentation time; nil keeps the frame.
        func skipsFrame(at seconds: Double?, hasPoster: Bool) -> Bool {
            guard hasPoster, let seconds else { return false }
            // Half a frame at 60 fps early counts as the candidate's time, as frame times rarely
            // land on it exactly.
            return seconds < nextCandidate - 0.008
        }
    }
}

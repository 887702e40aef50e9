internal import CTurboJPEG
#if canImport(Glibc)
import Glibc
#endif

/// The fast path for the most common thumbnail: a baseline YCbCr JPEG with no orientation tag
/// and no colour profile. libjpeg-turbo (the decoder libvips itself uses for JPEG) decodes it
/// with DCT scaling straight to about twice the thumbnail size, an area-average resize and a
/// crop finish it, and libjpeg-turbo encodes it — about a millisecond for a small photo, against
/// libvips' fixed cost of several per operation. Any other JPEG returns nil and goes to libvips.
/// Blocking: call it from a worker thread.
enum JPEGThumbnailer {
    /// Larger files go to libvips, which streams them instead of reading them into memory.
    static let maxFileBytes = 16 << 20

    package static func make(source: String, destinationBase: String, shape: ThumbnailShape,
                     limits: ThumbnailLimits) -> Result<ThumbnailOutcome, Reason>? {
        var layout: JPEGLayout?
        return make(source: source, destinationBase: destinationBase, shape: shape, limits: limits, layout: &layout)
    }

    /// - Parameter read: set to the file's layout when the file was read whole, for the
    ///   libvips path to use rather than read it again.
    static func make(source: String, destinationBase: String, shape: ThumbnailShape,
                     limits: ThumbnailLimits, layout read: inout JPEGLayout?) -> Result<ThumbnailOutcome, Reason>? {
        guard let data = readJPEGFile(source), let layout = JPEGLayout(data) else { return nil }
        read = layout
        guard layout.isComplete, layout.isBaseline, layout.orientation == 1, !layout.orientationsDisagree,
              !layout.hasColourProfile else { return nil }
        do throws(Reason) {
            let decoder = try TurboHandle(compress: false)
            var width: Int32 = 0, height: Int32 = 0, subsampling: Int32 = 0, colourspace: Int32 = 0
            // A header TurboJPEG cannot classify (unusual chroma subsampling such as 1x3, which
            // libjpeg itself decodes) is libvips' to judge, not a verdict here. So are greyscale
            // and CMYK, which keep their own treatment in libvips.
            guard tjDecompressHeader3(decoder.handle, data, UInt(data.count), &width, &height, &subsampling, &colourspace) == 0,
                  colourspace == Int32(TJCS_YCbCr.rawValue), subsampling >= 0 else { return nil }
            try Thumbnailer.checkBudgets(width: Int(width), height: Int(height), interlaced: false, frames: 1, limits: limits)
            var box = try Thumbnailer.boxSize(width: Int(width), height: Int(height), shape: shape, maxEdge: limits.maxEdge)
            // vips_thumbnail fits the image inside the box with one shrink factor and rounds;
            // the same here, so that both paths make the same size.
            let shrink = max(Double(width) / Double(box.width), Double(height) / Double(box.height))
            box.width = max(1, Int((Double(width) / shrink).rounded()))
            box.height = max(1, Int((Double(height) / shrink).rounded()))
            let scale = scalingFactor(width: Int(width), height: Int(height), atLeast: (box.width, box.height))
            let scaledWidth = scaled(Int(width), scale), scaledHeight = scaled(Int(height), scale)
            var pixels = [UInt8](repeating: 0, count: scaledWidth * scaledHeight * 3)
            // STOPONWARNING, then libvips decides: one decode policy for JPEG on both paths. A
            // warning ends the fast path and the file goes to libvips (Vips.decodingUnderPolicy), which
            // refuses a scan cut short ("premature end", at the end of the file or before a
            // marker) and accepts what every decoder shows through (extraneous bytes before a
            // marker). Only a fatal error is a verdict here.
            guard tjDecompress2(decoder.handle, data, UInt(data.count), &pixels, Int32(scaledWidth), 0, Int32(scaledHeight),
                                Int32(TJPF_RGB.rawValue), TJFLAG_STOPONWARNING) == 0 else {
                if tjGetErrorCode(decoder.handle) == Int32(TJERR_WARNING.rawValue) { return nil }
                throw decoder.failure(.corruptMedia, "decode the image")
            }
            var image = RGBImage(width: scaledWidth, height: scaledHeight, pixels: pixels)
            if (scaledWidth, scaledHeight) != (box.width, box.height) {
                image = image.areaResized(width: box.width, height: box.height)
            }
            image = image.cropped(to: Thumbnailer.clipRegion(box.clip, width: image.width, height: image.height))
            let encoder = try TurboHandle(compress: true)
            var jpeg: UnsafeMutablePointer<UInt8>?
            var length: UInt = 0
            defer { tjFree(jpeg) }
            // Quality 80 with 4:2:0 chroma, as the libvips path writes thumbnails.
            guard tjCompress2(encoder.handle, image.pixels, Int32(image.width), 0, Int32(image.height), Int32(TJPF_RGB.rawValue),
                              &jpeg, &length, Int32(TJSAMP_420.rawValue), 80, 0) == 0, let jpeg else {
                throw encoder.failure(.ioError, "encode the thumbnail")
            }
            let file = destinationBase + ".jpg"
            if let problem = SafeFile.create(file, contents: UnsafeRawBufferPointer(start: jpeg, count: Int(length))) {
                throw Reason(code: .ioError, message: problem)
            }
            var outcome = ThumbnailOutcome(sourceWidth: Int(width), sourceHeight: Int(height), file: file,
                                           width: image.width, height: image.height, bytes: Int64(length))
            outcome.suggestedClip = Thumbnailer.suggestedSquare(
                width: image.width, height: image.height, shape: shape, limits: limits,
                cues: { image.pixels.withUnsafeBufferPointer { AttentionCues(pixels: $0, width: image.width, height: image.height, bands: 3) } },
                image: { image.pixels.withUnsafeBytes { try? Vips.rgbImage($0, width: image.width, height: image.height) } })
            return .success(outcome)
        } catch {
            return .failure(error)
        }
    }

    /// The smallest of libjpeg-turbo's DCT scaling factors that still covers the box.
    private static func scalingFactor(width: Int, height: Int, atLeast box: (Int, Int)) -> tjscalingfactor {
        var count: Int32 = 0
        var best = tjscalingfactor(num: 1, denom: 1)
        guard let factors = tjGetScalingFactors(&count) else { return best }
        for factor in UnsafeBufferPointer(start: factors, count: Int(count)) where factor.num <= factor.denom {
            let w = scaled(width, factor), h = scaled(height, factor)
            if w >= box.0, h >= box.1, w * h < scaled(width, best) * scaled(height, best) { best = factor }
        }
        return best
    }

    /// TJSCALED, a C macro.
    private static func scaled(_ dimension: Int, _ factor: tjscalingfactor) -> Int {
        (dimension * Int(factor.num) + Int(factor.denom) - 1) / Int(factor.denom)
    }

    /// The whole file, when it starts like a JPEG (SOI) and is small enough; nil otherwise,
    /// having read two bytes, so a PNG or GIF costs the libvips path nothing extra. Read with
    /// pread only and no stat: an unnamed file is read through its own descriptor.
    static func readJPEGFile(_ path: String) -> [UInt8]? {
        UnnamedFile.withReadable(path) { fd -> [UInt8]? in
            var start: (UInt8, UInt8) = (0, 0)
            guard pread(fd, &start, 2, 0) == 2, start == (0xFF, 0xD8) else { return nil }
            // Read into uninitialized storage (zeroing and trimming a buffer cost more than the
            // read for a small photo); a file that fills it is read again into one four times
            // larger, up to one byte past the limit.
            var capacity = 64 << 10
            while true {
                var failed = false, complete = false
                let data = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
                    var count = 0
                    while count < buffer.count {
                        let got = pread(fd, buffer.baseAddress! + count, buffer.count - count, off_t(count))
                        if got < 0 {
                            if errno == EINTR { continue }
                            failed = true
                            break
                        }
                        if got == 0 {
                            complete = true
                            break
                        }
                        count += got
                    }
                    initialized = count
                }
                if failed { return nil }
                if complete { return data.count > 0 && data.count <= maxFileBytes ? data : nil }
                guard capacity <= maxFileBytes else { return nil }
                capacity = min(capacity * 4, maxFileBytes + 1)
            }
        }
    }
}

/// What the JPEG's markers say before its scan: enough to choose the path.
struct JPEGLayout {
    /// The frame type: 0xC0 (baseline) or 0xC1 (extended sequential) take the fast path.
    var frameMarker: UInt8 = 0
    /// EXIF orientation, 1 when absent: the first EXIF block's, as libvips reads it.
    var orientation = 1
    /// Whether a later EXIF block states another orientation (absent counting as 1): readers
    /// differ on which block counts, so the file shows one way here and another elsewhere.
    var orientationsDisagree = false
    /// The ICC profile's APP2 segments, whole (marker and length too), in order.
    var profileSegments: [Range<Int>] = []
    var hasColourProfile: Bool { !profileSegments.isEmpty }
    /// False when the bytes given ended inside a segment before the first scan (a prefix of a
    /// file): what was read holds, and nothing after it was seen.
    var isComplete = true

    var isBaseline: Bool { frameMarker == 0xC0 || frameMarker == 0xC1 }

    /// Walks the marker segments from SOI to the first scan; nil when that is not a JPEG.
    init?(_ data: [UInt8]) {
        guard data.count > 4, data[0] == 0xFF, data[1] == 0xD8 else { return nil }
        var offset = 2, exifBlocks = 0
        while offset + 4 <= data.count {
            guard data[offset] == 0xFF else { return nil }
            let marker = data[offset + 1]
            if marker == 0xFF { offset += 1; continue } // fill byte
            if marker == 0xDA || marker == 0xD9 { break } // start of scan, end of image
            let length = Int(data[offset + 2]) << 8 | Int(data[offset + 3])
            guard length >= 2 else { return nil }
            guard offset + 2 + length <= data.count else {
                isComplete = false
                break
            }
            let body = offset + 4
            let bodyCount = length - 2
            switch marker {
            case 0xC0...0xCF where marker != 0xC4 && marker != 0xC8 && marker != 0xCC:
                frameMarker = marker
            case 0xE1 where bodyCount >= 6 && Array(data[body..<body + 6]) == Array("Exif\0\0".utf8):
                let stated = Self.exifOrientation(data, tiff: body + 6, end: body + bodyCount) ?? 1
                if exifBlocks == 0 { orientation = stated } else if stated != orientation { orientationsDisagree = true }
                exifBlocks += 1
            case 0xE2 where bodyCount >= 12 && Array(data[body..<body + 12]) == Array("ICC_PROFILE\0".utf8):
                profileSegments.append(offset..<offset + 2 + length)
            default:
                break
            }
            offset += 2 + length
        }
    }

    /// The layout of the JPEG at `path` from its first `prefixBytes`, where the segments before
    /// the scan are (EXIF and ICC blocks are at most 64 KiB each): for a file on libvips' path,
    /// which reads one EXIF block.
    static func of(file path: String, prefixBytes: Int = 256 << 10) -> JPEGLayout? {
        UnnamedFile.withReadable(path) { fd -> JPEGLayout? in
            let data = [UInt8](unsafeUninitializedCapacity: prefixBytes) { buffer, initialized in
                initialized = max(0, pread(fd, buffer.baseAddress, buffer.count, 0))
            }
            return JPEGLayout(data)
        }
    }

    /// The Orientation tag (0x0112) of IFD0, or nil when absent or unreadable.
    private static func exifOrientation(_ data: [UInt8], tiff: Int, end: Int) -> Int? {
        guard end - tiff >= 8 else { return nil }
        let little = data[tiff] == 0x49 // "II"
        func u16(_ at: Int) -> Int? {
            guard at + 2 <= end else { return nil }
            return little ? Int(data[at]) | Int(data[at + 1]) << 8 : Int(data[at]) << 8 | Int(data[at + 1])
        }
        func u32(_ at: Int) -> Int? {
            guard let high = u16(little ? at + 2 : at), let low = u16(little ? at : at + 2) else { return nil }
            return high << 16 | low
        }
        guard let ifd = u32(tiff + 4), let count = u16(tiff + ifd) else { return nil }
        for index in 0..<count {
            let entry = tiff + ifd + 2 + index * 12
            guard let tag = u16(entry) else { return nil }
            if tag == 0x0112 { return u16(entry + 8) }
        }
        return nil
    }
}

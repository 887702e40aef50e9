internal import CVipsShims
internal import CVips

/// Turns an image iOS would not show — WebP, HEIC/HEIF, AVIF, or any image over the limit —
/// into a JPEG (PNG when some pixel is transparent, GIF for an animation that still fits),
/// downscaling in a bounded number of attempts until it fits. EXIF orientation is applied to
/// the pixels, so the result needs no metadata. Blocking: call it from a worker thread.
package enum ImageNormalizer {
    /// JPEG quality of a delivered image: high, since this is the picture people see.
    static let jpegQuality = 85

    /// - Parameter shouldStop: checked before each attempt; true when nobody waits any more.
    /// - Returns: nil for an animation that does not fit as a GIF, when `animationAsVideo` asks
    ///   for it as a video (the caller transcodes it).
    package static func normalize(source: String, type: MediaType, destinationBase: String, limits: NormalizeLimits,
                          shouldStop: () -> Bool = { false }) -> Result<NormalizedImage?, Reason> {
        do throws(Reason) {
            return .success(try normalizeThrowing(source: source, type: type, destinationBase: destinationBase,
                                                  limits: limits, shouldStop: shouldStop))
        } catch {
            return .failure(error)
        }
    }

    private static func normalizeThrowing(source: String, type: MediaType, destinationBase: String, limits: NormalizeLimits,
                                          shouldStop: () -> Bool) throws(Reason) -> NormalizedImage? {
        if [.heic, .heif, .avif].contains(type) { _ = Vips.heifLoader }
        // An AVIF sequence moves as a video when transcoding is on, as a GIF too large does.
        let sequence = type == .avif && AVIFSequence.isSequence(source)
        if sequence && limits.animationAsVideo != nil { return nil }
        let header: (image: VipsImageRef, width: Int, height: Int)
        do throws(Reason) {
            header = try Thumbnailer.openHeader(source, limits: limits.decode)
        } catch where sequence && error.code == .corruptMedia {
            // Without a still image libheif can read, what is left is the video.
            throw Reason(code: .unsupportedType,
                         message: "the file is an AVIF image sequence, delivered as a video, and transcoding is off")
        }
        let colour: ColourRule = limits.convertsToSRGB ? .sRGB : .sourceProfile
        // Read once for every attempt.
        let sourceColour = SourceColour(header.image, source: source)
        let profiled = sourceColour.profiled
        func delivered(_ encoded: EncodedImage, downscaled: Bool, cropped: Bool = false,
                       made: AttachmentDescriptor.Transform? = nil) throws(Reason) -> NormalizedImage {
            let file = destinationBase + "." + encoded.type.fileExtension
            let problem = encoded.data.withUnsafeBytes { SafeFile.create(file, contents: $0) }
            if let problem { throw Reason(code: .ioError, message: problem) }
            var transforms: [AttachmentDescriptor.Transform] = [made ?? (encoded.type == type ? .reencoded : .transcoded)]
            if cropped { transforms.append(.cropped) }
            if downscaled { transforms.append(.downscaled) }
            // The SHA-256 is the keeper's, computed from the file whatever the worker says (`AnswerCheck`).
            return NormalizedImage(file: file, type: encoded.type, bytes: Int64(encoded.data.count),
                                   sha256: "", width: encoded.width, height: encoded.height,
                                   sourceWidth: header.width, sourceHeight: header.height, transforms: transforms)
        }

        // An animation stays one while it fits as a GIF at full size; otherwise it becomes a
        // video when transcoding is on, else its first frame is delivered as a still.
        if limits.keepsAnimation, let frames = header.image.integer("n-pages"), frames > 1 {
            if shouldStop() { throw Reason(code: .cancelled, message: "abandoned") }
            if let gif = try? animatedGIF(source), Int64(gif.data.count) <= limits.maxBytes {
                return try delivered(gif, downscaled: false)
            }
            if limits.animationAsVideo != nil { return nil }
        }

        let needsCut = limits.crop.map { $0.crops && PictureCrop.needsTwoToOne(width: header.width, height: header.height) } ?? false
        if limits.turnsLosslessly, type == .jpeg, !needsCut, !(profiled && limits.convertsToSRGB),
           let turned = losslessTurn(source, orientation: header.image.orientation, limits: limits) {
            return try delivered(EncodedImage(data: turned, type: .jpeg, width: header.width, height: header.height), downscaled: false, made: .oriented)
        }
        if let crop = limits.crop, needsCut {
            return try twoToOne(source, header: header, toSRGB: ColourRule.sRGB.converts(profiled: profiled), colour: sourceColour,
                                crop: crop, limits: limits, shouldStop: shouldStop) { encoded throws(Reason) in
                try delivered(encoded, downscaled: encoded.width < header.width, cropped: true)
            }
        }

        var scale = 1.0
        var lastSize = 0
        for _ in 0..<max(1, limits.maxAttempts) {
            if shouldStop() { throw Reason(code: .cancelled, message: "abandoned") }
            let width = max(1, Int((Double(header.width) * scale).rounded()))
            let height = max(1, Int((Double(header.height) * scale).rounded()))
            // vips_thumbnail shrinks on load where the format allows and applies the EXIF
            // orientation; at scale 1 it only decodes (and turns) the image.
            let encoded = try Vips.decodingUnderPolicy(isJPEG: header.image.isJPEG) { failOn throws(Reason) in
                var image = try sourceColour.scaled(source, width: width, height: height, failOn: failOn,
                                                    toSRGB: colour.converts(profiled: profiled))
                // Alpha needs two passes (is it all opaque? then encode): decode once into memory.
                if image.hasAlpha {
                    guard let rendered = vips_image_copy_memory(image.pointer) else {
                        throw Vips.failure("decode the image")
                    }
                    image = VipsImageRef(rendered)
                }
                return try Thumbnailer.encode(image, jpegQuality: jpegQuality, colour: colour)
            }
            if Int64(encoded.data.count) <= limits.maxBytes {
                return try delivered(encoded, downscaled: scale < 1)
            }
            lastSize = encoded.data.count
            // Encoded size grows roughly with the pixel count: aim a little under the limit.
            scale *= min(0.9, (Double(limits.maxBytes) / Double(encoded.data.count)).squareRoot() * 0.95)
        }
        throw Reason(code: .sizeLimitExceeded,
                           message: "the image could not be brought under \(limits.maxBytes) bytes in \(limits.maxAttempts) attempts (last: \(lastSize) bytes)")
    }

    /// A JPEG the tag turns, and nothing else: its blocks moved, not encoded again, its ICC
    /// profile kept unless the output is sRGB; nil where TurboJPEG cannot, or the result is over
    /// the limit. A copy is about the source's size, so a source over the limit is not tried; an
    /// upright one is copied only to lose disagreeing tags (not for a variant).
    private static func losslessTurn(_ source: String, orientation: Int, limits: NormalizeLimits) -> [UInt8]? {
        guard orientation != 1 || !limits.convertsToSRGB, let jpeg = JPEGThumbnailer.readJPEGFile(source),
              Int64(jpeg.count) <= limits.maxBytes, let layout = JPEGLayout(jpeg),
              let turned = TurboHandle.turned(jpeg, orientation: orientation,
                                              keeping: limits.convertsToSRGB ? [] : layout.profileSegments.map { jpeg[$0] }),
              Int64(turned.count) <= limits.maxBytes else { return nil }
        return turned
    }

    /// A 2:1 crop (`PictureCropper`), made narrower until it fits `limits.maxBytes`.
    private static func twoToOne(_ source: String, header: (image: VipsImageRef, width: Int, height: Int), toSRGB: Bool,
                                 colour: SourceColour, crop: PictureCrop,
                                 limits: NormalizeLimits, shouldStop: () -> Bool,
                                 deliver: (EncodedImage) throws(Reason) -> NormalizedImage) throws(Reason) -> NormalizedImage {
        var maxWidth = limits.cropWidth
        var lastSize = 0
        for _ in 0..<max(1, limits.maxAttempts) {
            if shouldStop() { throw Reason(code: .cancelled, message: "abandoned") }
            let encoded = try Vips.decodingUnderPolicy(isJPEG: header.image.isJPEG) { failOn throws(Reason) in
                let cut = try PictureCropper.twoToOne(source, width: header.width, height: header.height, crop: crop,
                                                      toSRGB: toSRGB, statedProfile: colour.stated, toneMapped: colour.toneMapped,
                                                      maxWidth: maxWidth, failOn: failOn)
                guard let rendered = vips_image_copy_memory(cut.pointer) else { throw Vips.failure("decode the image") }
                return try Thumbnailer.encode(VipsImageRef(rendered), jpegQuality: jpegQuality)
            }
            if Int64(encoded.data.count) <= limits.maxBytes { return try deliver(encoded) }
            lastSize = encoded.data.count
            maxWidth = Int(Double(encoded.width) * min(0.9, (Double(limits.maxBytes) / Double(encoded.data.count)).squareRoot() * 0.95))
        }
        throw Reason(code: .sizeLimitExceeded,
                     message: "the 2:1 crop could not be brought under \(limits.maxBytes) bytes in \(limits.maxAttempts) attempts (last: \(lastSize) bytes)")
    }

    /// Every frame, as an animated GIF.
    private static func animatedGIF(_ source: String) throws(Reason) -> EncodedImage {
        guard let pointer = af_vips_image_new_from_file_all_pages(source, VIPS_FAIL_ON_ERROR) else {
            throw Vips.failure("read the animation")
        }
        let image = VipsImageRef(pointer)
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        defer { g_free(buffer) }
        guard af_vips_gifsave_buffer(image.pointer, &buffer, &length) == 0, let buffer else {
            throw Vips.failure("encode the animation")
        }
        let pageHeight = image.integer("page-height") ?? image.height
        return EncodedImage(data: [UInt8](UnsafeRawBufferPointer(start: buffer, count: length)), type: .gif,
                            width: image.width, height: pageHeight)
    }
}

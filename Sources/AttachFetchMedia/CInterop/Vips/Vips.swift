internal import CVipsShims
internal import CVips
#if canImport(Glibc)
import Glibc
#endif

/// libvips' process-wide set-up, done once: start it, turn its operation cache off (every
/// file is new; a cache would only hold memory), and let only the loaders of the formats in
/// the table run, plus WebP and HEIF (HEIC, AVIF), which are only ever handed files libmagic
/// typed as those and only to convert them. The rest (ImageMagick, PDF, SVG, ...) must never
/// see downloaded bytes.
package enum Vips {
    static let startup: Result<Void, AttachFetchError> = {
        guard vips_init("attach-fetch") == 0 else {
            return .failure(.libraryInitialisation("vips_init failed: \(takeError())"))
        }
        vips_cache_set_max(0)
        vips_cache_set_max_mem(0)
        // One libvips worker per operation: images are thumbnailed in parallel by the
        // pipeline's own threads, so a batch of large images cannot multiply threads and
        // memory per image.
        vips_concurrency_set(1)
        // libvips reports decoder trouble through GLib warnings on stderr as well as through
        // the error it returns; the returned error reaches the descriptor, so the library
        // stays silent. Only the "VIPS" domain is touched.
        g_log_set_handler("VIPS", GLogLevelFlags(rawValue: G_LOG_LEVEL_WARNING.rawValue | G_LOG_LEVEL_MESSAGE.rawValue | G_LOG_LEVEL_INFO.rawValue),
                          { _, _, _, _ in }, nil)
        vips_block_untrusted_set(1)
        vips_operation_block_set("VipsForeignLoad", 1)
        for loader in ["VipsForeignLoadJpeg", "VipsForeignLoadPng", "VipsForeignLoadNsgif",
                       "VipsForeignLoadWebp", "VipsForeignLoadHeif"] {
            vips_operation_block_set(loader, 0)
        }
        return .success(())
    }()

    /// The HEIF loader (HEIC and AVIF), made available once, when the first such file is
    /// converted: libheif and its codecs are not mapped by a process that never needs them.
    static let heifLoader: Void = {
        loadHEIFModuleIfMissing()
        // Loaded after the blocking above, its class inherited "blocked" from VipsForeignLoad.
        vips_operation_block_set("VipsForeignLoadHeif", 0)
    }()

    /// libvips loads its optional loaders as modules from its own directory at start-up. When
    /// that was skipped (the CLI and the decoder workers point VIPSHOME at nothing, so that the
    /// ImageMagick, PDF, OpenSlide and JPEG XL modules — all blocked anyway — are never mapped,
    /// which saves about 50 ms of start-up), the one module attach-fetch uses, HEIF, is loaded
    /// here from beside the libvips actually in use.
    private static func loadHEIFModuleIfMissing() {
        guard vips_type_find("VipsOperation", "heifload") == 0 else { return }
        // Where the mapped libvips lives (dladdr needs _GNU_SOURCE; the kernel's map says it too).
        // (procfs files report size 0, so they are read by line, not by size.)
        guard let maps = fopen("/proc/self/maps", "r") else { return }
        defer { fclose(maps) }
        var buffer: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(buffer) }
        var found: String?
        while found == nil, getline(&buffer, &capacity, maps) > 0, let buffer {
            let text = String(cString: buffer).trimmingTrailingNewlines()
            if text.contains("/libvips.so") { found = text }
        }
        guard let line = found, let slash = line.firstIndex(of: "/") else { return }
        let library = String(line[slash...])
        let directory = library.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let path = "\(directory)/vips-modules-\(vips_version(0)).\(vips_version(1))/vips-heif.so"
        guard access(path, R_OK) == 0, let module = g_module_open(path, G_MODULE_BIND_LAZY) else { return }
        g_module_make_resident(module)
    }

    package static func ensureStarted() throws(AttachFetchError) {
        try startup.get()
    }

    /// The one mapping of a libvips failure: always `corruptMedia` (libvips fails on what it is
    /// given: bytes it cannot decode, or a decoded image it cannot process), with libvips' own
    /// message. `doing` says what was attempted ("decode the image").
    package static func failure(_ doing: String?) -> Reason {
        Reason(code: .corruptMedia, message: doing.map { "libvips cannot \($0): \(takeError())" } ?? "libvips: \(takeError())")
    }

    /// The smallest value in band `band` of `image`. Renders the image: every band's pixels are
    /// decoded, but only the one band is scanned.
    static func minimum(ofBand band: Int32, in image: VipsImageRef, doing: String?) throws(Reason) -> Double {
        var extracted: UnsafeMutablePointer<VipsImage>?
        guard af_vips_extract_bands(image.pointer, &extracted, band, 1) == 0, let extracted else { throw failure(doing) }
        let single = VipsImageRef(extracted)
        var minimum = 0.0
        guard af_vips_min(single.pointer, &minimum) == 0 else { throw failure(doing) }
        return minimum
    }

    /// `vips_thumbnail` of a file (shrink-on-load, EXIF orientation applied); `toSRGB`: its
    /// pixels converted through its ICC profile, for a source that has one
    /// (`ColourRule.converts`). Lazy: the pixels are decoded, and decoding fails, when the
    /// result is rendered.
    /// `statedProfile`: the profile that stands for colour the file states without one
    /// (`StatedColour`), carried by the result or converted through.
    static func thumbnail(_ source: String, width: Int, height: Int, failOn: VipsFailOn,
                          toSRGB: Bool, statedProfile: StatedProfile? = nil) throws(Reason) -> VipsImageRef {
        var out: UnsafeMutablePointer<VipsImage>?
        let status = toSRGB && statedProfile == nil
            ? af_vips_thumbnail_srgb(source, &out, Int32(width), Int32(height), VIPS_SIZE_DOWN, failOn)
            : af_vips_thumbnail(source, &out, Int32(width), Int32(height), VIPS_SIZE_DOWN, failOn)
        guard status == 0, let out else {
            throw failure("decode the image")
        }
        if let statedProfile { return try withStatedProfile(VipsImageRef(out), statedProfile, toSRGB: toSRGB) }
        return VipsImageRef(out)
    }

    /// An ICC profile that stands for colour a file states without one (`StatedColour`).
    enum StatedProfile: Equatable, Sendable {
        /// One of libvips' built-in profiles, by name (`p3`).
        case builtIn(String)
        /// A profile's bytes, made for the statement (`RGBProfile`).
        case made([UInt8])
    }

    /// `image` carrying `profile`, for colour its file stated without a profile
    /// (`StatedColour`); converted to sRGB through it when `toSRGB`.
    static func withStatedProfile(_ image: VipsImageRef, _ profile: StatedProfile, toSRGB: Bool) throws(Reason) -> VipsImageRef {
        var out: UnsafeMutablePointer<VipsImage>?
        guard af_vips_copy(image.pointer, &out) == 0, let out else { throw failure("copy the image") }
        let copy = VipsImageRef(out)
        switch profile {
        case .builtIn(let name):
            var blob: UnsafeMutablePointer<VipsBlob>?
            guard af_vips_profile_load(name, &blob) == 0, let blob else { throw failure("load libvips' \(name) profile") }
            defer { blob.withMemoryRebound(to: VipsArea.self, capacity: 1) { vips_area_unref($0) } }
            var length = 0
            guard let data = vips_blob_get(blob, &length), length > 0 else { throw failure("read libvips' \(name) profile") }
            vips_image_set_blob_copy(copy.pointer, "icc-profile-data", data, length)
        case .made(let bytes):
            bytes.withUnsafeBytes { vips_image_set_blob_copy(copy.pointer, "icc-profile-data", $0.baseAddress, $0.count) }
        }
        guard toSRGB else { return copy }
        var converted: UnsafeMutablePointer<VipsImage>?
        guard af_vips_icc_transform_srgb(copy.pointer, &converted) == 0, let converted else { throw failure("convert the image to sRGB") }
        return VipsImageRef(converted)
    }

    /// A copy of `image` whose only metadata is its ICC profile, if it has one: what is written
    /// unstripped then carries the colour and nothing else of the source's (no EXIF, no GPS).
    static func keepingOnlyProfile(_ image: VipsImageRef) throws(Reason) -> VipsImageRef {
        var out: UnsafeMutablePointer<VipsImage>?
        guard af_vips_copy(image.pointer, &out) == 0, let out else { throw failure("copy the image") }
        let copy = VipsImageRef(out)
        guard let fields = vips_image_get_fields(copy.pointer) else { return copy }
        defer { g_strfreev(fields) }
        var index = 0
        while let field = fields[index] {
            if String(cString: field) != "icc-profile-data" { _ = vips_image_remove(copy.pointer, field) }
            index += 1
        }
        return copy
    }

    /// Packed 8-bit RGB rows (no padding) as a libvips image, labelled sRGB (raw memory would
    /// otherwise read as multiband): a poster frame from libswscale, a thumbnail from libjpeg-turbo.
    static func rgbImage(_ pixels: UnsafeRawBufferPointer, width: Int, height: Int) throws(Reason) -> VipsImageRef {
        guard let image = vips_image_new_from_memory_copy(pixels.baseAddress, pixels.count, Int32(width), Int32(height), 3, VIPS_FORMAT_UCHAR) else {
            throw failure("take the pixels")
        }
        let unlabelled = VipsImageRef(image)
        var labelled: UnsafeMutablePointer<VipsImage>?
        guard af_vips_copy_interpretation(unlabelled.pointer, &labelled, VIPS_INTERPRETATION_sRGB) == 0, let labelled else {
            throw failure("take the pixels")
        }
        return VipsImageRef(labelled)
    }

    /// Runs `decode` (which loads with the `VipsFailOn` it is given, and renders) under the one
    /// JPEG decode policy both paths share. libvips' `fail_on=error` refuses a file cut short at
    /// its end but lets libjpeg's warnings through, among them "premature end of data segment":
    /// a scan that stops early and is followed by a marker (the rest of the photo decodes as
    /// grey). So a JPEG is decoded with `fail_on=warning`, as the libjpeg-turbo fast path stops
    /// on any warning; only when the warning that stopped it is "extraneous bytes before
    /// marker" (junk every decoder shows through) is it decoded again with `fail_on=error`.
    /// Other formats get `fail_on=error` (libpng's warnings about profiles and gamma are common
    /// and harmless).
    static func decodingUnderPolicy<T>(isJPEG: Bool, _ decode: (VipsFailOn) throws(Reason) -> T) throws(Reason) -> T {
        guard isJPEG else { return try decode(VIPS_FAIL_ON_ERROR) }
        do throws(Reason) {
            return try decode(VIPS_FAIL_ON_WARNING)
        } catch {
            guard error.code == .corruptMedia, error.message.contains("extraneous bytes before marker"),
                  !error.message.contains("premature end") else { throw error }
            return try decode(VIPS_FAIL_ON_ERROR)
        }
    }

    /// Empties libvips' error buffer before a job, so its messages are only that job's.
    static func clearError() { vips_error_clear() }

    /// libvips' error buffer as text, cleared for the next caller. `vips_error_buffer_copy`
    /// copies and clears under libvips' own lock (reading `vips_error_buffer()` directly races
    /// with other threads writing to it). The buffer is per process, so under concurrency a
    /// message may carry another thread's line too, or none: it is for diagnosis only.
    static func takeError() -> String {
        guard let copy = vips_error_buffer_copy() else { return "no detail from libvips" }
        defer { g_free(copy) }
        let text = String(cString: copy).trimmingTrailingNewlines()
        return text.isEmpty ? "no detail from libvips (the image is truncated or corrupt)" : text
    }
}

/// Owns one reference to a `VipsImage` and drops it on deinit.
final class VipsImageRef {
    package let pointer: UnsafeMutablePointer<VipsImage>

    init(_ pointer: UnsafeMutablePointer<VipsImage>) { self.pointer = pointer }

    deinit { g_object_unref(UnsafeMutableRawPointer(pointer)) }

    package var width: Int { Int(vips_image_get_width(pointer)) }
    package var height: Int { Int(vips_image_get_height(pointer)) }
    var hasAlpha: Bool { vips_image_hasalpha(pointer) != 0 }

    /// An integer header field, or nil when absent.
    func integer(_ name: String) -> Int? {
        var value: Int32 = 0
        guard vips_image_get_typeof(pointer, name) != 0, vips_image_get_int(pointer, name, &value) == 0 else { return nil }
        return Int(value)
    }

    /// A string header field, or nil when absent.
    package func string(_ name: String) -> String? {
        var value: UnsafePointer<CChar>?
        guard vips_image_get_typeof(pointer, name) != 0, vips_image_get_string(pointer, name, &value) == 0,
              let value else { return nil }
        return String(cString: value)
    }

    /// Whether libvips read this image with its JPEG loader.
    var isJPEG: Bool { string("vips-loader")?.hasPrefix("jpegload") == true }

    /// Whether the image carries an ICC profile that LittleCMS reads and that fits its bands
    /// (libvips' own test): a damaged one is taken as none, as libvips' loaders and browsers
    /// take it, so that converting through it never fails an image that decodes.
    var hasColourProfile: Bool {
        guard vips_image_get_typeof(pointer, "icc-profile-data") != 0 else { return false }
        var data: UnsafeRawPointer?
        var length = 0
        guard vips_image_get_blob(pointer, "icc-profile-data", &data, &length) == 0, let data, length > 0 else { return false }
        return vips_icc_is_compatible_profile(pointer, data, length) != 0
    }

    /// EXIF orientation 1...8, or 1 when absent.
    var orientation: Int {
        var value: Int32 = 1
        guard vips_image_get_typeof(pointer, "orientation") != 0,
              vips_image_get_int(pointer, "orientation", &value) == 0 else { return 1 }
        return (1...8).contains(value) ? Int(value) : 1
    }
}

extension String {
    func trimmingTrailingNewlines() -> String {
        var text = self
        while text.last == "\n" { text.removeLast() }
        return text
    }
}

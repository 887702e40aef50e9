import CTestSupport
import CVipsShims
import CVips
import Foundation
import Testing
import TestHelpers
@testable import AttachFetchMedia

/// The libjpeg-turbo fast path must make what the libvips path makes, and only take the JPEGs
/// it can treat the same way.
@Suite struct JPEGThumbnailerTests {
    /// The pipeline's default budgets (`AttachFetchConfiguration`); none is reached but the
    /// pixel budget, which one test lowers.
    static let limits = ThumbnailLimits(maxEdge: 320, maxPixels: 50_000_000, maxProgressivePixels: 16_000_000,
                                           maxAnimationFrames: 500, maxAnimationPixels: 100_000_000)

    /// A black JPEG of that size, written by libvips.
    static func blackJPEG(path: String, width: Int, height: Int, progressive: Bool) throws {
        struct NotWritten: Error {}
        try Vips.ensureStarted()
        guard af_test_write_black_jpeg(path, Int32(width), Int32(height), progressive ? 1 : 0) == 0 else { throw NotWritten() }
    }

    /// Raw 8-bit pixels of an image file, decoded by libvips.
    static func pixels(_ path: String) -> (width: Int, height: Int, bytes: [UInt8])? {
        guard let pointer = af_vips_image_new_from_file(path, VIPS_FAIL_ON_ERROR) else { return nil }
        let image = VipsImageRef(pointer)
        var size = 0
        guard let memory = vips_image_write_to_memory(image.pointer, &size) else { return nil }
        defer { g_free(memory) }
        return (image.width, image.height, [UInt8](UnsafeRawBufferPointer(start: memory, count: size)))
    }

    func bothPaths(_ source: String, shape: ThumbnailShape, in scratch: Scratch) throws -> (fast: ThumbnailOutcome, vips: ThumbnailOutcome) {
        let fast = try #require(JPEGThumbnailer.make(source: source, destinationBase: "\(scratch.path)/fast", shape: shape,
                                                    limits: Self.limits), "the fast path did not take \(source)").get()
        let vips = try Thumbnailer.makeWithLibvips(source: source, destinationBase: "\(scratch.path)/vips", shape: shape,
                                                  limits: Self.limits)
        return (fast, vips)
    }

    @Test(arguments: [ThumbnailShape.clip(.whole), .clip(try! ClippingRectangle(x: 0.1, y: 0.2, width: 0.5, height: 0.6)),
                      .squareCenter])
    func plainJPEGThumbnailMatchesLibvips(shape: ThumbnailShape) async throws {
        let scratch = Scratch()
        try Vips.ensureStarted()
        let (fast, vips) = try bothPaths("\(testMediaDirectory)/photo.jpg", shape: shape, in: scratch)
        #expect((fast.width, fast.height) == (vips.width, vips.height))
        #expect((fast.sourceWidth, fast.sourceHeight) == (480, 320))
        #expect(fileMode(fast.file) == 0o600)
        let a = try #require(Self.pixels(fast.file)), b = try #require(Self.pixels(vips.file))
        #expect((a.width, a.height) == (fast.width, fast.height))
        #expect(a.bytes.count == b.bytes.count)
        // Different resampling kernels and encoders: close, not identical.
        let difference = zip(a.bytes, b.bytes).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }
        let mean = Double(difference) / Double(max(1, a.bytes.count))
        #expect(mean < 4, "mean absolute difference \(mean)")
    }

    @Test(arguments: [(1000, 777), (4000, 3000), (321, 200), (100, 60)])
    func sizesMatchLibvipsForAnyScale(width: Int, height: Int) async throws {
        let scratch = Scratch()
        try Vips.ensureStarted()
        let source = "\(scratch.path)/plain.jpg"
        try Self.blackJPEG(path: source, width: width, height: height, progressive: false)
        let (fast, vips) = try bothPaths(source, shape: .clip(.whole), in: scratch)
        #expect((fast.width, fast.height) == (vips.width, vips.height), "\(width)x\(height)")
    }

    @Test func otherJPEGsGoToLibvips() async throws {
        let scratch = Scratch()
        try Vips.ensureStarted()
        let progressive = "\(scratch.path)/progressive.jpg"
        try Self.blackJPEG(path: progressive, width: 640, height: 480, progressive: true)
        // Orientation tag, progressive scan, not a JPEG at all.
        for source in ["\(testMediaDirectory)/rotated.jpg", progressive, "\(testMediaDirectory)/alpha.png"] {
            #expect(JPEGThumbnailer.make(source: source, destinationBase: "\(scratch.path)/x", shape: .clip(.whole),
                                         limits: Self.limits) == nil, "\(source)")
        }
        #expect(scratch.tree().filter { $0.hasPrefix("x") }.isEmpty)
    }

    /// One decode policy for JPEG: the fast path stops at libjpeg's warning ("premature end")
    /// and hands the file to libvips, whose verdict is corruptMedia; no thumbnail is made.
    @Test func truncatedJPEGIsCorruptOnTheFastPathToo() async throws {
        let scratch = Scratch()
        try Vips.ensureStarted()
        let source = "\(testMediaDirectory)/truncated.jpg"
        #expect(JPEGThumbnailer.make(source: source, destinationBase: "\(scratch.path)/t", shape: .clip(.whole), limits: Self.limits) == nil)
        let result = Thumbnailer.make(source: source, destinationBase: "\(scratch.path)/t", shape: .clip(.whole), limits: Self.limits)
        guard case .failure(let failure) = result else {
            Issue.record("a truncated JPEG made a thumbnail")
            return
        }
        #expect(failure.code == .corruptMedia)
        #expect(scratch.tree().filter { $0.hasPrefix("t") }.isEmpty)
    }

    @Test func pixelBudgetAppliesBeforeDecoding() async throws {
        let scratch = Scratch()
        try Vips.ensureStarted()
        var limits = Self.limits
        limits.maxPixels = 480 * 320 - 1
        let result = JPEGThumbnailer.make(source: "\(testMediaDirectory)/photo.jpg", destinationBase: "\(scratch.path)/p",
                                          shape: .clip(.whole), limits: limits)
        guard case .failure(let failure)? = result else {
            Issue.record("over the pixel budget, yet not refused")
            return
        }
        #expect(failure.code == .pixelLimitExceeded)
    }
}

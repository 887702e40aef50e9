import CVipsShims
import CVips
import Foundation
import LoopbackHTTPServer
import Testing
@testable import AttachFetch
@testable import AttachFetchMedia

/// Normalizing: formats iOS would not show are converted, oversize images are fitted, and the
/// descriptor keeps the original's facts. Real libcurl, libmagic and libvips throughout.
@Suite struct NormalizeTests {
    /// Reads back what libvips sees in a delivered file.
    struct Decoded {
        var width: Int
        var height: Int
        var bands: Int
        var pages: Int
        var orientation: Int?
    }

    static func decode(_ path: String) -> Decoded? {
        // Only the GIF and WebP loaders take a page count.
        guard let pointer = path.hasSuffix(".gif") ? af_vips_image_new_from_file_all_pages(path, VIPS_FAIL_ON_ERROR)
                                                   : af_vips_image_new_from_file(path, VIPS_FAIL_ON_ERROR) else { return nil }
        let image = VipsImageRef(pointer)
        let pages = image.integer("n-pages") ?? 1
        let pageHeight = image.integer("page-height") ?? image.height
        return Decoded(width: image.width, height: pages > 1 ? pageHeight : image.height,
                       bands: Int(vips_image_get_bands(pointer)), pages: pages, orientation: image.integer("orientation"))
    }

    /// The delivered file is what the descriptor says: type by libmagic, size, digest, pixels.
    func expectDeliveredFileMatches(_ d: AttachmentDescriptor, _ expected: MediaType) throws -> Decoded {
        let path = try #require(d.file)
        #expect(path.hasSuffix("." + expected.fileExtension))
        #expect(d.mimeType == expected.mimeType)
        #expect(d.uti == expected.uti)
        #expect(d.bytes == fileSize(path))
        #expect(try sha256sum(path) == d.sha256)
        #expect(fileMode(path) == 0o400)
        let decoded = try #require(Self.decode(path), "libvips cannot read \(path)")
        #expect(decoded.width == d.width && decoded.height == d.height)
        return decoded
    }

    @Test(arguments: [("image.webp", "image/webp", 160, 120), ("image.heic", "image/heic", 480, 320),
                      ("image.avif", "image/avif", 480, 320)])
    func stillFormatsIOSDoesNotShowBecomeJPEG(file: String, sourceMIME: String, width: Int, height: Int) async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                let d = await fetchOne("\(server.baseURL)/media/\(file)", pipeline)
                #expect(d.status == .ready, "\(d.reason?.message ?? "")")
                let decoded = try expectDeliveredFileMatches(d, .jpeg)
                #expect(decoded.bands == 3)
                #expect(d.transforms == [.transcoded])
                #expect(d.sourceMimeType == sourceMIME)
                #expect(d.sourceBytes == fileSize("\(testMediaDirectory)/\(file)"))
                #expect(d.sourceWidth == width && d.sourceHeight == height)
                #expect(d.width == width && d.height == height)
                #expect(d.thumbnail != nil)
                #expect(d.timings.normalize != nil)
                // Only the delivered file and its thumbnail are left.
                #expect(scratch.tree().filter { !$0.hasSuffix("/") }.count == 3)
            }
        }
    }

    @Test func transparencyIsKeptAsPNG() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                let d = await fetchOne("\(server.baseURL)/media/alpha.webp", pipeline)
                #expect(d.status == .ready, "\(d.reason?.message ?? "")")
                let decoded = try expectDeliveredFileMatches(d, .png)
                #expect(decoded.bands == 4)
                #expect(d.transforms == [.transcoded])
                #expect(d.width == 200 && d.height == 100)
            }
        }
    }

    @Test func animatedWebPBecomesAnAnimatedGIFOrItsFirstFrameWhenThatDoesNotFit() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                let d = await fetchOne("\(server.baseURL)/media/animated.webp", pipeline)
                #expect(d.status == .ready, "\(d.reason?.message ?? "")")
                let decoded = try expectDeliveredFileMatches(d, .gif)
                #expect(decoded.pages == 5)
                #expect(d.transforms == [.transcoded])
                #expect(d.width == 160 && d.height == 120)
                let gifBytes = try #require(d.bytes)

                // An image limit under the GIF's size: the first frame, as a JPEG.
                let small = Scratch()
                try await withPipeline(small, { $0.sizeLimits.image = gifBytes - 1 }) { strict in
                    let still = await fetchOne("\(server.baseURL)/media/animated.webp", strict)
                    #expect(still.status == .ready, "\(still.reason?.message ?? "")")
                    let frame = try expectDeliveredFileMatches(still, .jpeg)
                    #expect(frame.pages == 1)
                    #expect(still.width == 160 && still.height == 120)
                }
            }
        }
    }

    /// The issue's case: a 20 MB PNG must come back under 10 MiB, aspect ratio kept.
    @Test(arguments: [3, 4])
    func twentyMegabytePNGComesBackUnderTheImageLimit(bands: Int) async throws {
        let media = Scratch()
        let side = bands == 3 ? 2_600 : 2_300
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try writeNoiseImage(path: "\(media.path)/big.png", width: side, height: side * 3 / 4, png: bands)
            let sourceBytes = fileSize("\(media.path)/big.png")
            #expect(sourceBytes > 15_000_000)
            try await withMediaServer(directory: media.path) { server in
                let d = await fetchOne("\(server.baseURL)/media/big.png", pipeline)
                #expect(d.status == .ready, "\(d.reason?.message ?? "")")
                // Opaque: a JPEG; with transparency: still a PNG, smaller.
                let decoded = try expectDeliveredFileMatches(d, bands == 3 ? .jpeg : .png)
                let bytes = try #require(d.bytes)
                #expect(bytes <= 10_485_760)
                #expect(d.sourceBytes == sourceBytes)
                #expect(d.sourceMimeType == "image/png")
                #expect(d.sourceWidth == side && d.sourceHeight == side * 3 / 4)
                #expect(decoded.bands == bands)
                let width = try #require(d.width), height = try #require(d.height)
                // Named first: inside #expect's expansion, the arithmetic took seconds to type-check.
                let ratio = Double(width) / Double(height)
                #expect(abs(ratio - 4.0 / 3.0) < 0.01, "\(width)x\(height)")
                let fitted: [AttachmentDescriptor.Transform] = bands == 3 ? [.transcoded, .downscaled] : [.reencoded, .downscaled]
                #expect(d.transforms == fitted || d.transforms == [.transcoded], "\(d.transforms ?? [])")
                if bands == 4 { #expect(d.transforms?.contains(.downscaled) == true) }
            }
        }
    }

    @Test func oversizeJPEGIsReencodedWithItsOrientationApplied() async throws {
        let media = Scratch()
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            // Stored 3000x2000, EXIF orientation 6: displayed 2000x3000.
            try writeNoiseImage(path: "\(media.path)/big.jpg", width: 3_000, height: 2_000, jpegOrientation: 6)
            #expect(fileSize("\(media.path)/big.jpg") > 10_485_760)
            try await withMediaServer(directory: media.path) { server in
                let d = await fetchOne("\(server.baseURL)/media/big.jpg", pipeline)
                #expect(d.status == .ready, "\(d.reason?.message ?? "")")
                let decoded = try expectDeliveredFileMatches(d, .jpeg)
                #expect(d.transforms?.first == .reencoded)
                #expect(d.sourceWidth == 2_000 && d.sourceHeight == 3_000)
                // Turned in the pixels; no orientation tag left to turn it again.
                let width = try #require(d.width), height = try #require(d.height)
                #expect(height > width)
                let ratio = Double(width) / Double(height)
                #expect(abs(ratio - 2.0 / 3.0) < 0.01)
                #expect(decoded.orientation == nil || decoded.orientation == 1)
                #expect((d.bytes ?? .max) <= 10_485_760)
            }
        }
    }

    @Test func attemptsAreBoundedAndFailingToFitIsASizeLimit() async throws {
        let media = Scratch()
        let scratch = Scratch()
        // One attempt at full size cannot fit 20 MB of noise into 1 MB.
        try await withPipeline(scratch, { $0.sizeLimits.image = 1_000_000; $0.maxNormalizeAttempts = 1 }) { pipeline in
            try writeNoiseImage(path: "\(media.path)/big.png", width: 2_600, height: 1_950, png: 3)
            try await withMediaServer(directory: media.path) { server in
                let d = await fetchOne("\(server.baseURL)/media/big.png", pipeline)
                #expect(d.status == .rejected)
                #expect(d.reason?.code == .sizeLimitExceeded)
                #expect(d.reason?.message.contains("in 1 attempts") == true, "\(d.reason?.message ?? "")")
                #expect(scratch.tree() == [])
            }
        }
    }

    @Test func normalizingOffKeepsStrictLimits() async throws {
        let media = Scratch()
        let scratch = Scratch()
        try await withPipeline(scratch, { $0.normalize = false }) { pipeline in
            try writeNoiseImage(path: "\(media.path)/big.png", width: 2_600, height: 1_950, png: 3)
            try await withMediaServer(directory: media.path) { server in
                let d = await fetchOne("\(server.baseURL)/media/big.png", pipeline)
                #expect(d.reason?.code == .sizeLimitExceeded)
                #expect(d.reason?.message.contains("image limit of 10485760") == true, "\(d.reason?.message ?? "")")
                let photo = await fetchOne("\(server.baseURL.replacingOccurrences(of: "big", with: ""))/media/big.png?length=none", pipeline)
                #expect(photo.reason?.code == .sizeLimitExceeded)
                #expect(scratch.tree() == [])
            }
        }
    }
}

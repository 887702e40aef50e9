import Foundation
import LoopbackHTTPServer
import Testing
@testable import AttachFetch

@Suite struct ThumbnailTests {
    @Test func thumbnailFitsTheLongestEdgeAndKeepsTheAspect() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                let d = await fetchOne("\(server.baseURL)/media/photo.jpg", pipeline) // 480x320
                #expect(d.width == 480 && d.height == 320)
                let thumbnail = try #require(d.thumbnail)
                #expect(thumbnail.width == 320 && thumbnail.height == 213)
                #expect(thumbnail.file.hasSuffix(".thumb.jpg"))
                let onDisk = try #require(imageSize(thumbnail.file))
                #expect(onDisk.width == thumbnail.width && onDisk.height == thumbnail.height)
                #expect(fileMode(thumbnail.file) == 0o400)
            }
        }
    }

    @Test func thumbnailSizeIsConfigurable() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch, { $0.thumbnailMaxEdge = 96 }) { pipeline in
            try await withMediaServer { server in
                let d = await fetchOne("\(server.baseURL)/media/photo.jpg", pipeline)
                #expect(d.thumbnail?.width == 96 && d.thumbnail?.height == 64)
            }
        }
    }

    @Test func smallImagesAreNotEnlarged() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                let d = await fetchOne("\(server.baseURL)/media/animated.gif", pipeline) // 160x120
                #expect(d.thumbnail?.width == 160 && d.thumbnail?.height == 120)
                // The GIF's first frame, written as JPEG (no alpha in this GIF).
                #expect(d.thumbnail?.file.hasSuffix(".jpg") == true)
            }
        }
    }

    @Test(arguments: [
        // (x, y, w, h) of 480x320, maxEdge 100 -> expected thumbnail size
        (0.0, 0.0, 0.5, 1.0, 75, 100),   // left half: 240x320 -> 75x100
        (0.25, 0.25, 0.5, 0.5, 100, 67), // center: 240x160 -> 100x67
        (0.0, 0.0, 1.0, 0.25, 100, 17),  // top strip: 480x80 -> 100x17
    ])
    func clippingRectangleSetsTheRegionAndItsAspect(x: Double, y: Double, w: Double, h: Double,
                                                    width: Int, height: Int) async throws {
        let scratch = Scratch()
        try await withPipeline(scratch, { $0.thumbnailMaxEdge = 100 }) { pipeline in
            try await withMediaServer { server in
                let clip = try ClippingRectangle(x: x, y: y, width: w, height: h)
                let d = await fetchOne("\(server.baseURL)/media/photo.jpg", pipeline, clip: clip)
                let thumbnail = try #require(d.thumbnail)
                #expect(abs(thumbnail.width - width) <= 1 && abs(thumbnail.height - height) <= 1,
                        "got \(thumbnail.width)x\(thumbnail.height)")
                let onDisk = try #require(imageSize(thumbnail.file))
                #expect(onDisk.width == thumbnail.width && onDisk.height == thumbnail.height)
                // The original's size is reported, not the clip's.
                #expect(d.width == 480 && d.height == 320)
            }
        }
    }

    @Test func clipShowsTheRightPartOfTheImage() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                // alpha.png is uniformly red at half opacity; a clip must keep alpha and colour.
                let clip = try ClippingRectangle(x: 0.5, y: 0, width: 0.5, height: 1)
                let d = await fetchOne("\(server.baseURL)/media/alpha.png", pipeline, clip: clip)
                let thumbnail = try #require(d.thumbnail)
                #expect(thumbnail.file.hasSuffix(".thumb.png"))
                #expect(thumbnail.width == 100 && thumbnail.height == 100)
            }
        }
    }

    @Test func exifOrientationIsApplied() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                // Stored 1000x500 with orientation 6: displayed (and reported) as 500x1000.
                let d = await fetchOne("\(server.baseURL)/media/rotated.jpg", pipeline)
                #expect(d.width == 500 && d.height == 1000)
                #expect(d.thumbnail?.width == 160 && d.thumbnail?.height == 320)
            }
        }
    }

    @Test func invalidClippingRectanglesAreRefused() {
        #expect(throws: AttachFetchError.self) { try ClippingRectangle(x: 0.5, y: 0, width: 0.6, height: 1) }
        #expect(throws: AttachFetchError.self) { try ClippingRectangle(x: 0, y: 0, width: 0, height: 1) }
        #expect(throws: AttachFetchError.self) { try ClippingRectangle(x: -0.1, y: 0, width: 0.5, height: 1) }
        #expect(throws: AttachFetchError.self) { try ClippingRectangle(x: .nan, y: 0, width: 0.5, height: 1) }
    }

    @Test func truncatedJPEGIsDecodedNotJustSniffed() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                let d = await fetchOne("\(server.baseURL)/media/truncated.jpg", pipeline)
                #expect(d.kind == .image) // libmagic says JPEG ...
                #expect(d.reason?.code == .corruptMedia) // ... decoding it in full proves it is not whole.
                #expect(d.reason?.message.contains("cannot decode the image") == true, "\(d.reason?.message ?? "")")
            }
        }
    }
}

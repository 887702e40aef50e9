import Foundation
import LoopbackHTTPServer
import Testing
@testable import AttachFetch

/// Every supported TestMedia file, through a real server, libcurl, libmagic and libvips.
@Suite struct MediaTableTests {
    static let supported: [(file: String, type: MediaType)] = [
        ("photo.jpg", .jpeg), ("rotated.jpg", .jpeg), ("alpha.png", .png), ("animated.gif", .gif),
        ("tone.mp3", .mp3), ("tone.wav", .wav), ("tone.aiff", .aiff), ("tone.m4a", .m4a),
        ("clip.mp4", .mp4), ("clip.mpg", .mpeg), ("clip.avi", .avi),
    ]

    @Test(arguments: supported.map(\.file))
    func supportedFileIsReady(file: String) async throws {
        let expected = try #require(Self.supported.first { $0.file == file }?.type)
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                let url = "\(server.baseURL)/media/\(file)"
                let started = ContinuousClock.now
                let d = await fetchOne(url, pipeline)
                let elapsed = ContinuousClock.now - started
                #expect(d.status == .ready, "\(d.reason?.message ?? "")")
                #expect(d.reason == nil)
                #expect(d.url == url)
                #expect(d.mimeType == expected.mimeType)
                #expect(d.kind == expected.kind)
                #expect(d.uti == expected.uti)
                #expect(d.fileExtension == expected.fileExtension)
                let path = try #require(d.file)
                #expect(path.hasSuffix(".\(expected.fileExtension)"))
                #expect(path.hasPrefix("/"))
                let original = "\(testMediaDirectory)/\(file)"
                #expect(d.bytes == fileSize(original))
                #expect(FileManager.default.contentsEqual(atPath: path, andPath: original))
                let expectedDigest = try await offPool { try sha256sum(original) }
                #expect(d.sha256 == expectedDigest)
                #expect(fileMode(path) == 0o400)
                // The total runs from the batch's start: it holds the download and ends within the call.
                let download = try #require(d.timings.download, "a fresh download is timed")
                #expect(d.timings.total >= download && .milliseconds(d.timings.total) <= elapsed + .milliseconds(1),
                        "total \(d.timings.total) ms, download \(download) ms, call \(elapsed)")
                #expect(d.kind == .image ? d.timings.thumbnail != nil : d.timings.probe != nil, "the decode stage is timed")
                // Delivered as downloaded.
                #expect(d.transforms == [])
                #expect(d.sourceMimeType == expected.mimeType)
                #expect(d.sourceBytes == d.bytes)
                #expect(d.sourceWidth == d.width && d.sourceHeight == d.height)
                switch expected.kind {
                case .image, .video:
                    #expect(d.width != nil && d.height != nil)
                    #expect(d.thumbnail != nil)
                case .audio:
                    #expect(d.thumbnail == nil)
                    #expect(d.width == nil)
                    #expect(d.videoCodec == nil)
                    #expect(d.audioCodec != nil)
                }
                if expected.kind != .image {
                    #expect(d.duration.map { $0 > 0.5 && $0 < 1.5 } == true, "duration \(String(describing: d.duration))")
                }
            }
        }
    }

    static let refused: [(file: String, code: ReasonCode)] = [
        ("document.pdf", .unsupportedType),
        ("error-page.html", .unsupportedType), ("random.bin", .unsupportedType),
        ("truncated.jpg", .corruptMedia), ("empty.bin", .emptyBody),
    ]

    @Test(arguments: refused.map(\.file))
    func refusedFileIsRejectedAndNothingIsKept(file: String) async throws {
        let expected = try #require(Self.refused.first { $0.file == file }?.code)
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                let batch = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/\(file)")])
                let d = batch.attachments[0]
                #expect(d.status == .rejected)
                #expect(d.reason?.code == expected, "\(d.reason?.message ?? "")")
                #expect(d.file == nil)
                #expect(d.thumbnail == nil)
                // Nothing at all is left behind: not the body, not the batch directory.
                #expect(batch.directory == nil)
                #expect(scratch.tree() == [])
            }
        }
    }

    /// With normalizing off, the convertible formats are refused as they were before it existed.
    @Test(arguments: ["image.webp", "image.heic", "image.avif", "animated.webp"])
    func convertibleFormatIsRefusedWithNormalizingOff(file: String) async throws {
        let scratch = Scratch()
        try await withPipeline(scratch, { $0.normalize = false }) { pipeline in
            try await withMediaServer { server in
                let batch = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/\(file)")])
                let d = batch.attachments[0]
                #expect(d.status == .rejected)
                #expect(d.reason?.code == .unsupportedType, "\(d.reason?.message ?? "")")
                #expect(d.reason?.message.contains("converting it is turned off") == true)
                #expect(d.file == nil)
                #expect(scratch.tree() == [])
            }
        }
    }

    @Test func sniffedTypeBeatsContentTypeAndURL() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                // A JPEG served as text/plain is a JPEG ...
                let jpeg = await fetchOne("\(server.baseURL)/media/photo.jpg?type=text/plain", pipeline)
                #expect(jpeg.status == .ready)
                #expect(jpeg.mimeType == "image/jpeg")
                #expect(jpeg.declaredMimeType == "text/plain")
                // ... and an HTML error page served as image/jpeg, behind a .jpg-looking URL, is not.
                let html = await fetchOne("\(server.baseURL)/media/error-page.html?type=image/jpeg&fake=.jpg", pipeline)
                #expect(html.status == .rejected)
                #expect(html.reason?.code == .unsupportedType)
                #expect(html.reason?.message.contains("text/html") == true)
                #expect(html.declaredMimeType == "image/jpeg")
            }
        }
    }

    @Test func savedFileGetsTheSniffedExtensionNotTheURLs() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                // tone.mp3 reached through a redirect from a path ending in .png
                let d = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/redirect/1/media/tone.mp3?x=.png",
                                                                  identifier: "song")]).attachments[0]
                #expect(d.status == .ready)
                #expect(d.file?.hasSuffix("/song.mp3") == true)
            }
        }
    }
}

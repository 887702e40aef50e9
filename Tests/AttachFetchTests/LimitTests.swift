import Foundation
import LoopbackHTTPServer
import Testing
@testable import AttachFetch

/// Size limits are enforced while streaming: the server counts what it managed to send.
@Suite struct LimitTests {
    static let imageLimit: Int64 = 10_485_760

    @Test func bodyGrowingPastTheLimitIsCutOffAtTheLimit() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch, { $0.normalize = false }) { pipeline in
            try await withMediaServer { server in
                // 40 MB that sniffs as JPEG, with no Content-Length: only streaming can catch it.
                let d = await fetchOne("\(server.baseURL)/synth/photo.jpg?bytes=40000000&length=none&tag=big", pipeline)
                #expect(d.status == .rejected)
                #expect(d.reason?.code == .sizeLimitExceeded, "\(d.reason?.message ?? "")")
                let sent = server.counter("big")
                #expect(sent >= Int(Self.imageLimit) - 1_000_000)
                // Cut off at the limit, give or take the kernel's socket buffers.
                #expect(sent < Int(Self.imageLimit) + 4_000_000, "server sent \(sent) bytes")
                #expect(scratch.tree() == [])
            }
        }
    }

    @Test func declaredLengthAboveEveryLimitIsRefusedBeforeTheBody() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                let d = await fetchOne("\(server.baseURL)/synth/clip.mp4?bytes=60000000&tag=huge", pipeline)
                #expect(d.reason?.code == .sizeLimitExceeded)
                #expect(d.reason?.message.contains("60000000") == true)
                #expect(server.counter("huge") < 2_000_000, "server sent \(server.counter("huge")) bytes")
            }
        }
    }

    /// Normalizing on: an image may stream up to the source limit (to be fitted), not past it.
    @Test func imageGrowingPastTheSourceLimitIsCutOffThere() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            let sourceLimit = AttachFetchConfiguration().sizeLimits.imageSource
            #expect(sourceLimit == 41_943_040)
            try await withMediaServer { server in
                let d = await fetchOne("\(server.baseURL)/synth/photo.jpg?bytes=60000000&length=none&tag=src", pipeline)
                #expect(d.reason?.code == .sizeLimitExceeded, "\(d.reason?.message ?? "")")
                #expect(d.reason?.message.contains("image source limit of 41943040") == true)
                let sent = server.counter("src")
                #expect(sent >= Int(sourceLimit) - 1_000_000)
                #expect(sent < Int(sourceLimit) + 4_000_000, "server sent \(sent) bytes")
                // A declared length over it is refused at the first chunk.
                let declared = await fetchOne("\(server.baseURL)/synth/photo.jpg?bytes=45000000&tag=decl", pipeline)
                #expect(declared.reason?.code == .sizeLimitExceeded)
                #expect(server.counter("decl") < 2_000_000, "server sent \(server.counter("decl")) bytes")
                #expect(scratch.tree() == [])
            }
        }
    }

    @Test func declaredLengthAboveTheSniffedKindsLimitIsRefusedAtTheFirstChunk() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch, { $0.normalize = false }) { pipeline in
            try await withMediaServer { server in
                // 20 MB is under the video limit (so libcurl lets it start) but over the image limit.
                let d = await fetchOne("\(server.baseURL)/synth/photo.jpg?bytes=20000000&tag=img", pipeline)
                #expect(d.reason?.code == .sizeLimitExceeded)
                #expect(d.reason?.message.contains("image limit") == true)
                #expect(d.kind == .image)
                #expect(server.counter("img") < 2_000_000, "server sent \(server.counter("img")) bytes")
                // The same size as a video is fine.
                let video = await fetchOne("\(server.baseURL)/synth/clip.mp4?bytes=20000000", pipeline)
                #expect(video.status == .ready)
                #expect(video.bytes == 20_000_000)
            }
        }
    }

    @Test func unsupportedTypeIsAbortedAtTheFirstChunk() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                let d = await fetchOne("\(server.baseURL)/synth/document.pdf?bytes=30000000&type=image/jpeg&tag=pdf", pipeline)
                #expect(d.reason?.code == .unsupportedType)
                #expect(server.counter("pdf") < 2_000_000, "server sent \(server.counter("pdf")) bytes")
            }
        }
    }

    @Test func limitsAreConfigurablePerKind() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch, { $0.sizeLimits.image = 5_000; $0.sizeLimits.audio = 5_000; $0.normalize = false }) { pipeline in
            try await withMediaServer { server in
                let photo = await fetchOne("\(server.baseURL)/media/photo.jpg", pipeline) // 10,150 bytes
                #expect(photo.reason?.code == .sizeLimitExceeded)
                let wav = await fetchOne("\(server.baseURL)/media/tone.wav?length=none", pipeline) // 16,044 bytes
                #expect(wav.reason?.code == .sizeLimitExceeded)
                let png = await fetchOne("\(server.baseURL)/media/alpha.png", pipeline) // 359 bytes
                #expect(png.status == .ready)
                let video = await fetchOne("\(server.baseURL)/media/clip.avi", pipeline) // video limit untouched
                #expect(video.status == .ready)
            }
        }
    }

    @Test func exactlyAtTheLimitIsAccepted() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch, { $0.sizeLimits.video = 1_000_000 }) { pipeline in
            try await withMediaServer { server in
                let at = await fetchOne("\(server.baseURL)/synth/clip.mp4?bytes=1000000&length=none", pipeline)
                #expect(at.status == .ready)
                #expect(at.bytes == 1_000_000)
                let over = await fetchOne("\(server.baseURL)/synth/clip.mp4?bytes=1000001&length=none", pipeline)
                #expect(over.reason?.code == .sizeLimitExceeded)
            }
        }
    }

    @Test func pixelLimitIsCheckedBeforeDecoding() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch, { $0.maxImagePixels = 480 * 320 - 1 }) { pipeline in
            try await withMediaServer { server in
                let d = await fetchOne("\(server.baseURL)/media/photo.jpg", pipeline)
                #expect(d.reason?.code == .pixelLimitExceeded)
                #expect(d.status == .rejected)
                #expect(scratch.tree() == [])
            }
        }
    }
}

import Foundation
import Testing
@testable import AttachFetch

/// An AVIF image sequence (`ftyp` brand `avis`: what libavif and FFmpeg write for an animated
/// AVIF) is delivered as an animated GIF too large for the image limit is: an H.264 video of
/// the same frames and timing. libheif reads no sequence; FFmpeg's MPEG-4 demuxer and libdav1d
/// do. A valid sequence is never `corruptMedia`.
@Suite struct AnimatedAVIFTests {
    /// 20 frames at 10 a second, AV1 in an AVIF sequence, made by FFmpeg's AVIF muxer.
    static func makeSequence(_ directory: String) throws -> String {
        let path = "\(directory)/moving.avif"
        let made = try tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i",
                                                "testsrc2=size=320x240:rate=10:duration=2", "-c:v", "libaom-av1", "-cpu-used", "8",
                                                "-pix_fmt", "yuv420p", "-f", "avif", path])
        try #require(made.status == 0, "ffmpeg: \(made.errors)")
        return path
    }

    @Test func anAVIFSequenceBecomesAVideoOfTheSameFrames() async throws {
        let media = Scratch(), scratch = Scratch()
        let source = try await offPool { try Self.makeSequence(media.path) }
        let brand = try Data(contentsOf: URL(fileURLWithPath: source))[8..<12]
        try #require(String(decoding: brand, as: UTF8.self) == "avis", "the source must be an AVIF sequence")
        try await withPipeline(scratch, { $0.platforms = [.ios, .android] }) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let d = await fetchOne("\(server.baseURL)/media/moving.avif", pipeline)
                #expect(d.status == .ready, "\(d.reason?.code.rawValue ?? ""): \(d.reason?.message ?? "")")
                #expect(d.kind == .video && d.mimeType == "video/mp4" && d.sourceMimeType == "image/avif", "\(d.kind) \(d.mimeType ?? "")")
                #expect(d.transforms == [.transcoded] && d.sourceVideoCodec == "AV1" && d.videoCodec == "h264",
                        "\(d.transforms ?? []) \(d.sourceVideoCodec ?? "-")")
                let file = try #require(d.file)
                let made = try await AnimationAsVideoTests.frames(file), original = try await AnimationAsVideoTests.frames(source)
                #expect(original.count == 20 && made.count == original.count, "\(made.count) frames of \(original.count)")
                #expect(d.duration.map { abs($0 - 2) <= 0.15 } == true, "\(d.duration ?? -1) s for 2 s")
                let android = try #require(d.variants?["android"], "an Android variant")
                #expect(android.mimeType == "image/jpeg" && android.file != nil, "\(android)")
            }
        }
    }

    @Test func withTranscodingOffASequenceIsRefusedSayingWhy() async throws {
        let media = Scratch(), scratch = Scratch()
        _ = try await offPool { try Self.makeSequence(media.path) }
        try await withPipeline(scratch, { $0.transcode = false }) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let d = await fetchOne("\(server.baseURL)/media/moving.avif", pipeline)
                #expect(d.status == .rejected && d.reason?.code == .unsupportedType
                        && d.reason?.message.contains("transcoding is off") == true, "\(d.reason?.code.rawValue ?? "ready"): \(d.reason?.message ?? "")")
            }
        }
        #expect(scratch.tree() == [], "\(scratch.tree())")
    }
}

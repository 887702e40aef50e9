import Foundation
import Testing
@testable import AttachFetch

/// An animated GIF that does not fit the image limit with all its frames keeps moving: it
/// becomes an H.264 MPEG-4 video of the same frames and timing; its Android variant is a still.
@Suite struct AnimationAsVideoTests {
    /// 40 frames of noise at 10 frames a second: a GIF that does not compress.
    static func makeGIF(_ directory: String) throws -> String {
        let path = "\(directory)/big.gif"
        let made = try tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i",
                                                "cellauto=size=200x150:rate=10:rule=110:random_fill_ratio=0.5", "-t", "4", path])
        try #require(made.status == 0, "ffmpeg: \(made.errors)")
        return path
    }

    /// ffprobe's count of the frames of the first video stream, and the container's duration.
    static func frames(_ file: String) async throws -> (count: Int, duration: Double) {
        let read = try await tool("/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                                                 "stream=nb_read_frames:format=duration", "-of", "default=nw=1:nk=1", file])
        let values = read.output.split(separator: "\n").map(String.init)
        return (Int(values.first ?? "") ?? -1, Double(values.last ?? "") ?? -1)
    }

    @Test func aGIFOverTheLimitBecomesAVideoOfTheSameFramesAndItsAndroidVariantAStill() async throws {
        let media = Scratch(), scratch = Scratch()
        let source = try await offPool { try Self.makeGIF(media.path) }
        let limit = Int64(fileSize(source) / 3)
        try await withPipeline(scratch, { $0.sizeLimits.image = limit; $0.platforms = [.ios, .android] }) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let d = await fetchOne("\(server.baseURL)/media/big.gif", pipeline)
                #expect(d.status == .ready, "\(d.reason?.message ?? "")")
                #expect(d.kind == .video && d.mimeType == "video/mp4" && d.sourceMimeType == "image/gif", "\(d.kind) \(d.mimeType ?? "")")
                #expect(d.transforms == [.transcoded] && d.sourceVideoCodec == "GIF" && d.videoCodec == "h264",
                        "\(d.transforms ?? []) \(d.sourceVideoCodec ?? "-")")
                let file = try #require(d.file)
                let made = try await Self.frames(file), original = try await Self.frames(source)
                #expect(made.count == original.count, "\(made.count) frames of \(original.count)")
                #expect(abs(made.duration - original.duration) <= 0.3, "\(made.duration) s from \(original.duration) s")
                let read = try await VideoTranscodeTests.streams(file)
                #expect(["High", "Constrained Baseline"].contains(read["v.profile"]) && read["v.pix_fmt"] == "yuv420p", "\(read)")
                let boxes = try AudioTranscodeTests.topLevelBoxes(file)
                #expect((boxes.firstIndex(of: "moov") ?? .max) < (boxes.firstIndex(of: "mdat") ?? -1), "\(boxes)")
                let android = try #require(d.variants?["android"], "an Android variant")
                #expect(android.mimeType == "image/jpeg" && android.file != nil, "\(android)")
            }
        }
    }

    @Test func withoutTranscodingItsFirstFrameIsDeliveredAsAStillAsBefore() async throws {
        let media = Scratch(), scratch = Scratch()
        let source = try await offPool { try Self.makeGIF(media.path) }
        try await withPipeline(scratch, { $0.sizeLimits.image = Int64(fileSize(source) / 3); $0.transcode = false }) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let d = await fetchOne("\(server.baseURL)/media/big.gif", pipeline)
                #expect(d.status == .ready && d.kind == .image && d.mimeType != "image/gif", "\(d.mimeType ?? "") \(d.reason?.message ?? "")")
            }
        }
    }
}

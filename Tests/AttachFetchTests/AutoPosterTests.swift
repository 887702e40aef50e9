import Foundation
import Testing
@testable import AttachFetch

/// With no thumbnail time, a video's poster is the most telling frame of its first seconds
/// (`PosterChoice.swift`), on clips made with the `ffmpeg` program.
@Suite struct AutoPosterTests {
    /// A 3 s 640x360 H.264 clip of `ffmpeg`'s test pattern through `filter`.
    static func clip(_ path: String, source: String, filter: String?) throws {
        var arguments = ["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", source, "-t", "3"]
        if let filter { arguments += ["-vf", filter] }
        arguments += ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-y", path]
        let run = try tool("/usr/bin/ffmpeg", arguments)
        guard run.status == 0 else { throw PictureCropTests.ToolFailed(description: "ffmpeg: \(run.errors)") }
    }

    /// The mean of a file's pixels (`vips avg`).
    static func mean(_ path: String) throws -> Double {
        let run = try tool("/usr/bin/vips", ["avg", path])
        return try #require(Double(run.output.trimmingCharacters(in: .whitespacesAndNewlines)), "\(run.errors)")
    }

    /// A clip that fades in from black over its first 1.5 s gets a poster from after the fade,
    /// neither black nor dim, and says when; an explicit time of 0 still gets the first frame;
    /// a clip black throughout gets its first frame, and no error.
    @Test func aClipThatFadesInGetsAPosterFromAfterTheFade() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool {
            try Self.clip("\(media.path)/fade.mp4", source: "testsrc2=size=640x360:rate=30", filter: "fade=t=in:st=0:d=1.5")
            try Self.clip("\(media.path)/black.mp4", source: "color=c=black:size=640x360:rate=30", filter: nil)
        }
        try await withMediaServer(directory: media.path) { server in
            try await withPipeline(scratch) { pipeline in
                let auto = await fetchOne("\(server.baseURL)/media/fade.mp4", pipeline)
                #expect(auto.status == .ready, "\(auto.reason?.message ?? "")")
                let poster = try #require(auto.thumbnail)
                let time = try #require(poster.time)
                #expect(time >= 1.5 && time <= 2.1, "the poster is at \(time) s, not after the 1.5 s fade")
                let posterMean = try Self.mean(poster.file), posterDetail = try PictureCropTests.deviation(poster.file)
                let first = await fetchOne("\(server.baseURL)/media/fade.mp4?first", pipeline, thumbnailTime: 0)
                let firstPoster = try #require(first.thumbnail)
                #expect(firstPoster.time == 0)
                let firstMean = try Self.mean(firstPoster.file)
                print("fade-in clip: auto poster at \(time) s, mean \(posterMean), deviation \(posterDetail); at 0 s, mean \(firstMean)")
                #expect(posterMean > 60 && posterDetail > 30, "mean \(posterMean), deviation \(posterDetail)")
                #expect(firstMean < 10, "the first frame is black: \(firstMean)")
                let black = await fetchOne("\(server.baseURL)/media/black.mp4", pipeline)
                #expect(black.status == .ready && black.thumbnail?.time == 0, "\(String(describing: black.thumbnail)) \(black.reason?.message ?? "")")
            }
        }
    }
}

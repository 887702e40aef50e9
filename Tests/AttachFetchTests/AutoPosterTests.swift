import Foundation
import Testing
@testable import AttachFetch
@testable import AttachFetchMedia

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

    /// A first frame that is telling is the poster, with no search: here the first second is the
    /// test pattern at half contrast (a luma deviation of about 33, past `tellingDetail`) and
    /// the rest at full contrast (about 65), which a search would prefer by far more than its
    /// margin.
    @Test func aTellingFirstFrameIsThePosterWithoutASearch() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool {
            try Self.clip("\(media.path)/dimmer.mp4", source: "testsrc2=size=640x360:rate=30", filter: "eq=contrast=0.5:enable='lt(t,1)'")
        }
        try await withMediaServer(directory: media.path) { server in
            try await withPipeline(scratch) { pipeline in
                let auto = await fetchOne("\(server.baseURL)/media/dimmer.mp4", pipeline)
                #expect(auto.status == .ready, "\(auto.reason?.message ?? "")")
                let poster = try #require(auto.thumbnail)
                #expect(poster.time == 0, "the poster is at \(String(describing: poster.time)) s, not the telling first frame")
                let late = await fetchOne("\(server.baseURL)/media/dimmer.mp4?late", pipeline, thumbnailTime: 1.5)
                let latePoster = try #require(late.thumbnail)
                let (first, second) = (try PictureCropTests.deviation(poster.file), try PictureCropTests.deviation(latePoster.file))
                #expect(second > first + 2 * MediaProber.autoPosterMargin, "the later frame's deviation \(second) against the first's \(first)")
            }
        }
    }

    /// Between candidates, only a frame no other frame refers to is skipped, and only once the
    /// first frame is taken; a packet without a time is always decoded.
    @Test func framesBetweenCandidatesAreSkippedOnlyAfterTheFirst() {
        let search = MediaProber.PosterSearch()
        #expect(!search.skipsFrame(at: -0.5, hasPoster: false))
        #expect(!search.skipsFrame(at: nil, hasPoster: true))
        #expect(!search.skipsFrame(at: 0, hasPoster: true))
        #expect(search.skipsFrame(at: -0.1, hasPoster: true))
    }
}

import Foundation
import Testing
@testable import AttachFetch

extension DeadlineBoundSuites {
    /// A clip that cannot be transcoded whole before the deadline is delivered by the deadline
    /// as what was encoded by then: a playable start, `trimmed`, never cached.
    @Suite(.serialized) struct TranscodeDeadlineTests {
        @Test func aLong1080pClipUnderAShortDeadlineIsDeliveredTrimmedByTheDeadline() async throws {
            let media = Scratch(), scratch = Scratch()
            // MPEG-4 Part 2 in Matroska: quick to make here, transcoded like any WebM. 40 s of
            // 1080p at 15 frames a second take about 15 s to transcode on this machine's cores.
            try await offPool {
                try VideoTranscodeTests.make(media.path, "long.mkv", size: "1920x1080", seconds: 40, audio: true,
                                             ["-r", "15", "-c:v", "mpeg4", "-q:v", "6", "-c:a", "libvorbis"])
            }
            let deadline = 4.0
            try await withPipeline(scratch) { pipeline in
                try await withMediaServer(directory: media.path) { server in
                    let started = ContinuousClock.now
                    let d = await fetchOne("\(server.baseURL)/media/long.mkv", pipeline, deadline: .seconds(deadline))
                    let elapsed = (ContinuousClock.now - started).seconds
                    #expect(elapsed <= deadline + 0.25, "answered after \(elapsed) s under a \(deadline) s deadline")
                    #expect(d.status == .ready, "\(d.reason?.code.rawValue ?? "") \(d.reason?.message ?? "")")
                    #expect(d.transforms == [.transcoded, .trimmed], "\(d.transforms ?? [])")
                    #expect(d.skippedAtDeadline?.contains("transcode") == true, "\(d.skippedAtDeadline ?? [])")
                    let file = try #require(d.file)
                    let read = try await VideoTranscodeTests.streams(file)
                    let duration = try #require(Double(read["duration"] ?? ""))
                    #expect(duration > 0.5 && duration < 30, "\(duration) s of 40")
                    // A deadline this short sends the speed ladder to `ultrafast`, whose stream uses no
                    // tool past Constrained Baseline (libx264 names the profile by what it used).
                    #expect(read["v.codec_name"] == "h264" && ["High", "Main", "Constrained Baseline"].contains(read["v.profile"] ?? "")
                            && read["v.pix_fmt"] == "yuv420p", "\(read)")
                    let boxes = try AudioTranscodeTests.topLevelBoxes(file)
                    #expect((boxes.firstIndex(of: "moov") ?? .max) < (boxes.firstIndex(of: "mdat") ?? -1), "\(boxes)")
                    #expect(try await tool("/usr/bin/ffmpeg", ["-v", "error", "-xerror", "-i", file, "-f", "null", "-"]).status == 0)
                    #expect(d.thumbnail != nil, "a poster from the delivered start")
                    print("transcode budget: \(deadline) s deadline, answered at \(elapsed) s with \(duration) s of video")
                }
            }
        }
    }
}

import Foundation
import Testing
@testable import AttachFetch
@testable import AttachFetchMedia

extension DeadlineBoundSuites {
    /// End to end in a worker's code: a 1080p 4:4:4 clip far too long for its budget goes
    /// straight to the fastest preset (and is cut at the budget); one with time to spare keeps
    /// the first. Media's code alone, yet here: its budgets are real time, so it runs in
    /// `DeadlineBoundSuites`, the group `scripts/test.sh` runs alone on the cores.
    @Suite(.serialized) struct SpeedLadderBudgetTests {
        static let second: UInt64 = 1_000_000_000

        @Test func aTightBudgetChoosesTheFastestPresetAndARoomyOneTheFirst() async throws {
            let media = Scratch(), scratch = Scratch()
            try await offPool {
                // 60 s: a quiet 2-core machine made 20 s of it whole within the 3-s budget.
                try VideoTranscodeTests.make(media.path, "long.mp4", size: "1920x1080", seconds: 60, audio: false,
                                             ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv444p"])
                try VideoTranscodeTests.make(media.path, "short.mp4", size: "640x360", seconds: 2, audio: false,
                                             ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv444p"])
            }
            let tight = try await offPool {
                MediaTranscoder.transcode(source: "\(media.path)/long.mp4", type: .mp4, destinationBase: "\(scratch.path)/tight",
                                          limits: .init(maxBytes: 50 << 20, stopAt: TranscodeBudget.now() + 3 * Self.second))
            }
            let made = try tight.get()
            #expect(made.preset == "ultrafast" && made.trimmed && made.outOfTime, "\(made.preset ?? "") trimmed \(made.trimmed)")
            let roomy = try await offPool {
                MediaTranscoder.transcode(source: "\(media.path)/short.mp4", type: .mp4, destinationBase: "\(scratch.path)/roomy",
                                          limits: .init(maxBytes: 50 << 20, stopAt: TranscodeBudget.now() + 60 * Self.second))
            }
            let whole = try roomy.get()
            #expect(whole.preset == "veryfast" && !whole.trimmed, "\(whole.preset ?? "") trimmed \(whole.trimmed)")
            #expect(abs(whole.duration - 2) < 0.1, "\(whole.duration)")
        }

        /// A rung measured too slow hands the faster one the frames it was given, scaled and
        /// timed: the clip's start is not decoded twice (`replayedFrames`), and the file has
        /// every frame once, in order, from 0, with its sound beside it.
        @Test func aFasterRungStartsFromTheFramesTheMeasuredOneWasGiven() async throws {
            let media = Scratch(), scratch = Scratch()
            // MPEG-4 Part 2 decodes fast, so libx264's preset is most of the work. 360p, so that
            // what the measured rung is given fits the replay's 96 MiB (about 290 frames) on a
            // machine fast enough to give it 72 frames of 720p before the pace is read; 40 s,
            // so that the pace is read well before a budget of four tenths ends.
            try await offPool {
                try VideoTranscodeTests.make(media.path, "clip.mp4", size: "640x360", seconds: 40, audio: true,
                                             ["-c:v", "mpeg4", "-q:v", "4", "-c:a", "aac"])
            }
            let source = "\(media.path)/clip.mp4"
            let started = TranscodeBudget.now()
            let roomy = try await offPool {
                MediaTranscoder.transcode(source: source, type: .mp4, destinationBase: "\(scratch.path)/roomy",
                                          limits: .init(maxBytes: 50 << 20, stopAt: TranscodeBudget.now() + 120 * Self.second))
            }.get()
            let took = TranscodeBudget.now() - started
            #expect(roomy.preset == "veryfast" && roomy.replayedFrames == 0 && !roomy.trimmed)
            // Four tenths of what the first rung took: it cannot make the clip whole by then, even
            // with the machine 2.5 times less busy than when it was timed.
            let made = try await offPool {
                MediaTranscoder.transcode(source: source, type: .mp4, destinationBase: "\(scratch.path)/tight",
                                          limits: .init(maxBytes: 50 << 20, stopAt: TranscodeBudget.now() + took * 4 / 10))
            }.get()
            #expect(made.preset != "veryfast" && made.replayedFrames > 0, "\(made.preset ?? "") replayed \(made.replayedFrames)")
            let times = try await tool("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time",
                                                            "-of", "csv=p=0", made.file]).output
                .split(separator: "\n").compactMap { Double($0) }.sorted()
            // 25 frames a second: 1,000 when whole; when cut, as many as the video stream's own
            // seconds (the sound may run a frame or two past its last picture).
            let videoSeconds = try await tool("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=duration",
                                                                   "-of", "csv=p=0", made.file]).output
            let expected = made.trimmed ? Int(((Double(videoSeconds.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) * 25).rounded()) : 1_000
            #expect(abs(times.count - expected) <= 1 && times.first == 0, "\(times.count) frames of \(expected), first \(times.first ?? -1)")
            let steps = zip(times.dropFirst(), times).map { $0 - $1 }
            #expect(steps.allSatisfy { abs($0 - 0.04) < 0.002 }, "a gap or a repeat: \(steps.filter { abs($0 - 0.04) >= 0.002 })")
            let streams = try await VideoTranscodeTests.streams(made.file)
            #expect(streams["v.codec_name"] == "h264" && streams["a.codec_name"] == "aac", "\(streams)")
            let audioStart = try await tool("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries", "stream=start_time,duration",
                                                                 "-of", "csv=p=0", made.file]).output
                .split(separator: ",").compactMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            #expect(audioStart.count == 2 && abs(audioStart[0]) < 0.001 && abs(audioStart[1] - made.duration) < 0.1, "\(audioStart)")
        }
    }
}

import Foundation
import Testing
@testable import AttachFetch
@testable import AttachFetchMedia

extension DeadlineBoundSuites {
    /// End to end in a worker's code: a 1080p 4:4:4 clip far too long for its budget goes
    /// straight to the fastest preset (and is cut at the budget); one with time to spare keeps
    /// the first.
    @Suite(.serialized) struct SpeedLadderBudgetTests {
        static let second: UInt64 = 1_000_000_000

        @Test func aTightBudgetChoosesTheFastestPresetAndARoomyOneTheFirst() async throws {
            let media = Scratch(), scratch = Scratch()
            try await offPool {
                try VideoTranscodeTests.make(media.path, "long.mp4", size: "1920x1080", seconds: 20, audio: false,
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
    }
}

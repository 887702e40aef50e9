import CFFmpeg
import Foundation
import Testing
@testable import AttachFetchMedia

/// The encoder's speed chosen from the budget and the rate measured on the clip (`SpeedLadder`).
@Suite struct SpeedLadderTests {
    static let second: UInt64 = 1_000_000_000

    /// A rung that keeps up is kept; one that lacks speed is left for the first rung whose
    /// speed-up covers what it lacks, or the last.
    @Test func theNextRungCoversWhatTheRateLacks() {
        #expect(SpeedLadder.rung(after: 0, lacking: 1.1) == 1)
        #expect(SpeedLadder.rung(after: 0, lacking: 1.2) == 2)
        #expect(SpeedLadder.rung(after: 0, lacking: 9) == 2)
        #expect(SpeedLadder.rung(after: 1, lacking: 1.01) == 2)
    }

    /// The pace is read once, on the steady rate from the window's start (0.2 s) to its end
    /// (0.6 s) or the first frame after it.
    @Test func thePaceIsProjectedFromTheSteadyRate() {
        // 300 frames to make, 10 s of budget; 30 frames a second measured: 10 s needed, 11 s with the margin.
        var slow = SpeedLadder.Pace(started: 0, stopAt: 10 * Self.second, frames: 300)
        #expect(slow.lacking(written: 0, now: Self.second / 10) == nil)  // before the window
        #expect(slow.lacking(written: 9, now: 3 * Self.second / 10) == nil)  // the window opens (0.2 s)
        let lacking = slow.lacking(written: 36, now: 12 * Self.second / 10)
        // (300 - 36) / 30 x 1.1 = 9.68 s needed, 8.8 s left.
        #expect(lacking.map { abs($0 - 9.68 / 8.8) < 0.01 } == true, "\(lacking ?? 0)")
        #expect(slow.lacking(written: 40, now: 13 * Self.second / 10) == nil, "decided once")
        // Twice the rate keeps up.
        var fast = SpeedLadder.Pace(started: 0, stopAt: 10 * Self.second, frames: 300)
        _ = fast.lacking(written: 18, now: 3 * Self.second / 10)
        #expect(fast.lacking(written: 72, now: 12 * Self.second / 10) == nil)
    }

    /// What is kept for a replay nears its limit (a source that decodes fast): the pace is
    /// read then, once the window has opened, and not before.
    @Test func aNearlyFullReplayReadsThePaceEarly() {
        var pace = SpeedLadder.Pace(started: 0, stopAt: 10 * Self.second, frames: 300)
        #expect(pace.lacking(written: 2, now: Self.second / 10, early: true) == nil)  // the window is not open
        #expect(pace.lacking(written: 6, now: 2 * Self.second / 10) == nil)  // it opens (0.2 s)
        // Too soon after it opened (libx264's packets come in bursts).
        #expect(pace.lacking(written: 8, now: 25 * Self.second / 100, early: true) == nil)
        // 30 frames a second: (300 - 12) / 30 x 1.1 = 10.56 s needed, 9.6 s left.
        let lacking = pace.lacking(written: 12, now: 4 * Self.second / 10, early: true)
        #expect(lacking.map { abs($0 - 10.56 / 9.6) < 0.01 } == true, "\(lacking ?? 0)")
    }

    /// A replay keeps frames by reference up to its bound; with more than half of it taken,
    /// there is no room for a second measurement's frames, and a switch goes to the last rung.
    @Test func aReplayKeepsFramesWithinItsBoundAndSaysWhenASecondMeasurementWouldNotFit() throws {
        let frame = try AVFrameBox()
        (frame.pointer.pointee.width, frame.pointer.pointee.height) = (1280, 720)
        frame.pointer.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        #expect(av_frame_get_buffer(frame.pointer, 64) >= 0)
        let replay = SpeedLadder.Replay()
        let frameBytes = 1280 * 720 * 3 / 2
        for _ in 0..<(SpeedLadder.Replay.limit / 2 / frameBytes) { try replay.keep(frame: frame.pointer) }
        #expect(replay.hasRoomForAsMuchAgain && !replay.isNearlyFull && replay.frames.count == 36)
        try replay.keep(frame: frame.pointer)
        #expect(!replay.hasRoomForAsMuchAgain)
        while !replay.isNearlyFull { try replay.keep(frame: frame.pointer) }
        #expect(!replay.overflowed && replay.frames.count == 69, "\(replay.frames.count)")
        // Past the bound nothing is kept: a faster rung starts from the clip's first frame.
        for _ in 0..<4 { try replay.keep(frame: frame.pointer) }
        #expect(replay.overflowed && replay.frames.isEmpty)
    }
}

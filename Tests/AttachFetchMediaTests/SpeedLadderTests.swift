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

    /// The pace is read once, on the steady rate between 0.3 s and 1.2 s of encoding.
    @Test func thePaceIsProjectedFromTheSteadyRate() {
        // 300 frames to make, 10 s of budget; 30 frames a second measured: 10 s needed, 11 s with the margin.
        var slow = SpeedLadder.Pace(started: 0, stopAt: 10 * Self.second, frames: 300)
        #expect(slow.lacking(written: 0, now: Self.second / 10) == nil)  // before the window
        #expect(slow.lacking(written: 9, now: 3 * Self.second / 10) == nil)  // the window opens (0.25 s)
        let lacking = slow.lacking(written: 36, now: 12 * Self.second / 10)
        // (300 - 36) / 30 x 1.1 = 9.68 s needed, 8.8 s left.
        #expect(lacking.map { abs($0 - 9.68 / 8.8) < 0.01 } == true, "\(lacking ?? 0)")
        #expect(slow.lacking(written: 40, now: 13 * Self.second / 10) == nil, "decided once")
        // Twice the rate keeps up.
        var fast = SpeedLadder.Pace(started: 0, stopAt: 10 * Self.second, frames: 300)
        _ = fast.lacking(written: 18, now: 3 * Self.second / 10)
        #expect(fast.lacking(written: 72, now: 12 * Self.second / 10) == nil)
    }
}

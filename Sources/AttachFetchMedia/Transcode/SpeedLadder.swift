/// How fast libx264 must go for a clip to be made whole by its budget's end: the presets, from
/// the default down, and the check that tells, from the rate measured on the clip itself,
/// whether the one in use will get there.
///
/// Why measured and not estimated: a preset's speed depends on the machine, its load, the
/// source's codec and the output size, and none of these is known ahead. The first rung encodes
/// for a moment; its steady rate (frames written between 0.25 s and 1 s, past the encoder's
/// start) is projected over the clip's frames. When the projection ends after the budget, the
/// transcode starts again on the rung that the speed it lacks points to (`rung(after:lacking:)`):
/// about 1 s lost a restart, where a clip that does not fit is cut short (`trimmed`).
enum SpeedLadder {
    /// libx264's presets, and how much faster than the first each made a whole transcode on
    /// this project's clips (decoding and scaling included, which no preset speeds up:
    /// docs/performance.md#transcoding).
    static let presets = ["veryfast", "superfast", "ultrafast"]
    static let speedups = [1.0, 1.15, 1.25]

    /// When the rate is measured: after `from` (the encoder's start) to `to`.
    static let from = 0.25, to = 1.0

    /// The rung to try after `rung` was measured `lacking` times too slow: the first whose
    /// speed-up covers it, or the last.
    static func rung(after rung: Int, lacking: Double) -> Int {
        let needed = speedups[rung] * lacking
        return speedups.indices.first { $0 > rung && speedups[$0] >= needed } ?? presets.count - 1
    }
    /// The projection must end this far inside the budget (flush, index, what the clock misses).
    static let margin = 1.1

    /// One rung's pace, read as frames are written.
    struct Pace {
        /// `CLOCK_MONOTONIC` nanoseconds when encoding began, and the budget's end.
        let started: UInt64
        let stopAt: UInt64
        /// Frames the clip is expected to hold (its stated duration at its frame rate).
        let frames: Double
        private var atFrom: (time: UInt64, written: Int)?
        private(set) var decided = false

        init(started: UInt64, stopAt: UInt64, frames: Double) {
            (self.started, self.stopAt, self.frames) = (started, stopAt, frames)
        }

        /// After a video frame is written (`written` so far): how many times too slow this
        /// rate is to make the clip whole by `stopAt` (a factor over 1), once; nil otherwise.
        mutating func lacking(written: Int, now: UInt64) -> Double? {
            guard !decided else { return nil }
            let elapsed = Double(now - started) / 1e9
            if atFrom == nil, elapsed >= SpeedLadder.from { atFrom = (now, written) }
            guard let atFrom, elapsed >= SpeedLadder.to, written > atFrom.written else { return nil }
            decided = true
            let rate = Double(written - atFrom.written) / (Double(now - atFrom.time) / 1e9)
            let needed = max(0, frames - Double(written)) / rate * SpeedLadder.margin
            let available = max(0.001, (Double(stopAt) - Double(now)) / 1e9)
            return needed > available ? needed / available : nil
        }
    }
}

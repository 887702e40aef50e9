internal import CFFmpeg

/// How fast libx264 must go for a clip to be made whole by its budget's end: the presets, from
/// the default down, and the check that tells, from the rate measured on the clip itself,
/// whether the one in use will get there.
///
/// Why measured and not estimated: a preset's speed depends on the machine, its load, the
/// source's codec and the output size, and none of these is known ahead. The first rung encodes
/// for a moment; its steady rate (frames written between `from` and `to`, past the encoder's
/// start) is projected over the clip's frames. When the projection ends after the budget, the
/// transcode goes on with the rung that the speed it lacks points to (`rung(after:lacking:)`),
/// where a clip that does not fit is cut short (`trimmed`). The new rung starts a new file
/// from the frames the measured one was given (`Replay`), so the clip's start is not decoded
/// and scaled twice.
enum SpeedLadder {
    /// libx264's presets, and how much faster than the first each made a whole transcode on
    /// this project's clips (decoding and scaling included, which no preset speeds up:
    /// docs/performance.md#transcoding).
    static let presets = ["veryfast", "superfast", "ultrafast"]
    static let speedups = [1.0, 1.15, 1.25]

    /// When the rate is measured: after `from` (the encoder's start) to `to`, in seconds. Short,
    /// because what the rung was given is kept until then (`Replay`) and the rung's slower
    /// encoding of it is lost.
    static let from = 0.2, to = 0.6
    /// The shortest window read early (`Pace.lacking`'s `early`): libx264's frame threads hand
    /// packets over in bursts, so a shorter one measures a burst.
    static let shortest = 0.15

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
        /// `early`: decide now if the window has been open `shortest` (what is kept for a replay
        /// is nearly full).
        mutating func lacking(written: Int, now: UInt64, early: Bool = false) -> Double? {
            guard !decided else { return nil }
            let elapsed = Double(now - started) / 1e9
            if atFrom == nil, elapsed >= SpeedLadder.from { atFrom = (now, written) }
            guard let atFrom, elapsed >= SpeedLadder.to || early && Double(now - atFrom.time) / 1e9 >= SpeedLadder.shortest,
                  written > atFrom.written else { return nil }
            decided = true
            let rate = Double(written - atFrom.written) / (Double(now - atFrom.time) / 1e9)
            let needed = max(0, frames - Double(written)) / rate * SpeedLadder.margin
            let available = max(0.001, (Double(stopAt) - Double(now)) / 1e9)
            return needed > available ? needed / available : nil
        }
    }

    /// What a rung being measured was given, kept so that a faster rung starts from it: the
    /// video frames as libx264 got them (scaled, timed) and the audio packets made. At most
    /// `limit` bytes of frames: the pace is read early when that nears, and if it cannot be
    /// yet, nothing is kept and a faster rung decodes the clip from its start again. Not
    /// thread-safe, not Sendable: one transcode's.
    final class Replay {
        /// 72 frames of 1280×720: a 1080p source decodes about 40 while a rung is measured
        /// (`to`) on a 2-core machine (docs/performance.md#transcoding).
        static let limit = 96 << 20
        private(set) var frames: [AVFrameBox] = []
        private(set) var audio: [AVPacketBox] = []
        private var bytes = 0, lastFrameBytes = 0
        private(set) var overflowed = false
        /// Room for a few frames more at most: the rung's pace is read now (`Pace.lacking`'s
        /// `early`), so that a source that decodes fast still gets its replay.
        var isNearlyFull: Bool { bytes + 4 * lastFrameBytes > Self.limit }
        /// Room for as much again: what a second measurement, on the next rung, would keep.
        /// Without it a switch goes to the last rung, which is not measured: a second
        /// measurement would outgrow `limit` and start the clip again from its first frame.
        var hasRoomForAsMuchAgain: Bool { 2 * bytes <= Self.limit }

        func keep(frame: UnsafeMutablePointer<AVFrame>) throws(Reason) {
            guard !overflowed else { return }
            let size = av_image_get_buffer_size(AVPixelFormat(rawValue: frame.pointee.format), frame.pointee.width, frame.pointee.height, 1)
            lastFrameBytes = Int(max(0, size))
            bytes += lastFrameBytes
            guard bytes <= Self.limit else {
                (overflowed, frames, audio) = (true, [], [])
                return
            }
            frames.append(try AVFrameBox(referencing: frame))
        }

        func keep(audio packet: UnsafeMutablePointer<AVPacket>) throws(Reason) {
            guard !overflowed else { return }
            audio.append(try AVPacketBox(referencing: packet))
        }
    }
}

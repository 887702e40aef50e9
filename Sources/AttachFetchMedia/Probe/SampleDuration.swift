internal import CFFmpeg

/// The length of what an MPEG-4 file's streams hold, from their tracks' sample tables, not from
/// the movie header's claim: a header can say 10 s of a file whose samples last 2 s, and players
/// go by the samples.
extension MediaProber {
    /// Seconds by which a header may differ from the samples before the samples' length is the
    /// descriptor's `duration` and the header's is kept as `statedDuration`: a few frames of
    /// rounding (an edit list, a last sample's length) are not a disagreement.
    static let statedDurationSlack = 0.5

    /// From the earliest start of `streams` to the latest one's end, each stream's length the
    /// one FFmpeg's MPEG-4 reader keeps: its media header's, cut to the sum of its samples'
    /// durations (`stts`) when that is shorter. Nil for another container, or a stream that
    /// states no length.
    static func sampleDuration(of streams: [UnsafeMutablePointer<AVStream>], type: MediaType) -> Double? {
        guard [.mp4, .m4v, .m4a, .quickTime, .threeGPP, .threeGPP2].contains(type), !streams.isEmpty else { return nil }
        var start = Double.infinity, end = -Double.infinity
        for stream in streams {
            guard stream.pointee.duration != FFmpeg.noTimestamp, stream.pointee.duration > 0 else { return nil }
            let base = av_q2d(stream.pointee.time_base)
            let first = Double(stream.pointee.start_time == FFmpeg.noTimestamp ? 0 : stream.pointee.start_time) * base
            start = min(start, first)
            end = max(end, first + Double(stream.pointee.duration) * base)
        }
        return end > start ? end - start : nil
    }

    /// The probe's duration: the header's, unless the samples' differs from it by more than
    /// the slack; then the samples', with the header's as `statedDuration`.
    static func duration(header: Double?, samples: Double?) -> (duration: Double?, stated: Double?) {
        guard let samples else { return (header, nil) }
        guard let header else { return (samples, nil) }
        return abs(header - samples) > statedDurationSlack ? (samples, header) : (header, nil)
    }
}

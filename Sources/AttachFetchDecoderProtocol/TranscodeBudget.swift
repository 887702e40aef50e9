import AttachFetchCore
#if canImport(Glibc)
import Glibc
#endif

/// How much of the time left before the deadline a transcode may spend encoding. The rest is
/// kept for what follows it: flushing the encoders' look-ahead, writing the index first, probing
/// the result and making its poster, the Android variant, publishing.
///
/// The reserve is 10 % of the time left, at least 0.5 s and at most 2 s. The tail after the stop
/// was measured on this project's clips (`VideoTranscodeTests`, `docs/media.md#by-the-deadline`):
/// flush, index and probe of a 1280-pixel clip take 0.1–0.4 s on one core.
package enum TranscodeBudget {
    package static let reserveShare = 0.10
    package static let minimumReserve: Duration = .milliseconds(500)
    package static let maximumReserve: Duration = .seconds(2)

    /// `CLOCK_MONOTONIC` now, in nanoseconds: one clock for the pipeline and its workers.
    package static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// The instant encoding stops, for `remaining` time before the deadline.
    package static func stopAt(remaining: Duration) -> UInt64 {
        let reserve = min(maximumReserve, max(minimumReserve, remaining * reserveShare))
        let encoding = max(.zero, remaining - reserve)
        let (seconds, attoseconds) = encoding.components
        return now() + UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }
}

extension DecodeJob {
    /// The same job with its transcode (if it may transcode) stopping in time for `remaining`.
    package func budgeted(remaining: Duration) -> DecodeJob {
        switch self {
        case .transcode(let source, let type, let base, var limits):
            limits.stopAt = TranscodeBudget.stopAt(remaining: remaining)
            return .transcode(source: source, type: type, destinationBase: base, limits: limits)
        case .normalize(let source, let type, let base, var limits) where limits.animationAsVideo != nil:
            limits.animationAsVideo?.stopAt = TranscodeBudget.stopAt(remaining: remaining)
            return .normalize(source: source, type: type, destinationBase: base, limits: limits)
        case .remux(let source, let base, var fallback?):
            fallback.limits.stopAt = TranscodeBudget.stopAt(remaining: remaining)
            return .remux(source: source, destinationBase: base, orTranscode: fallback)
        default:
            return self
        }
    }
}

extension DecodeJob {
    /// When the job's encoding stops (`Limits.stopAt`, `CLOCK_MONOTONIC` nanoseconds), for a job
    /// that may transcode under a budget; nil for every other.
    package var encodingStopsAt: UInt64? {
        switch self {
        case .transcode(_, _, _, let limits): return limits.stopAt
        case .normalize(_, _, _, let limits): return limits.animationAsVideo?.stopAt
        case .remux(_, _, let fallback): return fallback?.limits.stopAt
        default: return nil
        }
    }
}

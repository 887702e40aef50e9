import AttachFetchDecoderProtocol
import Foundation

/// A worker's CPU time: each job's allowance, which the keeper holds it to, and its lifetime
/// limit (`RLIMIT_CPU`), the kernel's backstop, which always covers the largest allowance, so
/// that a job is ended by the keeper's count (a limit of attach-fetch's, never cached as the
/// media's fault) and never by the kernel midway.
extension DecoderProcess {
    /// The longest encoding budget an allowance counts: an hour, the CLI's longest deadline and
    /// the whole-clip budget's. A library caller's later stop is allowed no more CPU than that.
    static let longestBudgetSeconds = 3_600.0

    /// The worker's CPU time in all: room for many jobs (a worker is reused), at least ten
    /// minutes, and more than the largest allowance on this many cores; a worker near it is
    /// replaced before its next job (`hasCPUFor`).
    static func cpuSecondsInAll(perJob: Int, cores: Int = cores) -> Int {
        max(600, perJob * 30, perJob + Int(longestBudgetSeconds) * cores + 10)
    }

    /// The CPU seconds a job may use: `decoderCPUSecondsPerJob`, and for a transcode that stops
    /// itself at its budget's end (`secondsToStop` from now), that much more per core for every
    /// second until then, up to `longestBudgetSeconds` (its decoder and encoder run on every
    /// core there is).
    static func cpuAllowance(perJob: Int, secondsToStop: Double?, cores: Int = cores) -> Double {
        guard let seconds = secondsToStop else { return Double(perJob) }
        return Double(perJob) + min(max(0, seconds), longestBudgetSeconds) * Double(cores)
    }

    func cpuAllowance(_ job: DecodeJob) -> Double {
        let now = TranscodeBudget.now()
        let seconds = job.encodingStopsAt.map { $0 > now ? Double($0 - now) / 1e9 : 0 }
        return Self.cpuAllowance(perJob: cpuSecondsPerJob, secondsToStop: seconds)
    }

    /// Cores this process may run on.
    static let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)

    /// Whether the worker's own CPU limit leaves room for `job`'s allowance: otherwise the
    /// keeper starts a fresh worker rather than let the kernel end this one midway.
    func hasCPUFor(_ job: DecodeJob) -> Bool {
        // The margin covers what the jobs since the last reading used (short ones, < 0.1 s each).
        cpuUsed + cpuAllowance(job) < Double(cpuSecondsInAll) - 5
    }
}

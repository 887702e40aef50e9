import Foundation

/// Work raced against a deadline: the one implementation the pipeline's batches
/// (`AttachFetch`) and the device's fetcher (`AttachFetchDevice`) both run under.
public enum Deadline {
    /// Runs `jobs` as child tasks beside a sentinel that awaits `waitForDeadline`, and gives
    /// each job's result to `each` (with the job's index) as it comes. Returns once every job
    /// has returned:
    /// - no jobs: at once, without starting the sentinel;
    /// - the last job done first: the sentinel is cancelled (so `waitForDeadline` must return
    ///   promptly when its task is cancelled);
    /// - `waitForDeadline` returns first: every job still running is cancelled, and the race
    ///   waits for them to return what they have. Whatever the sentinel does before returning
    ///   (marking the deadline as fired) happens before that cancellation.
    ///
    /// Cancelling the calling task cancels the jobs and the sentinel alike.
    public static func race<Value: Sendable>(_ jobs: [@Sendable () async -> Value],
                                             waitForDeadline: @escaping @Sendable () async -> Void,
                                             each: (Int, Value) -> Void) async {
        guard !jobs.isEmpty else { return }
        await withTaskGroup(of: (Int, Value)?.self) { group in
            group.addTask {
                await waitForDeadline()
                return nil
            }
            for (index, job) in jobs.enumerated() {
                group.addTask { (index, await job()) }
            }
            var remaining = jobs.count
            while let finished = await group.next() {
                guard let (index, value) = finished else {
                    // The sentinel: the deadline came (or the caller cancelled, which
                    // cancels the jobs anyway).
                    group.cancelAll()
                    continue
                }
                each(index, value)
                remaining -= 1
                if remaining == 0 { group.cancelAll() }
            }
        }
    }

    /// `race(_:waitForDeadline:each:)` with a wall-clock deadline: any `Date`, the past (the
    /// jobs are cancelled as soon as they start) and `Date.distantFuture` included.
    public static func race<Value: Sendable>(_ jobs: [@Sendable () async -> Value], until deadline: Date,
                                             each: (Int, Value) -> Void) async {
        await race(jobs, waitForDeadline: { _ = await sleep(until: deadline) }, each: each)
    }

    /// The longest single sleep: `Task.sleep` takes nanoseconds in a `UInt64`, which a wait
    /// until `Date.distantFuture` (about 2,000 years) would overflow.
    static let longestSleep: TimeInterval = 86_400

    /// Sleeps until `deadline` by the wall clock. True once it has come; false when the task
    /// was cancelled first. A deadline already past (or not a number) has come; a far one is
    /// slept towards a day at a time, so no date overflows.
    public static func sleep(until deadline: Date) async -> Bool {
        while true {
            if Task.isCancelled { return false }
            let left = deadline.timeIntervalSinceNow
            // NaN is not above 0 either: taken as now.
            guard left > 0 else { return true }
            let step = min(left, longestSleep)
            do {
                try await Task.sleep(nanoseconds: UInt64((step * 1e9).rounded(.up)))
            } catch {
                return false
            }
        }
    }
}

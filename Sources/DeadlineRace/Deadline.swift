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

    /// Runs the items `next` hands out, at most `width` at once, each as a child task
    /// (`run`) beside a sentinel that awaits `waitForDeadline`, and gives each result to `each`
    /// (with the item's index, in the order `next` handed them out) as it comes. An item is
    /// pulled from `next` only when there is room for it, so that what waits its turn costs
    /// nothing here: memory follows the work in flight, not the number of items. `next` runs
    /// in a child task of its own, one call at a time, so that a slow source (a pipe) delays
    /// neither the results nor the deadline.
    ///
    /// Returns once `next` has returned nil and every item has its value:
    /// - no items: at once, without starting the sentinel;
    /// - the last item done first: the sentinel is cancelled;
    /// - `waitForDeadline` returns first: every item still running is cancelled, and every
    ///   item `next` still hands out gets `unstarted`'s value at once (it never got its turn).
    ///   `next` is then called from a cancelled task: a source that ends when its task is
    ///   cancelled ends there.
    ///
    /// Cancelling the calling task cancels the items and the sentinel alike; the items not yet
    /// started then get `unstarted`'s value too. `unstarted` and `each` run in the caller's
    /// isolation.
    public static func race<Item: Sendable, Value: Sendable>(
        width: Int, next: @escaping @Sendable () async -> Item?, run: @escaping @Sendable (Int, Item) async -> Value,
        unstarted: (Int, Item) -> Value, waitForDeadline: @escaping @Sendable () async -> Void,
        isolation: isolated (any Actor)? = #isolation, each: (Int, Value) -> Void
    ) async {
        precondition(width >= 1, "at least one item at a time")
        guard let first = await next() else { return }
        await withTaskGroup(of: RaceEvent<Item, Value>.self) { group in
            group.addTask {
                await waitForDeadline()
                return .deadline
            }
            var (started, running) = (0, 0)
            var (pulling, exhausted, stopped) = (false, false, false)
            var event: RaceEvent<Item, Value>? = .pulled(first)
            while let current = event {
                switch current {
                case .pulled(let item):
                    pulling = false
                    guard let item else {
                        exhausted = true
                        break
                    }
                    let index = started
                    started += 1
                    if stopped {
                        each(index, unstarted(index, item))
                    } else {
                        running += 1
                        group.addTask { .finished(index, await run(index, item)) }
                    }
                case .finished(let index, let value):
                    running -= 1
                    each(index, value)
                case .deadline:
                    // The deadline came (or the caller cancelled): what runs is cancelled (and
                    // with it the sentinel, done already); what was not started never will be.
                    stopped = true
                    group.cancelAll()
                }
                if exhausted && running == 0 && !pulling {
                    group.cancelAll() // the sentinel: nothing is left to wait for
                } else if !exhausted && !pulling && (stopped || running < width) {
                    pulling = true
                    group.addTask { .pulled(await next()) }
                }
                event = await group.next()
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
            guard let step = nextStep(until: deadline, now: Date()) else { return true }
            do {
                try await Task.sleep(nanoseconds: step)
            } catch {
                return false
            }
        }
    }

    /// The next sleep towards `deadline`, in nanoseconds: at most `longestSleep`; nil when it
    /// has come (a deadline past, now, or not a number).
    static func nextStep(until deadline: Date, now: Date) -> UInt64? {
        let left = deadline.timeIntervalSince(now)
        // NaN is not above 0 either: taken as now.
        guard left > 0 else { return nil }
        return UInt64((min(left, longestSleep) * 1e9).rounded(.up))
    }
}

/// What the windowed race's loop wakes up for: an item pulled (nil: no more), an item's value,
/// or the sentinel's return.
private enum RaceEvent<Item: Sendable, Value: Sendable>: Sendable {
    case pulled(Item?)
    case finished(Int, Value)
    case deadline
}

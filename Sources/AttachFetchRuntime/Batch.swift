import AttachFetchCore
import DeadlineRace
import Synchronization

/// What a batch of attachments, or one piece of shared work, runs under: its clock, its
/// deadline, and whether that deadline has fired. The deadline is an instant of the pipeline's
/// clock (`AttachFetchConfiguration.clock`); `start` is real time, for the descriptors' timings.
package final class Batch: Sendable {
    private static let nextID = Atomic<Int>(0)
    /// Transfer slots are shared fairly between these ids.
    package let id: Int
    package let start: ContinuousClock.Instant
    /// What the deadline is measured by.
    package let clock: AttachFetchClock
    private let currentDeadline: Locked<ContinuousClock.Instant>
    private let deadlineFired = Atomic<Bool>(false)

    /// - Parameter fairnessID: shared work's transfers count against the batch that started it.
    package init(start: ContinuousClock.Instant, deadline: ContinuousClock.Instant, clock: AttachFetchClock, fairnessID: Int? = nil) {
        self.id = fairnessID ?? Batch.nextID.add(1, ordering: .relaxed).newValue
        self.start = start
        self.clock = clock
        self.currentDeadline = Locked(deadline)
    }

    /// The deadline now. A caller's batch keeps its own; shared work's moves later when a
    /// caller with more time joins it (`extendDeadline`), so that it goes on for that caller.
    package var deadline: ContinuousClock.Instant { currentDeadline.withLock { $0 } }

    /// Time left before the deadline, by the batch's clock (negative once it has passed).
    package var remaining: Duration { deadline - clock.now }

    /// Moves the deadline later (never earlier).
    package func extendDeadline(to later: ContinuousClock.Instant) {
        currentDeadline.withLock { $0 = max($0, later) }
    }

    /// Runs `jobs` as child tasks raced against the deadline sentinel, giving each result to
    /// `each` (with the job's index) as it comes. When the deadline passes, every job still
    /// running is cancelled (they return what they have); when the last job is done, the
    /// sentinel is cancelled. A caller's batch and shared work both run under it, and the race
    /// itself is `Deadline.race`, the one the device's fetcher runs under too.
    package func racingDeadline<Value: Sendable>(_ jobs: [@Sendable () async -> Value], each: (Int, Value) -> Void) async {
        await Deadline.race(jobs, waitForDeadline: { await self.sleepThenFireDeadline() }, each: each)
    }

    /// Runs the items `next` hands out, at most `width` at once, raced against the deadline
    /// sentinel (`Deadline.race(width:next:run:unstarted:waitForDeadline:each:)`): an item's
    /// state is made when its turn comes, and items the deadline finds unstarted get
    /// `unstarted`'s value.
    package func racingDeadline<Item: Sendable, Value: Sendable>(
        width: Int, next: @escaping @Sendable () async -> Item?, run: @escaping @Sendable (Int, Item) async -> Value,
        unstarted: (Int, Item) -> Value, isolation: isolated (any Actor)? = #isolation, each: (Int, Value) -> Void
    ) async {
        await Deadline.race(width: width, next: next, run: run, unstarted: unstarted,
                            waitForDeadline: { await self.sleepThenFireDeadline() }, isolation: isolation, each: each)
    }

    /// The deadline sentinel's wait: sleeps until the deadline (following extensions) and
    /// fires it; returns without firing when the task is cancelled first.
    func sleepThenFireDeadline() async {
        while !Task.isCancelled {
            let until = deadline
            try? await clock.sleep(until: until)
            if Task.isCancelled { return }
            if deadline <= clock.now {
                fireDeadline()
                return
            }
        }
    }

    /// The deadline sentinel calls this when the deadline passes, just before it cancels the
    /// batch's tasks.
    func fireDeadline() { deadlineFired.store(true, ordering: .sequentiallyConsistent) }

    /// Why work stops early. The batch cancels its tasks when the deadline fires, so a
    /// cancellation seen after that is the deadline; before it, the caller's.
    package enum StopCause { case deadline, cancellation }

    /// The one place that tells a deadline from a cancellation.
    package var stopCause: StopCause { deadlineFired.load(ordering: .sequentiallyConsistent) ? .deadline : .cancellation }

    /// The reason an attachment stopped by the deadline or a cancellation gets.
    package func stopReason(queued: Bool) -> Reason {
        switch stopCause {
        case .cancellation:
            return Reason(code: .cancelled, message: "the request was cancelled")
        case .deadline:
            return Reason(code: .deadlineExceeded, message: queued
                ? "the batch deadline passed while the request was queued"
                : "the batch deadline passed before this attachment was finished")
        }
    }

    /// A reason from the download: its "cancelled" after the deadline fired is the deadline.
    package func settle(_ reason: Reason, queued: Bool) -> Reason {
        reason.code == .cancelled && stopCause == .deadline ? stopReason(queued: queued) : reason
    }
}

import AttachFetchRuntime

/// Coalescing and the result cache. Requests with the same key share one piece of work while
/// it runs; with caching on, finished results are reused while fresh and revalidated with the
/// origin when stale. A caller that stops waiting (its deadline, its cancellation) leaves;
/// the work goes on for the others and is cancelled when nobody waits any more.
///
/// No system call is made under its lock: a cached entry's files are checked before the lock is
/// taken, and results dropped or evicted are released (their files removed) after it is let go.
final class SharedResults: Sendable {
    typealias Delivery = (result: SharedResult, status: AttachmentDescriptor.CacheStatus)?

    /// What a piece of work produced.
    struct Produced: Sendable {
        var result: SharedResult
        /// How long the cache may keep it (nil: not at all).
        var lifetime: Duration?
        /// The stale result was confirmed by a 304 (and `result` is it).
        var revalidated: Bool
        /// Another replica's result, read from the object store.
        var shared = false
        /// A clip the deadline cut short, and how to make the whole one: with caching on, the
        /// cut clip answers callers while this runs, nobody waiting, within its budget
        /// (`ResultCaching.wholeClipBudget`), and its result replaces the cut one.
        var completion: (budget: Duration, run: @Sendable (Batch) async -> Produced)?
    }

    private let state: Locked<SharedResultsStateMachine<CheckedContinuation<Delivery, Never>>>
    /// Nil: results are shared only while their work runs.
    let caching: ResultCaching?

    /// What freshness is measured by: the pipeline's clock, unless the deprecated
    /// `ResultCaching.clock` was set.
    private let clock: AttachFetchClock

    init(caching: ResultCaching?, clock: AttachFetchClock) {
        self.caching = caching
        self.clock = caching?.clockOverride ?? clock
        state = Locked(SharedResultsStateMachine(caching: caching, clock: clock))
    }

    /// The time by the cache's clock (freshness is measured by it).
    private var now: ContinuousClock.Instant { clock.now }

    /// The result for `key`: a fresh cached one (`hit`), the one of work already running
    /// (`coalesced`), or one made by `produce` now (`miss`, or `revalidated` when `produce`
    /// confirmed the stale result it was given). Nil when the caller stopped waiting. The
    /// caller holds the result and must `release()` it.
    ///
    /// - Parameter staysAtCancel: asked when the caller's task is cancelled, with the running
    ///   work's deadline: true to keep waiting (the work ends by the caller's own deadline and
    ///   its answer says more than "the deadline passed").
    func result(for key: ResultKey, deadline: ContinuousClock.Instant, fairnessID: Int,
                staysAtCancel: @escaping @Sendable (ContinuousClock.Instant) -> Bool,
                produce: @escaping @Sendable (SharedResult?, Batch) async -> Produced) async -> Delivery {
        let me = state.withLock { $0.newWaiter() }
        dropIfDamaged(key)
        let delivery: Delivery = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Delivery, Never>) in
                let now = self.now
                let action = state.withLock {
                    $0.lookup(key, waiterID: me, continuation, deadline: deadline, fairnessID: fairnessID,
                              cancelled: Task.isCancelled, now: now)
                }
                switch action {
                case .answer(let delivery):
                    continuation.resume(returning: delivery)
                case .wait:
                    break
                case .startWork(let flightID, let stale, let work):
                    start(key, flightID) {
                        let produced = await produce(stale, work)
                        if produced.result !== stale { stale?.release() }
                        return produced
                    }
                }
            }
        } onCancel: {
            switch state.withLock({ $0.leave(key, waiterID: me, staysAtCancel: staysAtCancel) }) {
            case .none: break
            case .answerNil(let continuation, let task):
                task?.cancel()
                continuation.resume(returning: nil)
            case .answer(let continuation, let delivery):
                continuation.resume(returning: delivery)
            }
        }
        // The last caller to leave waits for the cancelled work to remove its files (promptly:
        // transfers stop at once, and decodes still running remove their output as it arrives),
        // so that nothing is left behind when its batch returns.
        if case nil = delivery, let work = state.withLock({ $0.takeAbandoned(waiterID: me) }) { await work.value }
        return delivery
    }

    /// The fresh cached result for `key`, held for the caller (who must `release()` it), or nil
    /// — without waiting: a batch whose every request is a hit is answered without tasks.
    func freshResult(for key: ResultKey) -> SharedResult? {
        dropIfDamaged(key)
        let now = self.now
        return state.withLock { $0.hit(key, now: now) }
    }

    private func finish(_ key: ResultKey, _ flightID: UInt64, _ produced: Produced) {
        let now = self.now
        let action = state.withLock { $0.finish(key, flightID: flightID, produced, now: now) }
        for result in action.release { result.release() }
        // The work's own hold.
        produced.result.release()
        for (continuation, status) in action.answers { continuation.resume(returning: (produced.result, status)) }
        if let (wholeClipID, work) = action.completion, let run = produced.completion?.run {
            // Nobody waits for it: below fresh work's priority, and not cancelled when callers leave.
            start(key, wholeClipID, priority: .background) { await run(work) }
        }
    }

    /// Runs a flight's work in a task of its own and finishes the flight with what it produced.
    private func start(_ key: ResultKey, _ flightID: UInt64, priority: TaskPriority? = nil,
                       _ work: @escaping @Sendable () async -> Produced) {
        let task = Task(priority: priority) { self.finish(key, flightID, await work()) }
        // Everyone left before the task was recorded (or it already finished).
        if !state.withLock({ $0.workStarted(key, flightID: flightID, task: task) }) { task.cancel() }
    }

    /// Drops `key`'s entry when its files were removed behind the cache's back. The files are
    /// looked at (`access(2)`) before the lock is taken, never under it.
    private func dropIfDamaged(_ key: ResultKey) {
        guard let cached = state.withLock({ $0.cached(key) }), !cached.isIntact else { return }
        state.withLock { $0.drop(key, ifStill: cached) }?.release()
    }

    /// Drops every cached entry (their files go) and cancels running work: at shutdown. Returns
    /// the cancelled work, which ends promptly once it has given back what it holds (a lease in
    /// the object store), for the caller to await before the store's requests stop.
    @discardableResult
    func removeAll() -> [Task<Void, Never>] {
        let (dropped, tasks) = state.withLock { $0.removeAll() }
        for task in tasks { task.cancel() }
        for result in dropped { result.release() }
        return tasks
    }

    /// Entries cached now (for tests and metrics).
    var count: Int { state.withLock { $0.count } }

    /// Callers waiting on work in flight now: a test waits for a caller to have joined.
    var waiting: Int { state.withLock { $0.waiting } }
}

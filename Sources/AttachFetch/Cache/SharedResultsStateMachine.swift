import AttachFetchRuntime
import DequeModule

/// Every decision of coalescing and caching, as a value. Each call changes the state and
/// returns what must be done once the lock around it is let go: answer a waiter, start the
/// work, cancel a task, release results (a last release removes files). It makes no system
/// call and starts nothing, so `SharedResults` never does either under its lock, and the
/// machine is tested as a value, without tasks, files or sockets.
///
/// Generic over `Waiter`, what is answered: a continuation in `SharedResults`, anything in tests.
struct SharedResultsStateMachine<Waiter> {
    typealias Delivery = (result: SharedResult, status: AttachmentDescriptor.CacheStatus)

    private struct Flight {
        let id: UInt64
        /// What the work runs under; its deadline follows the latest waiter's.
        let work: Batch
        let creator: UInt64
        var waiters: [UInt64: Waiter] = [:]
        var task: Task<Void, Never>?
        /// A campaign's whole clip: it runs under its own budget, not its waiters' deadlines, and
        /// is not cancelled when they leave; a waiter that leaves gets the provisional entry.
        var wholeClip = false
    }

    private struct Entry {
        var result: SharedResult
        var freshUntil: ContinuousClock.Instant
        var lastUse: UInt64
        /// A clip the deadline cut short, kept only while its whole clip is made: the answer
        /// of callers whose deadline comes first, never a hit on its own.
        var provisional = false
    }

    private var flights: [ResultKey: Flight] = [:]
    private var entries: [ResultKey: Entry] = [:]
    private var bytes: Int64 = 0
    private var counter: UInt64 = 0
    /// Work abandoned when this waiter, its last, left: the waiter waits for its cleanup.
    private var abandoned: [UInt64: Task<Void, Never>] = [:]
    /// Set at shutdown: no whole clip starts after it.
    private var closed = false
    /// Every use of an entry, oldest first; a record is stale when its entry was used again
    /// since (or is gone). The least recently used entry is the first record that is not
    /// stale, so a use and an eviction cost amortised O(1): a scan of every entry per miss
    /// cost 17 % of the service's CPU with 10,000 entries, and an `OrderedDictionary` moved to
    /// its end on every hit shifts the whole cache. Stale records are filtered out (order
    /// kept, no sort) when they outnumber the live ones.
    private var recency: Deque<(tick: UInt64, key: ResultKey)> = []
    /// Nil: results are shared only while their work runs.
    let caching: ResultCaching?
    /// The pipeline's clock: shared work's deadline is an instant of it.
    let clock: AttachFetchClock

    init(caching: ResultCaching?, clock: AttachFetchClock = .system) {
        self.caching = caching
        self.clock = clock
    }

    /// Entries cached now.
    var count: Int { entries.count }

    /// Callers waiting on work in flight now.
    var waiting: Int { flights.values.reduce(0) { $0 + $1.waiters.count } }

    /// A new waiter's identity.
    mutating func newWaiter() -> UInt64 { next() }

    // MARK: Asking for a result

    enum LookupAction {
        /// Answer at once: a fresh hit (retained for the waiter), or nil when it was cancelled.
        case answer(Delivery?)
        /// The waiter joined work already running.
        case wait
        /// Start the work for the flight; it holds `stale` (retained) while it asks the origin
        /// about it, and runs under `work`.
        case startWork(flightID: UInt64, stale: SharedResult?, work: Batch)
    }

    /// A waiter asks for `key`'s result: a fresh entry, running work, or new work.
    mutating func lookup(_ key: ResultKey, waiterID: UInt64, _ waiter: Waiter, deadline: ContinuousClock.Instant,
                         fairnessID: Int, cancelled: Bool, now: ContinuousClock.Instant) -> LookupAction {
        if cancelled { return .answer(nil) }
        if let hit = hit(key, now: now) { return .answer((hit, .hit)) }
        if let flight = flights[key] {
            // The work goes on for the waiter with the most time (a whole clip has its own budget).
            if !flight.wholeClip { flight.work.extendDeadline(to: deadline) }
            flights[key]?.waiters[waiterID] = waiter
            return .wait
        }
        var stale: SharedResult?
        if let entry = entries[key], !entry.provisional, entry.result.descriptor.status == .ready, entry.result.headers.validators != nil {
            stale = entry.result
            stale?.retain()
        }
        let work = Batch(start: .now, deadline: deadline, clock: clock, fairnessID: fairnessID)
        var flight = Flight(id: next(), work: work, creator: waiterID)
        flight.waiters[waiterID] = waiter
        flights[key] = flight
        return .startWork(flightID: flight.id, stale: stale, work: work)
    }

    /// The task running a flight was started. False when the flight is already gone (everyone
    /// left, or it finished): the caller cancels the task.
    mutating func workStarted(_ key: ResultKey, flightID: UInt64, task: Task<Void, Never>) -> Bool {
        guard flights[key]?.id == flightID else { return false }
        flights[key]?.task = task
        return true
    }

    /// A fresh entry's result, marked used and retained for the caller; nil when there is none.
    mutating func hit(_ key: ResultKey, now: ContinuousClock.Instant) -> SharedResult? {
        guard let entry = entries[key], entry.freshUntil > now, !entry.provisional else { return nil }
        touch(key)
        entry.result.retain()
        return entry.result
    }

    // MARK: Leaving

    enum LeaveAction {
        case none
        /// Answer the waiter nil; cancel the task when it was the work's last waiter.
        case answerNil(Waiter, cancelling: Task<Void, Never>?)
        /// Answer the waiter with the clip already made (retained for it) while the whole one goes on.
        case answer(Waiter, Delivery)
    }

    /// A waiter stops waiting (its task was cancelled), unless `staysAtCancel` says it keeps
    /// waiting for work that ends by then.
    mutating func leave(_ key: ResultKey, waiterID: UInt64,
                        staysAtCancel: (ContinuousClock.Instant) -> Bool) -> LeaveAction {
        guard var flight = flights[key], let waiter = flight.waiters[waiterID] else { return .none }
        if flight.wholeClip {
            flights[key]?.waiters[waiterID] = nil
            guard let entry = entries[key], entry.provisional else { return .answerNil(waiter, cancelling: nil) }
            entry.result.retain()
            return .answer(waiter, (entry.result, .hit))
        }
        guard !staysAtCancel(flight.work.deadline) else { return .none }
        flight.waiters[waiterID] = nil
        guard flight.waiters.isEmpty else {
            flights[key] = flight
            return .answerNil(waiter, cancelling: nil)
        }
        flights[key] = nil
        abandoned[waiterID] = flight.task
        return .answerNil(waiter, cancelling: flight.task)
    }

    /// The cancelled work this waiter left last, which it waits for (once).
    mutating func takeAbandoned(waiterID: UInt64) -> Task<Void, Never>? {
        abandoned.removeValue(forKey: waiterID)
    }

    // MARK: Finishing

    struct FinishAction {
        /// Each waiter with its status; the result is retained once for each.
        var answers: [(waiter: Waiter, status: AttachmentDescriptor.CacheStatus)] = []
        /// Results replaced or evicted, to release.
        var release: [SharedResult] = []
        /// Start the campaign's whole clip as this flight, under this batch.
        var completion: (flightID: UInt64, work: Batch)?
    }

    /// The flight's work produced a result: cached when it may be, handed to every waiter.
    mutating func finish(_ key: ResultKey, flightID: UInt64, _ produced: SharedResults.Produced,
                         now: ContinuousClock.Instant) -> FinishAction {
        guard let flight = flights[key], flight.id == flightID else { return FinishAction() }
        flights[key] = nil
        let result = produced.result
        var action = FinishAction()
        // The cut clip answered callers while the whole one was made: it goes now.
        if flight.wholeClip, entries[key]?.provisional == true, let cut = drop(key) { action.release.append(cut) }
        let completion = produced.completion.flatMap { caching != nil && !flight.wholeClip && !closed ? $0.budget : nil }
        if let caching, let lifetime = completion ?? produced.lifetime {
            result.retain()
            if let replaced = drop(key) { action.release.append(replaced) }
            entries[key] = Entry(result: result, freshUntil: now + lifetime, lastUse: 0, provisional: completion != nil)
            touch(key)
            bytes += result.bytes
            while entries.count > caching.maxEntries || bytes > caching.maxBytes, let oldest = leastRecentlyUsed() {
                if let evicted = drop(oldest) { action.release.append(evicted) }
            }
        }
        if let budget = completion, entries[key]?.provisional == true {
            // From the instant given, as every other time here: the machine reads no clock.
            let work = Batch(start: .now, deadline: now + budget, clock: clock)
            flights[key] = Flight(id: next(), work: work, creator: 0, wholeClip: true)
            action.completion = (flights[key]!.id, work)
        }
        for (waiter, continuation) in flight.waiters {
            result.retain()
            let status: AttachmentDescriptor.CacheStatus = waiter != flight.creator ? .coalesced
                : produced.shared ? .shared : produced.revalidated ? .revalidated : .miss
            action.answers.append((continuation, status))
        }
        return action
    }

    // MARK: Damaged entries and shutdown

    /// The cached result for `key`, not retained: to look at its files outside the lock.
    func cached(_ key: ResultKey) -> SharedResult? { entries[key]?.result }

    /// Drops `key`'s entry if it still holds `result` (its files were found gone); returns it
    /// to release.
    mutating func drop(_ key: ResultKey, ifStill result: SharedResult) -> SharedResult? {
        entries[key]?.result === result ? drop(key) : nil
    }

    /// Drops every entry and gives up every flight: what to release and which tasks to cancel.
    mutating func removeAll() -> (release: [SharedResult], cancel: [Task<Void, Never>]) {
        closed = true
        let dropped = Array(entries.keys).compactMap { drop($0) }
        recency = []
        return (dropped, flights.values.compactMap(\.task))
    }

    // MARK: Private

    private mutating func next() -> UInt64 {
        counter += 1
        return counter
    }

    /// Removes `key`'s entry and returns its result, for the caller to release.
    private mutating func drop(_ key: ResultKey) -> SharedResult? {
        guard let entry = entries.removeValue(forKey: key) else { return nil }
        bytes -= entry.result.bytes
        return entry.result
    }

    /// Marks `key`'s entry used now.
    private mutating func touch(_ key: ResultKey) {
        let tick = next()
        entries[key]?.lastUse = tick
        recency.append((tick, key))
        if recency.count > 2 * entries.count + 64 {
            recency = Deque(recency.filter { entries[$0.key]?.lastUse == $0.tick })
        }
    }

    /// The least recently used entry's key, or nil when there is none.
    private mutating func leastRecentlyUsed() -> ResultKey? {
        while let record = recency.popFirst() {
            if entries[record.key]?.lastUse == record.tick { return record.key }
        }
        return nil
    }
}

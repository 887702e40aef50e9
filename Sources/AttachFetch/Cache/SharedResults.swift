import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

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
    }

    private struct Flight {
        let id: UInt64
        /// What the work runs under; its deadline follows the latest waiter's.
        let work: Batch
        let creator: UInt64
        var waiters: [UInt64: CheckedContinuation<Delivery, Never>] = [:]
        var task: Task<Void, Never>?
    }

    private struct Entry {
        var result: SharedResult
        var freshUntil: ContinuousClock.Instant
        var lastUse: UInt64
    }

    private struct State {
        var flights: [ResultKey: Flight] = [:]
        var entries: [ResultKey: Entry] = [:]
        var bytes: Int64 = 0
        var counter: UInt64 = 0
        /// Work abandoned when this waiter, its last, left: the waiter waits for its cleanup.
        var abandoned: [UInt64: Task<Void, Never>] = [:]
        /// Every use of an entry in the order they happened, oldest first from `recencyHead`;
        /// a record is stale when its entry was used again since (or is gone). The least
        /// recently used entry is the first record that is not stale: found in amortised
        /// constant time, where a scan of every entry under the lock cost a full cache's
        /// worth of copies per miss (17 % of the service's CPU with 10,000 entries).
        var recency: [(tick: UInt64, key: ResultKey)] = []
        var recencyHead = 0

        mutating func next() -> UInt64 {
            counter += 1
            return counter
        }

        /// Marks `key`'s entry used now.
        mutating func touch(_ key: ResultKey) {
            let tick = next()
            entries[key]?.lastUse = tick
            recency.append((tick, key))
            // Stale records pile up with every hit: rebuilt from the live entries now and then.
            if recency.count - recencyHead > 2 * entries.count + 64 {
                recency = entries.map { (tick: $0.value.lastUse, key: $0.key) }.sorted { $0.tick < $1.tick }
                recencyHead = 0
            }
        }

        /// The least recently used entry's key, or nil when there is none.
        mutating func leastRecentlyUsed() -> ResultKey? {
            while recencyHead < recency.count {
                let record = recency[recencyHead]
                recencyHead += 1
                if entries[record.key]?.lastUse == record.tick {
                    if recencyHead > 1024 && recencyHead * 2 > recency.count {
                        recency.removeFirst(recencyHead)
                        recencyHead = 0
                    }
                    return record.key
                }
            }
            return nil
        }
    }

    private let state = Locked(State())
    /// Nil: results are shared only while their work runs.
    let caching: ResultCaching?

    init(caching: ResultCaching?) {
        self.caching = caching
    }

    /// The time by the cache's clock (freshness is measured by it).
    private var now: ContinuousClock.Instant { caching?.clock.now ?? .now }

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
        let me = state.withLock { $0.next() }
        dropIfDamaged(key)
        let delivery: Delivery = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Delivery, Never>) in
                enum Next { case now(Delivery), wait, start(UInt64, SharedResult?, Batch) }
                let next: Next = state.withLock { state in
                    if Task.isCancelled { return .now(nil) }
                    if let hit = freshEntry(key, in: &state) { return .now((hit, .hit)) }
                    var stale: SharedResult?
                    if let entry = state.entries[key], entry.result.descriptor.status == .ready, entry.result.headers.validators != nil {
                        stale = entry.result
                    }
                    if let flight = state.flights[key] {
                        // The work goes on for the waiter with the most time.
                        flight.work.extendDeadline(to: deadline)
                        state.flights[key]?.waiters[me] = continuation
                        return .wait
                    }
                    let work = Batch(start: .now, deadline: deadline, fairnessID: fairnessID)
                    var flight = Flight(id: state.next(), work: work, creator: me)
                    flight.waiters[me] = continuation
                    state.flights[key] = flight
                    // The work holds the stale result while it asks the origin about it.
                    stale?.retain()
                    return .start(flight.id, stale, work)
                }
                switch next {
                case .now(let delivery):
                    continuation.resume(returning: delivery)
                case .wait:
                    break
                case .start(let flightID, let stale, let work):
                    let task = Task {
                        let produced = await produce(stale, work)
                        if produced.result !== stale { stale?.release() }
                        self.finish(key, flightID, produced)
                    }
                    let abandoned = state.withLock { state -> Bool in
                        guard state.flights[key]?.id == flightID else { return true }
                        state.flights[key]?.task = task
                        return false
                    }
                    // Everyone left before the task was recorded (or it already finished).
                    if abandoned { task.cancel() }
                }
            }
        } onCancel: {
            leave(key, me, staysAtCancel: staysAtCancel)
        }
        // The last caller to leave waits for the cancelled work to remove its files (promptly:
        // transfers stop at once, and decodes still running remove their output as it arrives),
        // so that nothing is left behind when its batch returns.
        if case nil = delivery, let work = state.withLock({ $0.abandoned.removeValue(forKey: me) }) { await work.value }
        return delivery
    }

    /// The fresh cached result for `key`, held for the caller (who must `release()` it), or nil
    /// — without waiting: a batch whose every request is a hit is answered without tasks.
    func freshResult(for key: ResultKey) -> SharedResult? {
        dropIfDamaged(key)
        return state.withLock { freshEntry(key, in: &$0) }
    }

    /// A fresh entry's result, marked used and retained (callers drop a damaged entry first,
    /// with `dropIfDamaged`, outside the lock).
    private func freshEntry(_ key: ResultKey, in state: inout State) -> SharedResult? {
        guard let entry = state.entries[key] else { return nil }
        guard entry.freshUntil > now else { return nil }
        state.touch(key)
        entry.result.retain()
        return entry.result
    }

    private func leave(_ key: ResultKey, _ waiter: UInt64, staysAtCancel: (ContinuousClock.Instant) -> Bool) {
        let continuation: CheckedContinuation<Delivery, Never>? = state.withLock { state in
            guard var flight = state.flights[key], let continuation = flight.waiters[waiter],
                  !staysAtCancel(flight.work.deadline) else { return nil }
            flight.waiters[waiter] = nil
            if flight.waiters.isEmpty {
                state.flights[key] = nil
                flight.task?.cancel()
                state.abandoned[waiter] = flight.task
            } else {
                state.flights[key] = flight
            }
            return continuation
        }
        continuation?.resume(returning: nil)
    }

    private func finish(_ key: ResultKey, _ flightID: UInt64, _ produced: Produced) {
        let result = produced.result
        let (waiters, creator, dropped): ([UInt64: CheckedContinuation<Delivery, Never>], UInt64?, [SharedResult]) = state.withLock { state in
            guard let flight = state.flights[key], flight.id == flightID else { return ([:], nil, []) }
            state.flights[key] = nil
            var dropped: [SharedResult] = []
            if let caching, let lifetime = produced.lifetime {
                result.retain()
                if let replaced = drop(key, from: &state) { dropped.append(replaced) }
                state.entries[key] = Entry(result: result, freshUntil: now + lifetime, lastUse: 0)
                state.touch(key)
                state.bytes += result.bytes
                while state.entries.count > caching.maxEntries || state.bytes > caching.maxBytes,
                      let oldest = state.leastRecentlyUsed() {
                    if let evicted = drop(oldest, from: &state) { dropped.append(evicted) }
                }
            }
            for _ in flight.waiters { result.retain() }
            return (flight.waiters, flight.creator, dropped)
        }
        for evicted in dropped { evicted.release() }
        // The work's own hold.
        result.release()
        for (waiter, continuation) in waiters {
            let status: AttachmentDescriptor.CacheStatus = waiter != creator ? .coalesced
                : produced.shared ? .shared : produced.revalidated ? .revalidated : .miss
            continuation.resume(returning: (result, status))
        }
    }

    /// Removes `key`'s entry and returns its result, for the caller to release once the lock
    /// is let go (the last release removes files: no system call under the lock).
    private func drop(_ key: ResultKey, from state: inout State) -> SharedResult? {
        guard let entry = state.entries.removeValue(forKey: key) else { return nil }
        state.bytes -= entry.result.bytes
        return entry.result
    }

    /// Drops `key`'s entry when its files were removed behind the cache's back. The files are
    /// looked at (`access(2)`) before the lock is taken, never under it.
    private func dropIfDamaged(_ key: ResultKey) {
        guard let cached = state.withLock({ $0.entries[key]?.result }), !cached.isIntact else { return }
        let dropped = state.withLock { state in state.entries[key]?.result === cached ? drop(key, from: &state) : nil }
        dropped?.release()
    }

    /// Drops every cached entry (their files go) and cancels running work: at shutdown.
    func removeAll() {
        let dropped = state.withLock { state -> [SharedResult] in
            let dropped = Array(state.entries.keys).compactMap { drop($0, from: &state) }
            state.recency = []
            state.recencyHead = 0
            for flight in state.flights.values { flight.task?.cancel() }
            return dropped
        }
        for result in dropped { result.release() }
    }

    /// Entries cached now (for tests and metrics).
    var count: Int { state.withLock { $0.entries.count } }
}

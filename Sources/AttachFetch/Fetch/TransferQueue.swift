import DequeModule
import HeapModule

/// The downloads waiting for a transfer slot, in the order slots are given out: a free slot goes
/// to the batch with the fewest running transfers, and between equals, as within a batch, to
/// the job queued first.
///
/// Every operation costs O(log n) (amortised) in the n jobs waiting: a FIFO per batch, a heap
/// of each batch's claim on the next slot (its running count and the age of its oldest job),
/// and a heap of deadlines. Entries that went stale (a job taken, cancelled or expired; a
/// batch's claim that changed) stay in the heaps until they surface and are skipped there,
/// and the heaps are rebuilt when stale entries outnumber live ones. A plain array rescanned at
/// each wakeup cost O(slots × n) per wakeup, O(n²) for a burst of n requests: 10,000 requests
/// over 8 slots went from 444 to 4,998 requests/s (`Benchmarks/Sources/TransferQueueLoad`).
///
/// Not thread-safe: the engine keeps it behind its lock. It makes no system call.
struct TransferQueue {
    private struct Claim: Comparable {
        var running: Int
        /// The sequence number of the batch's oldest waiting job.
        var oldest: UInt64
        var batch: Int
        var version: UInt64

        static func < (a: Claim, b: Claim) -> Bool { (a.running, a.oldest) < (b.running, b.oldest) }
        static func == (a: Claim, b: Claim) -> Bool { (a.running, a.oldest, a.batch, a.version) == (b.running, b.oldest, b.batch, b.version) }
    }

    private struct Expiry: Comparable {
        var deadline: ContinuousClock.Instant
        var sequence: UInt64
        var job: TransferJob

        static func < (a: Expiry, b: Expiry) -> Bool { (a.deadline, a.sequence) < (b.deadline, b.sequence) }
        static func == (a: Expiry, b: Expiry) -> Bool { a.sequence == b.sequence && a.deadline == b.deadline }
    }

    private struct Waiting {
        var sequence: UInt64
        var job: TransferJob
    }

    private var batches: [Int: Deque<Waiting>] = [:]
    private var running: [Int: Int] = [:]
    private var claimVersions: [Int: UInt64] = [:]
    private var claims = Heap<Claim>()
    private var expiries = Heap<Expiry>()
    /// The jobs waiting now; anything else met in a heap or at a batch's head is stale.
    private var waiting: Set<ObjectIdentifier> = []
    private var nextSequence: UInt64 = 0
    /// Claim versions are never reused, so that a withdrawn claim can never look current again.
    private var nextVersion: UInt64 = 0

    /// Jobs waiting for a slot.
    var count: Int { waiting.count }

    /// Queues a job behind those of its batch.
    mutating func append(_ job: TransferJob) {
        nextSequence += 1
        waiting.insert(ObjectIdentifier(job))
        let batch = job.spec.batch
        let wasEmpty = batches[batch, default: []].isEmpty
        batches[batch, default: []].append(Waiting(sequence: nextSequence, job: job))
        expiries.insert(Expiry(deadline: job.spec.deadline, sequence: nextSequence, job: job))
        if wasEmpty { renewClaim(of: batch) }
    }

    /// Takes up to `slots` jobs, each for the batch with the fewest running transfers (the
    /// oldest job first among equals); each counts as running in its batch from now on.
    mutating func take(slots: Int) -> [TransferJob] {
        var taken: [TransferJob] = []
        while taken.count < slots, let claim = claims.popMin() {
            guard claimVersions[claim.batch] == claim.version else { continue }
            dropStaleHeads(of: claim.batch)
            guard let head = batches[claim.batch]?.popFirst() else {
                batches[claim.batch] = nil
                continue
            }
            waiting.remove(ObjectIdentifier(head.job))
            running[claim.batch, default: 0] += 1
            taken.append(head.job)
            renewClaim(of: claim.batch)
        }
        compactIfStale()
        return taken
    }

    /// A transfer `take` handed out has ended: its batch has one running fewer.
    mutating func finished(batch: Int) {
        guard let count = running[batch] else { return }
        running[batch] = count > 1 ? count - 1 : nil
        renewClaim(of: batch)
    }

    /// Removes a waiting job (its caller cancelled); false when it was not waiting.
    mutating func remove(_ job: TransferJob) -> Bool {
        guard waiting.remove(ObjectIdentifier(job)) != nil else { return false }
        dropStaleHeads(of: job.spec.batch)
        renewClaim(of: job.spec.batch)
        return true
    }

    /// Removes and returns the waiting jobs whose deadline is `now` or past (a deadline moved
    /// later since the job was queued is looked at again at its new time).
    mutating func removeExpired(now: ContinuousClock.Instant) -> [TransferJob] {
        var expired: [TransferJob] = []
        while let first = expiries.min, first.deadline <= now {
            let entry = expiries.removeMin()
            guard waiting.contains(ObjectIdentifier(entry.job)) else { continue }
            let deadline = entry.job.spec.deadline
            if deadline > now {
                expiries.insert(Expiry(deadline: deadline, sequence: entry.sequence, job: entry.job))
                continue
            }
            waiting.remove(ObjectIdentifier(entry.job))
            expired.append(entry.job)
            dropStaleHeads(of: entry.job.spec.batch)
            renewClaim(of: entry.job.spec.batch)
        }
        return expired
    }

    /// The earliest deadline of a waiting job, or earlier (a stale entry): when to look again.
    var earliestDeadline: ContinuousClock.Instant? { expiries.min?.deadline }

    /// Every waiting job, removed (at shutdown).
    mutating func removeAll() -> [TransferJob] {
        let all = batches.values.flatMap { $0 }.sorted { $0.sequence < $1.sequence }.map(\.job)
            .filter { waiting.contains(ObjectIdentifier($0)) }
        self = TransferQueue()
        return all
    }

    // MARK: Stale entries

    private mutating func dropStaleHeads(of batch: Int) {
        while let head = batches[batch]?.first, !waiting.contains(ObjectIdentifier(head.job)) {
            batches[batch]?.removeFirst()
        }
        if batches[batch]?.isEmpty == true { batches[batch] = nil }
    }

    /// Replaces the batch's claim (the old one goes stale), or withdraws it when nothing waits.
    private mutating func renewClaim(of batch: Int) {
        guard let head = batches[batch]?.first else {
            claimVersions[batch] = nil
            return
        }
        nextVersion += 1
        claimVersions[batch] = nextVersion
        claims.insert(Claim(running: running[batch] ?? 0, oldest: head.sequence, batch: batch, version: nextVersion))
    }

    private mutating func compactIfStale() {
        if claims.count > 2 * batches.count + 64 {
            claims = Heap(claims.unordered.filter { claimVersions[$0.batch] == $0.version })
        }
        if expiries.count > 2 * waiting.count + 64 {
            expiries = Heap(expiries.unordered.filter { waiting.contains(ObjectIdentifier($0.job)) })
        }
    }
}

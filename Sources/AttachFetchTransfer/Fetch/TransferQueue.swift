import DequeModule
import HeapModule

/// The downloads waiting for a transfer slot, in the order slots are given out.
///
/// Slots are shared at two levels. A free slot goes to the host (scheme, name and port of the
/// URL) with the fewest running transfers, the host whose oldest job waited longest first among
/// equals; a host already at `maxPerHost` running transfers gets none until one of them ends.
/// Within that host it goes to the batch with the fewest running transfers (counted over every
/// host), and between equals, as within a batch, to the job queued first. So one host cannot
/// hold every slot while another host's transfers wait, and one batch cannot hold every slot of
/// a host while another batch waits for it.
///
/// Every operation costs O(log n) (amortised) in the n jobs waiting, times the few hosts one
/// batch waits on: a heap of hosts' claims, in each host a FIFO per batch and a heap of the
/// batches' claims, and a heap of deadlines. Entries that went stale (a job taken, cancelled or
/// expired; a claim that changed) stay in the heaps until they surface and are skipped there,
/// and the heaps are rebuilt when stale entries outnumber live ones. A plain array rescanned at
/// each wakeup cost O(slots × n) per wakeup, O(n²) for a burst of n requests: 10,000 requests
/// over 8 slots went from 444 to 4,998 requests/s (`Benchmarks/Sources/TransferQueueLoad`).
///
/// Not thread-safe: the engine keeps it behind its lock. It makes no system call.
///
/// Its state is internal rather than private only so that its claims
/// (`TransferQueue+Claims.swift`) can keep it; nothing outside the two files touches it.
struct TransferQueue {
    /// A host's or a batch's claim on the next slot: fewer running first, then the one whose
    /// oldest waiting job (its sequence number) came first.
    struct Claim<Owner: Hashable>: Comparable {
        package var running: Int
        package var oldest: UInt64
        package var owner: Owner
        package var version: UInt64

        static func < (a: Claim, b: Claim) -> Bool { (a.running, a.oldest) < (b.running, b.oldest) }
        static func == (a: Claim, b: Claim) -> Bool { a.version == b.version && a.owner == b.owner }
    }

    typealias HostClaim = Claim<String>
    typealias BatchClaim = Claim<Int>

    struct Expiry: Comparable {
        package var deadline: ContinuousClock.Instant
        package var sequence: UInt64
        package var job: TransferJob

        static func < (a: Expiry, b: Expiry) -> Bool { (a.deadline, a.sequence) < (b.deadline, b.sequence) }
        static func == (a: Expiry, b: Expiry) -> Bool { a.sequence == b.sequence && a.deadline == b.deadline }
    }

    struct Waiting {
        package var sequence: UInt64
        package var job: TransferJob
    }

    /// One host's waiting jobs and running count.
    struct Host {
        package var batches: [Int: Deque<Waiting>] = [:]
        /// Every waiting job of the host in queue order (stale entries dropped at the head).
        package var order: Deque<Waiting> = []
        var claims = Heap<BatchClaim>()
        var claimVersions: [Int: UInt64] = [:]
        package var running = 0
    }

    /// Transfers one host may run at once.
    package let maxPerHost: Int
    /// Hosts that asked for a pause (Retry-After): none of their jobs start.
    package var paused: Set<String> = []
    /// Hosts being probed after their breaker's cool-down: one job at a time.
    package var probing: Set<String> = []
    /// What the queue knows of an https host's protocol (see `learn`).
    var protocols: [String: HostProtocol] = [:]

    /// An https host's protocol, as far as the queue knows it.
    enum HostProtocol {
        /// No transfer to it has ended yet: one at a time, so that the first connection's ALPN
        /// says whether the others can share it (libcurl's PIPEWAIT does not hold back
        /// hundreds of transfers added at once; they opened a connection each).
        case learning
        /// HTTP/2: as many at once as one connection carries (libcurl's default of 100
        /// streams), so that they share it.
        case multiplexed
        /// One transfer per connection.
        case plain
    }

    /// Streams libcurl puts on one HTTP/2 connection by default (CURLMOPT_MAX_CONCURRENT_STREAMS).
    static let streamsPerConnection = 100
    package var hosts: [String: Host] = [:]
    var hostClaims = Heap<HostClaim>()
    var hostClaimVersions: [String: UInt64] = [:]
    /// Running transfers per batch, over every host.
    var batchRunning: [Int: Int] = [:]
    /// The hosts each batch has waiting jobs for.
    var batchHosts: [Int: Set<String>] = [:]
    var expiries = Heap<Expiry>()
    /// The jobs waiting now; anything else met in a heap or at a FIFO's head is stale.
    package var waiting: Set<ObjectIdentifier> = []
    var nextSequence: UInt64 = 0
    /// Claim versions are never reused, so that a withdrawn claim can never look current again.
    var nextVersion: UInt64 = 0

    init(maxPerHost: Int = .max) {
        self.maxPerHost = maxPerHost
    }

    /// Jobs waiting for a slot.
    package var count: Int { waiting.count }

    /// Running transfers to `host` (for tests and metrics).
    package func running(host: String) -> Int { hosts[host]?.running ?? 0 }

    /// Holds back (or lets go) every job for `host`: it asked for a pause.
    package mutating func pause(_ host: String, _ on: Bool) {
        if on { paused.insert(host) } else { paused.remove(host) }
        renewHostClaim(host)
    }

    /// What `host` speaks: `learning` is set for a new https host, the rest once a transfer to
    /// it has ended. The record is bounded: past 10,000 hosts it starts again.
    mutating func learn(_ host: String, _ knowledge: HostProtocol) {
        if protocols.count >= 10_000 && protocols[host] == nil { protocols = [:] }
        protocols[host] = knowledge
        renewHostClaim(host)
    }

    /// What the queue knows of `host`'s protocol.
    func knowledge(of host: String) -> HostProtocol? { protocols[host] }

    /// Lets one job at a time run for `host` (its breaker is half-open), or as many as usual.
    package mutating func probe(_ host: String, _ on: Bool) {
        if on { probing.insert(host) } else { probing.remove(host) }
        renewHostClaim(host)
    }

    package func limit(of host: String) -> Int {
        if paused.contains(host) { return 0 }
        if probing.contains(host) { return 1 }
        switch protocols[host] {
        case .learning: return 1
        case .multiplexed: return min(maxPerHost, Self.streamsPerConnection)
        case .plain, nil: return maxPerHost
        }
    }

    /// Queues a job behind those of its batch and host.
    package mutating func append(_ job: TransferJob) {
        nextSequence += 1
        let entry = Waiting(sequence: nextSequence, job: job)
        waiting.insert(ObjectIdentifier(job))
        let (batch, host) = (job.spec.batch, job.spec.origin)
        let hostWasIdle = hosts[host]?.order.isEmpty ?? true
        let batchWasEmpty = hosts[host]?.batches[batch]?.isEmpty ?? true
        hosts[host, default: Host()].batches[batch, default: []].append(entry)
        hosts[host]!.order.append(entry)
        batchHosts[batch, default: []].insert(host)
        expiries.insert(Expiry(deadline: job.spec.deadline, sequence: nextSequence, job: job))
        if batchWasEmpty { renewBatchClaim(host: host, batch: batch) }
        if hostWasIdle { renewHostClaim(host) }
    }

    /// Takes up to `slots` jobs, each for the host, then the batch, with the fewest running
    /// transfers (the oldest job first among equals); each counts as running from now on.
    package mutating func take(slots: Int) -> [TransferJob] {
        var taken: [TransferJob] = []
        while taken.count < slots, let claim = hostClaims.popMin() {
            guard hostClaimVersions[claim.owner] == claim.version else { continue }
            hostClaimVersions[claim.owner] = nil
            // A host whose claim finds nothing to take is left without one (never re-queued
            // here, so this loop always ends); its next job or withdrawal renews it.
            guard let job = takeOne(from: claim.owner) else { continue }
            taken.append(job)
            renewHostClaim(claim.owner)
        }
        compactIfStale()
        return taken
    }

    /// A transfer `take` handed out has ended: its host and its batch have one running fewer.
    package mutating func finished(_ job: TransferJob) {
        let (batch, host) = (job.spec.batch, job.spec.origin)
        if let count = batchRunning[batch] { batchRunning[batch] = count > 1 ? count - 1 : nil }
        if hosts[host] != nil { hosts[host]!.running = max(0, hosts[host]!.running - 1) }
        for waitingHost in batchHosts[batch] ?? [] { renewBatchClaim(host: waitingHost, batch: batch) }
        renewHostClaim(host)
    }

    /// Removes a waiting job (its caller cancelled); false when it was not waiting.
    package mutating func remove(_ job: TransferJob) -> Bool {
        guard waiting.remove(ObjectIdentifier(job)) != nil else { return false }
        withdrawn(job)
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
            withdrawn(entry.job)
        }
        return expired
    }

    /// Removes and returns every waiting job for `host` (the host is known to be failing).
    package mutating func removeAll(host: String) -> [TransferJob] {
        guard let entries = hosts[host]?.order else { return [] }
        let jobs = entries.map(\.job).filter { waiting.remove(ObjectIdentifier($0)) != nil }
        for job in jobs { withdrawn(job) }
        return jobs
    }

    /// The earliest deadline of a waiting job, or earlier (a stale entry): when to look again.
    var earliestDeadline: ContinuousClock.Instant? { expiries.min?.deadline }

    /// Every waiting job, removed (at shutdown).
    package mutating func removeAll() -> [TransferJob] {
        let all = hosts.values.flatMap(\.order).sorted { $0.sequence < $1.sequence }.map(\.job)
            // remove, not contains: a job queued again after a Retry-After has two entries.
            .filter { waiting.remove(ObjectIdentifier($0)) != nil }
        hosts = [:]
        hostClaims = Heap()
        hostClaimVersions = [:]
        batchRunning = [:]
        batchHosts = [:]
        expiries = Heap()
        waiting = []
        return all
    }
}

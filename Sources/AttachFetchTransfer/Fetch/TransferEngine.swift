package import CCurl
import Foundation
import Logging
import Synchronization

/// Runs every download of one pipeline on a `CurlEngine` thread with libcurl's multi interface.
///
/// Jobs wait in a Swift queue and get a curl handle only when one of the slots is free (as
/// many as `TransferPace` lets start, at most `maxConcurrent` running) and their host has fewer
/// than `maxPerHost` running, so time spent waiting never counts
/// against a request's own timeouts. Slots are shared fairly between hosts, and within a host
/// between batches (`TransferQueue`). A running transfer is never pre-empted; its own timeouts
/// bound how long it holds a slot. Bodies share a budget of bytes in temporary files
/// (`InflightBytes`); a body that does not fit waits, paused, until earlier ones end.
package final class TransferEngine: CurlEngineWorkload, @unchecked Sendable {
    // @unchecked Sendable: `shared` is behind a lock; `sniffer`, `inflight`, `share`, `active`
    // and `pace` are used only by the engine thread (after `init` hands them over); `core.wakeup()` is
    // safe from any thread; the counters are atomics. The extensions in TransferEngine+*.swift
    // keep to the same rules.
    package struct Shared {
        var queue: TransferQueue
        var breakers: OriginBreakers
        /// Jobs whose callers cancelled, for the engine to take out of the queue.
        var cancelled: [TransferJob] = []
        package var stopping = false
    }

    package let shared: Locked<Shared>
    private let core: CurlEngine
    private let sniffer: MagicSniffer
    private let share: CurlShare
    private let inflight: InflightBytes
    private var pace: TransferPace
    /// Jobs per second the decoders get through, for the pace (nil: none finished yet).
    package let decodeRate: @Sendable () -> Double?
    private let logger: Logger
    private(set) var active: [UnsafeMutableRawPointer: EasyTransfer] = [:] {
        didSet { runningCount.store(active.count, ordering: .relaxed) }
    }
    /// `active.count`, readable from any thread (for metrics).
    let runningCount = Atomic<Int>(0)
    /// `pace` as it was made: `pace(decodeRate:)` reads only its settings, never what the
    /// engine thread changes, so any thread may ask this copy.
    let paceRule: TransferPace
    let connectionsOpened = Atomic<Int>(0)
    let connectionsReused = Atomic<Int>(0)
    package let peakInflightBytes = Atomic<Int64>(0)
    package let clock: AttachFetchClock
    /// Hosts that asked for a pause (Retry-After), until when. Engine thread only.
    private var pauses: [String: ContinuousClock.Instant] = [:]
    /// Room a retried request must still have after the delay the server asked for.
    static let retryRoom: Duration = .seconds(1)

    package init(maxConcurrent: Int, adaptive: Bool = false, decoderThreads: Int = 2, decodeRate: @escaping @Sendable () -> Double? = { nil },
         maxPerHost: Int, maxInflightBytes: Int64, breaker: (failures: Int, cooldown: Duration),
         clock: AttachFetchClock, logger: Logger) throws(AttachFetchError) {
        // Idle connections kept for reuse: as many as may run, so a batch's connections are
        // still there for the next one.
        self.core = try CurlEngine(threadName: "af-curl", maxIdleConnections: maxConcurrent, maxHostConnections: maxPerHost, logger: logger)
        self.shared = Locked(Shared(queue: TransferQueue(maxPerHost: maxPerHost),
                                    breakers: OriginBreakers(failures: breaker.failures, cooldown: breaker.cooldown)))
        self.clock = clock
        self.sniffer = try MagicSniffer()
        self.share = try CurlShare()
        self.inflight = InflightBytes(limit: maxInflightBytes)
        self.pace = TransferPace(cap: maxConcurrent, adaptive: adaptive, decoderThreads: decoderThreads)
        self.paceRule = pace
        self.decodeRate = decodeRate
        self.logger = logger
        core.start(self)
    }

    /// Downloads one body. Cancelling the calling task stops the transfer; the outcome is then
    /// `cancelled`, delivered after any partial file is gone.
    package func fetch(_ spec: TransferSpec) async -> TransferOutcome {
        let job = TransferJob(spec: spec)
        return await withTaskCancellationHandler {
            enum Accepted { case queued, stopping, cancelled, refused(Reason) }
            let accepted = shared.withLock { shared -> Accepted in
                if shared.stopping { return .stopping }
                // Cancelled before it was queued: `onCancel` ran first and found nothing to remove.
                if job.isCancelRequested { return .cancelled }
                switch shared.breakers.admit(spec.origin, now: clock.now) {
                case .refuse(let reason): return .refused(reason)
                case .probe: shared.queue.probe(spec.origin, true)
                case .go: break
                }
                if spec.origin.hasPrefix("https://") && shared.queue.knowledge(of: spec.origin) == nil {
                    shared.queue.learn(spec.origin, .learning)
                }
                shared.queue.append(job)
                return .queued
            }
            switch accepted {
            case .refused(let reason): return TransferOutcome(failure: reason, endedWhileQueued: true)
            case .stopping: return TransferOutcome.failed(.cancelled, "the pipeline was shut down")
            case .cancelled: return TransferOutcome(failure: .init(code: .cancelled, message: "cancelled while the request was queued"),
                                                    endedWhileQueued: true)
            case .queued: break
            }
            core.wakeup()
            return await job.outcome()
        } onCancel: {
            job.requestCancel()
            shared.withLock { $0.cancelled.append(job) }
            core.wakeup()
        }
    }

    /// Stops the thread after finishing every job as cancelled. Blocks until it has.
    package func shutdown() {
        shared.withLock { $0.stopping = true }
        core.wakeup()
        core.waitUntilStopped()
    }

    // MARK: Engine thread (CurlEngineWorkload)

    package func turn(_ multi: CurlMulti) -> Duration? {
        // Deadlines and Retry-After pauses are instants of the pipeline's clock; a paused
        // body's waiting, the stall timer and the transfer limit are measured in real time, as
        // the timings are. Each is read once a turn.
        let now = clock.now
        let realNow = ContinuousClock.now
        let wait = enforceLimits(now: now, realNow: realNow)
        for transfer in inflight.admitWaiting() {
            transfer.resume(now: realNow)
            if transfer.abortReason != nil { finish(transfer.handle, curlCode: nil) }
        }
        let rate = decodeRate()
        let freeSlots = pace.startable(now: realNow, running: active.count, decodeRate: rate)
        let resumed = pauses.filter { $0.value <= now }.map(\.key)
        for host in resumed { pauses[host] = nil }
        let (starting, cancelled, expired, stopping, stillQueued) = shared.withLock {
            shared -> ([TransferJob], [TransferJob], [TransferJob], Bool, Bool) in
            if shared.stopping { return ([], [], shared.queue.removeAll(), true, false) }
            for host in resumed { shared.queue.pause(host, false) }
            let cancelled = shared.cancelled.filter { shared.queue.remove($0) }
            shared.cancelled = []
            let expired = shared.queue.removeExpired(now: now)
            let starting = shared.queue.take(slots: freeSlots)
            return (starting, cancelled, expired, false, shared.queue.count > 0)
        }
        for job in cancelled {
            var outcome = TransferOutcome.failed(.cancelled, "cancelled while the request was queued")
            outcome.endedWhileQueued = true
            job.finish(outcome)
        }
        for job in expired {
            // The deadline is checked first: the batch cancels its tasks when it fires.
            var outcome = now >= job.spec.deadline && !stopping
                ? TransferOutcome.failed(.deadlineExceeded, "the batch deadline passed while the request was queued")
                : TransferOutcome.failed(.cancelled, "cancelled while the request was queued")
            outcome.endedWhileQueued = true
            job.finish(outcome)
        }
        if stopping {
            for transfer in active.values { transfer.abort(.cancelled, "the pipeline was shut down") }
            for key in Array(active.keys) { finish(key, curlCode: nil) }
            return nil
        }
        for job in starting { start(job, in: multi, now: now) }
        peakInflightBytes.store(inflight.peakWritten, ordering: .relaxed)
        // `wait` was worked out before these started: look at them again as `enforceLimits`
        // does for any transfer whose stall timer is not armed yet (20 ms), not a second later.
        var longest = starting.isEmpty ? wait : min(wait, .milliseconds(20))
        pace.started(starting.count)
        // Jobs held back by the pace (every slot it allowed was taken, and the cap is not
        // reached): look again when a few more may start. Jobs the queue held back (a host at
        // its cap or paused) wait for a transfer's end or the pause's, not for this.
        if stillQueued && pace.adaptive && starting.count >= freeSlots && active.count < pace.cap {
            longest = min(longest, TransferPace.lookAgain)
        }
        if let queuedDeadline = shared.withLock({ $0.queue.earliestDeadline }) {
            longest = min(longest, max(.zero, queuedDeadline - now))
        }
        if let pauseEnd = pauses.values.min() { longest = min(longest, max(.zero, pauseEnd - now)) }
        return longest
    }

    package func completed(_ easy: UnsafeMutableRawPointer, result: CURLcode, in multi: CurlMulti) {
        finish(easy, curlCode: result)
    }

    /// The multi handle failed: every running transfer ends with that reason.
    package func multiFailed(_ failure: Reason, in multi: CurlMulti) {
        for transfer in active.values { transfer.abort(failure.code, failure.message) }
        for key in Array(active.keys) { finish(key, curlCode: nil) }
    }

    private func start(_ job: TransferJob, in multi: CurlMulti, now: ContinuousClock.Instant) {
        let transfer: EasyTransfer
        do {
            transfer = try EasyTransfer(job: job, sniffer: sniffer, inflight: inflight, share: share, clock: clock)
        } catch {
            ended(job, .failed(.ioError, error.message))
            return
        }
        if let failure = transfer.prepare(now: now) {
            var outcome = transfer.complete(curlCode: nil)
            outcome.failure = failure
            ended(job, outcome)
            return
        }
        if let failure = multi.add(transfer.handle) {
            var outcome = transfer.complete(curlCode: nil)
            outcome.failure = failure
            ended(job, outcome)
            return
        }
        active[transfer.handle] = transfer
        logger.trace("transfer started", metadata: ["url": "\(URLRedaction.redacted(job.spec.url))"])
    }

    package func finish(_ handle: UnsafeMutableRawPointer, curlCode: CURLcode?) {
        guard let transfer = active.removeValue(forKey: handle) else { return }
        if let failure = core.multi.remove(handle) {
            logger.debug("transfer not removed cleanly", metadata: ["problem": "\(failure.message)"])
        }
        if let connects = CurlOption.long(handle, CURLINFO_NUM_CONNECTS), transfer.receivedAnything {
            if connects == 0 {
                connectionsReused.add(1, ordering: .relaxed)
            } else {
                connectionsOpened.add(connects, ordering: .relaxed)
            }
        }
        let outcome = transfer.complete(curlCode: curlCode)
        logger.trace("transfer finished", metadata: [
            "url": "\(URLRedaction.redacted(transfer.job.spec.url))",
            "result": "\(outcome.failure?.code.rawValue ?? "ok")",
        ])
        ended(transfer.job, outcome)
    }

    /// A job the queue handed out has ended: its host's and batch's slot counts go down, its
    /// host's breaker hears how it went, and then its caller gets the outcome, or, when the
    /// server asked to retry after a delay that fits, the job waits in the queue once more.
    private func ended(_ job: TransferJob, _ outcome: TransferOutcome) {
        var outcome = outcome
        let host = job.spec.origin
        let now = clock.now
        var retryAt: ContinuousClock.Instant?
        if let delay = outcome.retryAfter, let status = outcome.httpStatus {
            let fits = now + delay + Self.retryRoom < job.spec.deadline
            if fits && job.takeRetry() {
                retryAt = now + delay
            } else {
                outcome.failure = Reason(code: .httpStatus, message: "the server answered HTTP \(status) and asked to retry after "
                    + "\(Self.seconds(delay)) s" + (fits ? "; it was retried once already" : ", which the deadline does not leave time for"))
            }
        }
        let wall = Date(timeIntervalSince1970: clock.wallSeconds)
        let (closing, retrying) = shared.withLock { shared -> ([(TransferJob, Reason)], Bool) in
            shared.queue.finished(job)
            // An answer tells whether the host's connection is shared (HTTP/2) or not; a
            // transfer that got none leaves the next one to find out.
            if shared.queue.knowledge(of: host) == .learning && outcome.httpVersion != 0 {
                shared.queue.learn(host, outcome.httpVersion >= CURL_HTTP_VERSION_2_0 ? .multiplexed : .plain)
            }
            switch shared.breakers.record(host, failure: outcome.originFailure, now: now, wall: wall) {
            case .opened(let reason):
                shared.queue.probe(host, false)
                // A host that answers lately gets its waiting requests tried (`OriginBreakers`).
                if shared.breakers.endsWaiting(host) { return (shared.queue.removeAll(host: host).map { ($0, reason) }, false) }
            case .closed:
                shared.queue.probe(host, false)
            case .none:
                break
            }
            guard retryAt != nil, !shared.stopping else { return ([], false) }
            // Its other transfers wait for the pause too, rather than send more requests.
            shared.queue.pause(host, true)
            shared.queue.append(job)
            return ([], true)
        }
        if retrying, let retryAt {
            pauses[host] = max(pauses[host] ?? retryAt, retryAt)
            logger.debug("retrying after Retry-After", metadata: ["url": "\(URLRedaction.redacted(job.spec.url))"])
        } else {
            job.finish(outcome)
        }
        for (waiting, reason) in closing { waiting.finish(TransferOutcome(failure: reason, endedWhileQueued: true)) }
    }

    private static func seconds(_ duration: Duration) -> String {
        let milliseconds = duration.milliseconds
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000)" : String(format: "%.1f", Double(milliseconds) / 1000)
    }
}

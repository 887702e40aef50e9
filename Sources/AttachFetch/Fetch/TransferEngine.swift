internal import CCurl
import Foundation
import Logging
import Synchronization

/// Runs every download of one pipeline on one dedicated thread with libcurl's multi interface.
///
/// Jobs wait in a Swift queue and get a curl handle only when one of `maxConcurrent` slots is
/// free, so time spent waiting never counts against a request's own timeouts.
///
/// Slots are shared fairly between the batches that have waiting jobs: a free slot goes to
/// the waiting batch with the fewest running transfers (the oldest job first among equals), so
/// with B busy batches each gets about `maxConcurrent / B` slots as soon as slots free up. A
/// running transfer is never pre-empted; its own timeouts bound how long it holds a slot.
final class TransferEngine: @unchecked Sendable {
    // @unchecked Sendable: `shared` is behind a lock; `multi`, `sniffer` and `active` are used
    // only by the engine thread (after `init` hands them over), except `multi.wakeup()`, which
    // libcurl documents as safe to call from any thread.
    private struct Shared {
        var queue = TransferQueue()
        /// Jobs whose callers cancelled, for the engine to take out of the queue.
        var cancelled: [TransferJob] = []
        var stopping = false
    }

    private let shared = Locked(Shared())
    private let multi: CurlMulti
    private let sniffer: MagicSniffer
    private let maxConcurrent: Int
    private let logger: Logger
    private var active: [UnsafeMutableRawPointer: EasyTransfer] = [:] {
        didSet { runningCount.store(active.count, ordering: .relaxed) }
    }
    /// `active.count`, readable from any thread (for metrics).
    private let runningCount = Atomic<Int>(0)
    private let stopped = DispatchSemaphore(value: 0)

    init(maxConcurrent: Int, logger: Logger) throws(AttachFetchError) {
        self.multi = try CurlMulti(maxIdleConnections: maxConcurrent)
        self.sniffer = try MagicSniffer()
        self.maxConcurrent = maxConcurrent
        self.logger = logger
        let thread = Thread { [self] in
            nameCurrentThread("af-curl")
            self.run()
        }
        thread.start()
    }

    /// Downloads one body. Cancelling the calling task stops the transfer; the outcome is then
    /// `cancelled`, delivered after any partial file is gone.
    func fetch(_ spec: TransferSpec) async -> TransferOutcome {
        let job = TransferJob(spec: spec)
        return await withTaskCancellationHandler {
            enum Accepted { case queued, stopping, cancelled }
            let accepted = shared.withLock { shared -> Accepted in
                if shared.stopping { return .stopping }
                // Cancelled before it was queued: `onCancel` ran first and found nothing to remove.
                if job.isCancelRequested { return .cancelled }
                shared.queue.append(job)
                return .queued
            }
            switch accepted {
            case .stopping: return TransferOutcome.failed(.cancelled, "the pipeline was shut down")
            case .cancelled: return TransferOutcome(failure: .init(code: .cancelled, message: "cancelled while the request was queued"),
                                                    endedWhileQueued: true)
            case .queued: break
            }
            multi.wakeup()
            return await job.outcome()
        } onCancel: {
            job.requestCancel()
            shared.withLock { $0.cancelled.append(job) }
            multi.wakeup()
        }
    }

    /// Transfers holding a slot now, and jobs waiting for one.
    var inFlight: (running: Int, queued: Int) {
        (runningCount.load(ordering: .relaxed), shared.withLock { $0.queue.count })
    }

    /// Stops the thread after finishing every job as cancelled. Blocks until it has.
    func shutdown() {
        shared.withLock { $0.stopping = true }
        multi.wakeup()
        stopped.wait()
    }

    // MARK: Engine thread

    private func run() {
        while true {
            let freeSlots = maxConcurrent - active.count
            let (starting, cancelled, expired, stopping) = shared.withLock {
                shared -> ([TransferJob], [TransferJob], [TransferJob], Bool) in
                if shared.stopping { return ([], [], shared.queue.removeAll(), true) }
                let cancelled = shared.cancelled.filter { shared.queue.remove($0) }
                shared.cancelled = []
                let expired = shared.queue.removeExpired(now: .now)
                return (shared.queue.take(slots: freeSlots), cancelled, expired, false)
            }
            for job in cancelled {
                var outcome = TransferOutcome.failed(.cancelled, "cancelled while the request was queued")
                outcome.endedWhileQueued = true
                job.finish(outcome)
            }
            let now = ContinuousClock.now
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
                stopped.signal()
                return
            }
            for job in starting { start(job) }

            var running: Int32 = 0
            if let failure = multi.perform(running: &running) { failAll(failure) }
            let activeBefore = active.count
            while let (easy, result) = multi.nextDone() { finish(easy, curlCode: result) }
            let wait = enforceLimits()
            var curlTimeout = -1
            switch multi.timeout() {
            case .success(let milliseconds): curlTimeout = milliseconds
            case .failure(let failure): failAll(failure)
            }
            var timeoutMs = curlTimeout >= 0 ? min(curlTimeout, wait) : wait
            // A slot came free: go round at once to start the next queued job.
            if active.count < activeBefore { timeoutMs = 0 }
            if let failure = multi.poll(milliseconds: Int32(max(0, timeoutMs))) {
                failAll(failure)
                // Never spin on a multi handle that keeps failing.
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
    }

    private func start(_ job: TransferJob) {
        let transfer: EasyTransfer
        do {
            transfer = try EasyTransfer(job: job, sniffer: sniffer)
        } catch {
            ended(job, .failed(.ioError, error.message))
            return
        }
        if let failure = transfer.prepare() {
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
        logger.trace("transfer started", metadata: ["url": "\(job.spec.url)"])
    }

    private func finish(_ handle: UnsafeMutableRawPointer, curlCode: CURLcode?) {
        guard let transfer = active.removeValue(forKey: handle) else { return }
        if let failure = multi.remove(handle) {
            logger.debug("transfer not removed cleanly", metadata: ["problem": "\(failure.message)"])
        }
        let outcome = transfer.complete(curlCode: curlCode)
        logger.trace("transfer finished", metadata: [
            "url": "\(transfer.job.spec.url)",
            "result": "\(outcome.failure?.code.rawValue ?? "ok")",
        ])
        ended(transfer.job, outcome)
    }

    /// A job the queue handed out has ended: its batch's slot count goes down, then its caller
    /// gets the outcome.
    private func ended(_ job: TransferJob, _ outcome: TransferOutcome) {
        shared.withLock { $0.queue.finished(batch: job.spec.batch) }
        job.finish(outcome)
    }

    /// The multi handle failed: every running transfer ends with that reason.
    private func failAll(_ failure: Reason) {
        for transfer in active.values { transfer.abort(failure.code, failure.message) }
        for key in Array(active.keys) { finish(key, curlCode: nil) }
    }

    /// Cancels, deadline-expires and stall-expires active transfers. Returns how many
    /// milliseconds the loop may sleep before one of these clocks next needs looking at.
    private func enforceLimits() -> Int {
        let now = ContinuousClock.now
        var wait: Duration = .seconds(1)
        var stopping: [UnsafeMutableRawPointer] = []
        for (handle, transfer) in active {
            let spec = transfer.job.spec
            if now >= spec.deadline {
                transfer.abort(.deadlineExceeded, "the batch deadline passed during the transfer")
            } else if transfer.job.isCancelRequested {
                transfer.abort(.cancelled, "the request was cancelled")
            } else {
                wait = min(wait, spec.deadline - now)
                if !transfer.stallArmed {
                    // Armed once the request can be sent: on a fresh connection after connecting,
                    // on a reused keep-alive connection (whose connect time stays 0) at once.
                    if transfer.receivedAnything
                        || (CurlOption.offset(handle, CURLINFO_PRETRANSFER_TIME_T) ?? 0) > 0
                        || (CurlOption.offset(handle, CURLINFO_CONNECT_TIME_T) ?? 0) > 0 {
                        transfer.stallArmed = true
                        transfer.lastActivity = max(transfer.lastActivity, now)
                    } else {
                        wait = min(wait, .milliseconds(20))
                    }
                }
                if transfer.stallArmed {
                    let quietUntil = transfer.lastActivity + spec.timeout.stall
                    if now >= quietUntil {
                        transfer.abort(.timeout, "no data arrived for \(spec.timeout.stall.milliseconds) ms")
                    } else {
                        wait = min(wait, quietUntil - now)
                    }
                }
            }
            if transfer.abortReason != nil { stopping.append(handle) }
        }
        for handle in stopping { finish(handle, curlCode: nil) }
        let queuedDeadline = shared.withLock { $0.queue.earliestDeadline }
        if let queuedDeadline { wait = min(wait, max(.zero, queuedDeadline - now)) }
        // Round up so the loop wakes after, not just before, the instant it waits for.
        return Int(wait.milliseconds) + 1
    }
}

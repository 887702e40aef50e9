package import CCurl
import Foundation
import Logging

/// What a `CurlEngine` runs: the downloads (`TransferEngine`) or the object-store requests
/// (`StoreEngine`). Every method is called on the engine's own thread, one at a time, so a
/// workload's engine-side state needs no lock.
package protocol CurlEngineWorkload: AnyObject, Sendable {
    /// One turn of the loop, before libcurl runs: end what was cancelled or expired, then add
    /// the handles that may start to `multi`. Returns the longest the loop may then sleep, or
    /// `nil` to stop (the workload has finished everything it held).
    func turn(_ multi: CurlMulti) -> Duration?
    /// libcurl finished `easy` (already still in `multi`; the workload removes it).
    func completed(_ easy: UnsafeMutableRawPointer, result: CURLcode, in multi: CurlMulti)
    /// The multi handle failed: the workload ends every running handle with `failure`.
    func multiFailed(_ failure: Reason, in multi: CurlMulti)
}

/// The one libcurl engine loop of the project: a dedicated thread that owns a multi handle,
/// runs its transfers, and sleeps in `curl_multi_poll` until a socket, a timer or `wakeup()`
/// needs it. The downloads and the object-store requests each run one.
///
/// Error policy, the same for every workload: when `curl_multi_perform`, `curl_multi_timeout`
/// or `curl_multi_poll` fails, every running handle ends with `ioError` and libcurl's own
/// message (the multi handle's state can no longer be trusted for them); after a failed poll
/// the loop waits 10 ms before going round, so that a handle that keeps failing cannot spin a
/// core. Queued work is not failed: it starts on the next turn.
package final class CurlEngine: @unchecked Sendable {
    // @unchecked Sendable: `multi` is used only by the engine thread once `start` has handed it
    // over, except `wakeup()`, which libcurl documents as safe to call from any thread; the
    // semaphore is thread-safe.
    package let multi: CurlMulti
    private let stopped = DispatchSemaphore(value: 0)
    private let threadName: String
    private let logger: Logger

    /// Makes the multi handle; `start` starts the thread.
    package init(threadName: String, maxIdleConnections: Int, maxHostConnections: Int? = nil,
         logger: Logger = Logger(label: "attach-fetch", factory: { _ in SwiftLogNoOpLogHandler() })) throws(AttachFetchError) {
        self.multi = try CurlMulti(maxIdleConnections: maxIdleConnections, maxHostConnections: maxHostConnections)
        self.threadName = threadName
        self.logger = logger
    }

    /// Starts the thread running `workload` until its `turn` returns nil. The thread holds the
    /// workload until then.
    package func start(_ workload: some CurlEngineWorkload) {
        let thread = Thread { [self] in
            nameCurrentThread(threadName)
            run(workload)
        }
        thread.start()
    }

    /// Breaks the engine's sleep, from any thread. A failure is logged, as nothing else can be
    /// done: the loop then sees the work at its next turn, when its poll times out.
    package func wakeup() {
        if let failure = multi.wakeup() {
            logger.error("the engine could not be woken", metadata: ["thread": "\(threadName)", "reason": "\(failure.message)"])
        }
    }

    /// Blocks until the loop has stopped (the workload's `turn` returned nil).
    package func waitUntilStopped() { stopped.wait() }

    private func run(_ workload: some CurlEngineWorkload) {
        while true {
            guard let longest = workload.turn(multi) else {
                stopped.signal()
                return
            }
            var running: Int32 = 0
            if let failure = multi.perform(running: &running) { workload.multiFailed(failure, in: multi) }
            var completedAny = false
            while let (easy, result) = multi.nextDone() {
                workload.completed(easy, result: result, in: multi)
                completedAny = true
            }
            // Round up so the loop wakes after, not just before, the instant it waits for.
            var milliseconds = Int(longest.milliseconds) + (longest > .zero ? 1 : 0)
            switch multi.timeout() {
            case .success(let wanted) where wanted >= 0: milliseconds = min(milliseconds, wanted)
            case .success: break
            case .failure(let failure): workload.multiFailed(failure, in: multi)
            }
            // A slot came free: go round at once, so that the next queued job starts.
            if completedAny { milliseconds = 0 }
            if let failure = multi.poll(milliseconds: Int32(clamping: max(0, milliseconds))) {
                workload.multiFailed(failure, in: multi)
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
    }
}

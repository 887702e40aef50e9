import AttachFetchCore
import DequeModule
import Foundation

/// A fixed set of threads for blocking C work, so that it never runs on Swift's cooperative
/// pool, whose few threads must stay free for async code. Each thread owns a `Slot`, made on
/// that thread and handed to every job it runs: the decoder pools' is the decoder worker
/// process the thread drives (`WorkerThread`, in AttachFetchDecoderKeeper); the blocking pool's is nothing.
package final class WorkerPool<Slot: AnyObject>: Sendable {
    // Sendable: `jobs`, `stopping`, `running` and `taken` are only touched with `condition` locked.
    private final class State: @unchecked Sendable {
        let condition = NSCondition()
        /// Taken from the front, so that a job's closure (and what it holds) is let go as soon
        /// as a thread takes it.
        var jobs = Deque<@Sendable (Slot) -> Void>()
        var stopping = false
        /// Threads that have not yet ended (and reaped their worker process).
        var running = 0
        /// Jobs a thread has taken from `jobs` so far.
        var taken = 0
    }

    private let state = State()
    private let threads: Int
    /// Moving average of one job's busy time on a thread, in seconds; nil before the first.
    private let jobSeconds = Locked<Double?>(nil)
    /// What a job submitted after `stop()` gets instead of a thread's slot (it runs at once, on
    /// the submitting thread).
    private let stoppedSlot: @Sendable () -> Slot

    /// - Parameters:
    ///   - makeSlot: each thread's slot, made on that thread when it starts.
    ///   - stoppedSlot: the stand-in a late job gets once the pool is stopped.
    package init(threads: Int, name: String, makeSlot: @escaping @Sendable () -> Slot, stoppedSlot: @escaping @Sendable () -> Slot) {
        self.stoppedSlot = stoppedSlot
        self.threads = threads
        state.running = threads
        for index in 0..<threads {
            let (state, jobSeconds) = (self.state, self.jobSeconds)
            let thread = Thread {
                nameCurrentThread("\(name)-\(index)")
                do {
                    let slot = makeSlot()
                    WorkerPool.work(state, slot, jobSeconds)
                }
                // The slot is gone (a decoder slot's process stopped and reaped with it).
                state.condition.lock()
                state.running -= 1
                state.condition.broadcast()
                state.condition.unlock()
            }
            thread.start()
        }
    }

    /// Stops the threads once the jobs queued now are done, and waits for them: when it returns
    /// every thread's slot is gone (a decoder pool's worker processes stopped and reaped).
    /// Blocks; call it off the cooperative pool. A job submitted afterwards runs at once on the
    /// submitting thread, with `stoppedSlot` (a decoder slot that refuses decodes: `cancelled`).
    package func stop() {
        state.condition.lock()
        state.stopping = true
        state.condition.broadcast()
        while state.running > 0 { state.condition.wait() }
        state.condition.unlock()
    }

    deinit {
        state.condition.lock()
        state.stopping = true
        state.condition.broadcast()
        state.condition.unlock()
    }

    /// Jobs the pool gets through per second while it has work: its threads over the moving
    /// average of one job's busy time. Nil until a thread has finished its second job. The
    /// transfer engine starts downloads at twice this pace (`TransferPace`).
    package var jobsPerSecond: Double? {
        jobSeconds.withLock { $0 }.map { Double(threads) / max($0, 1e-6) }
    }

    /// Jobs the threads have taken from the queue so far, ended or not (a job abandoned while it
    /// waited is taken too, and returns at once): how a test knows that a decode is under way
    /// before it moves the pipeline's clock past the deadline.
    package var jobsStarted: Int {
        state.condition.lock()
        defer { state.condition.unlock() }
        return state.taken
    }

    package func submit(_ job: @escaping @Sendable (Slot) -> Void) {
        state.condition.lock()
        if state.stopping {
            state.condition.unlock()
            job(stoppedSlot())
            return
        }
        state.jobs.append(job)
        state.condition.signal()
        state.condition.unlock()
    }

    /// Runs `job` on a pool thread and returns its result: the one way async code waits for
    /// blocking work, off the cooperative pool.
    package func run<T: Sendable>(_ job: @escaping @Sendable (Slot) -> T) async -> T {
        await withCheckedContinuation { (done: CheckedContinuation<T, Never>) in
            submit { slot in done.resume(returning: job(slot)) }
        }
    }

    /// Runs `job` on a pool thread and returns its result or its error.
    package func run<T: Sendable, Failure: Error>(_ job: @escaping @Sendable (Slot) throws(Failure) -> T) async throws(Failure) -> T {
        try await run { slot in Result<T, Failure> { () throws(Failure) -> T in try job(slot) } }.get()
    }

    private static func work(_ state: State, _ slot: Slot, _ jobSeconds: Locked<Double?>) {
        // A thread's first job pays for its start (a decoder worker loading its libraries):
        // left out of the average, which would otherwise start an order of magnitude high.
        var first = true
        while true {
            state.condition.lock()
            while state.jobs.isEmpty && !state.stopping { state.condition.wait() }
            guard let job = state.jobs.popFirst() else {
                state.condition.unlock()
                return
            }
            state.taken += 1
            state.condition.unlock()
            let started = ContinuousClock.now
            job(slot)
            let busy = (ContinuousClock.now - started).seconds
            if first {
                first = false
                continue
            }
            // The newest job weighs an eighth: a few slow decodes move it, one does not.
            jobSeconds.withLock { $0 = $0.map { $0 + (busy - $0) / 8 } ?? busy }
        }
    }
}

/// A thread with nothing of its own: the slot of pools for blocking file work.
package final class PlainThread: Sendable {
    package static let shared = PlainThread()
}

/// Threads for blocking file work (publishing, reading files, sweeping directories).
package typealias BlockingPool = WorkerPool<PlainThread>

extension WorkerPool where Slot == PlainThread {
    package convenience init(threads: Int, name: String) {
        self.init(threads: threads, name: name, makeSlot: { .shared }, stoppedSlot: { .shared })
    }
}

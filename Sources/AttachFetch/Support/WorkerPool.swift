import DequeModule
import Foundation

/// A fixed set of threads for blocking C work, so that it never runs on Swift's cooperative
/// pool, whose few threads must stay free for async code. Each thread has a `WorkerThread`:
/// with process isolation, the decoder worker process that thread drives.
final class WorkerPool: Sendable {
    // Sendable: `jobs`, `stopping` and `running` are only touched with `condition` locked.
    private final class State: @unchecked Sendable {
        let condition = NSCondition()
        /// Taken from the front, so that a job's closure (and what it holds) is let go as soon
        /// as a thread takes it.
        var jobs = Deque<@Sendable (WorkerThread) -> Void>()
        var stopping = false
        /// Threads that have not yet ended (and reaped their worker process).
        var running = 0
    }

    private let state = State()

    /// - Parameters:
    ///   - launch: how each thread starts its decoder worker process; nil runs jobs on the
    ///     threads themselves (isolation `.none`).
    ///   - eager: start the workers now (no job waits for a process start), or at each
    ///     thread's first job (a pool that may never be used costs nothing); reserved workers
    ///     are taken now either way.
    init(threads: Int, name: String, launch: DecoderProcess.Launch?, eager: Bool) {
        state.running = threads
        for index in 0..<threads {
            let state = self.state
            let thread = Thread {
                nameCurrentThread("\(name)-\(index)")
                do {
                    let worker = WorkerThread(launch: launch, eager: eager)
                    WorkerPool.work(state, worker)
                }
                // The WorkerThread is gone, and with it its decoder process (stopped and reaped).
                state.condition.lock()
                state.running -= 1
                state.condition.broadcast()
                state.condition.unlock()
            }
            thread.start()
        }
    }

    /// Stops the threads once the jobs queued now are done, and waits for them: when it returns
    /// every decoder worker process of the pool has been stopped and reaped. Blocks; call it
    /// off the cooperative pool. A job submitted afterwards runs at once on the submitting
    /// thread, whose `WorkerThread` refuses decodes (`cancelled`).
    func stop() {
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

    func submit(_ job: @escaping @Sendable (WorkerThread) -> Void) {
        state.condition.lock()
        if state.stopping {
            state.condition.unlock()
            job(WorkerThread.refusing)
            return
        }
        state.jobs.append(job)
        state.condition.signal()
        state.condition.unlock()
    }

    private static func work(_ state: State, _ thread: WorkerThread) {
        while true {
            state.condition.lock()
            while state.jobs.isEmpty && !state.stopping { state.condition.wait() }
            guard let job = state.jobs.popFirst() else {
                state.condition.unlock()
                return
            }
            state.condition.unlock()
            job(thread)
        }
    }
}

/// What one pool thread owns: its decoder worker process, when decoding is isolated. Used by
/// that thread only, so not Sendable.
final class WorkerThread {
    private let launch: DecoderProcess.Launch?
    private var decoder: DecoderProcess?
    /// Set on the stand-in a stopped pool hands to late jobs: no decode runs.
    private let refuses: Bool

    /// What a stopped pool gives a job submitted after `stop()`: every decode is refused.
    static var refusing: WorkerThread { WorkerThread() }

    private init() {
        launch = nil
        refuses = true
    }

    init(launch: DecoderProcess.Launch?, eager: Bool) {
        self.launch = launch
        refuses = false
        // A reserved worker costs nothing to take (DecoderReserve): taken now even by a lazy
        // pool, so that its first job does not wait for the worker to set itself up.
        if let launch, eager || (launch.takesReserved && DecoderReserve.hasWorkers) {
            decoder = try? DecoderProcess(launch)
        }
    }

    /// Runs a decode job: in this thread's worker process (started again if it died), or here.
    func decode(_ job: DecodeJob, isAbandoned: () -> Bool) -> DecodeAnswer {
        if refuses { return DecodeAnswer(failure: Reason(code: .cancelled, message: "the pipeline was shut down")) }
        guard let launch else { return job.run(shouldStop: isAbandoned) }
        if decoder?.isAlive != true {
            do throws(Reason) { decoder = try DecoderProcess(launch) } catch {
                return DecodeAnswer(failure: error)
            }
        }
        let answer = decoder!.run(job, isAbandoned: isAbandoned)
        // A worker that died or was killed is replaced now, before the next job needs it.
        if decoder?.isAlive != true, !isAbandoned() { decoder = try? DecoderProcess(launch) }
        return answer
    }
}

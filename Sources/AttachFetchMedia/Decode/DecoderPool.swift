/// The decoder pools: each thread drives its own decoder worker process.
package typealias DecoderPool = WorkerPool<WorkerThread>

extension WorkerPool where Slot == WorkerThread {
    /// - Parameters:
    ///   - launch: how each thread starts its decoder worker process; nil runs jobs on the
    ///     threads themselves (isolation `.none`).
    ///   - eager: start the workers now (no job waits for a process start), or at each
    ///     thread's first job (a pool that may never be used costs nothing); reserved workers
    ///     are taken now either way.
    package convenience init(threads: Int, name: String, launch: DecoderProcess.Launch?, eager: Bool) {
        self.init(threads: threads, name: name, makeSlot: { WorkerThread(launch: launch, eager: eager) },
                  stoppedSlot: { WorkerThread.refusing })
    }
}

/// What one pool thread owns: its decoder worker process, when decoding is isolated. Used by
/// that thread only, so not Sendable.
package final class WorkerThread {
    private let launch: DecoderProcess.Launch?
    private var decoder: DecoderProcess?
    /// Set on the stand-in a stopped pool hands to late jobs: no decode runs.
    private let refuses: Bool

    /// What a stopped pool gives a job submitted after `stop()`: every decode is refused.
    package static var refusing: WorkerThread { WorkerThread() }

    private init() {
        launch = nil
        refuses = true
    }

    package init(launch: DecoderProcess.Launch?, eager: Bool) {
        self.launch = launch
        refuses = false
        // A reserved worker costs nothing to take (DecoderReserve): taken now even by a lazy
        // pool, so that its first job does not wait for the worker to set itself up.
        if let launch, eager || (launch.takesReserved && DecoderReserve.hasWorkers) {
            decoder = try? DecoderProcess(launch)
        }
    }

    /// Runs a decode job: in this thread's worker process (started again if it died), or here.
    package func decode(_ job: DecodeJob, isAbandoned: () -> Bool) -> DecodeAnswer {
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

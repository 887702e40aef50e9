import AttachFetchCore
import AttachFetchDecoderProtocol
#if canImport(Glibc)
import AttachFetchRuntime
import Glibc
#endif

/// The decoder pools: each thread drives its own decoder worker process.
package typealias DecoderPool = WorkerPool<WorkerThread>

extension WorkerPool where Slot == WorkerThread {
    /// - Parameters:
    ///   - launch: how each thread starts its decoder worker process; nil runs jobs on the
    ///     threads themselves (isolation `.none`), through `runHere`.
    ///   - eager: start the workers now (no job waits for a process start), or at each
    ///     thread's first job (a pool that may never be used costs nothing); reserved workers
    ///     are taken now either way.
    package convenience init(threads: Int, name: String, launch: DecoderProcess.Launch?, eager: Bool,
                             runHere: @escaping WorkerThread.RunHere) {
        self.init(threads: threads, name: name, makeSlot: { WorkerThread(launch: launch, eager: eager, runHere: runHere) },
                  stoppedSlot: { WorkerThread.refusing })
    }
}

/// What one pool thread owns: its decoder worker process, when decoding is isolated. Used by
/// that thread only, so not Sendable.
package final class WorkerThread {
    /// Runs a job in this process (isolation `.none`): the decoders' own code, which the keeper
    /// does not link; the pipeline hands it in.
    package typealias RunHere = @Sendable (DecodeJob, () -> Bool) -> DecodeAnswer

    private let launch: DecoderProcess.Launch?
    private let runHere: RunHere?
    /// This thread's libmagic handle, made at the first delivered file it checks.
    private var sniffer: MagicSniffer?
    private func magic() -> MagicSniffer? {
        if sniffer == nil { sniffer = try? MagicSniffer() }
        return sniffer
    }
    private var decoder: DecoderProcess?
    /// Set on the stand-in a stopped pool hands to late jobs: no decode runs.
    private let refuses: Bool

    /// What a stopped pool gives a job submitted after `stop()`: every decode is refused.
    package static var refusing: WorkerThread { WorkerThread() }

    private init() {
        launch = nil
        runHere = nil
        refuses = true
    }

    package init(launch: DecoderProcess.Launch?, eager: Bool, runHere: @escaping RunHere) {
        self.launch = launch
        self.runHere = runHere
        refuses = false
        // A reserved worker costs nothing to take (DecoderReserve): taken now even by a lazy
        // pool, so that its first job does not wait for the worker to set itself up.
        if let launch, eager || (launch.takesReserved && DecoderReserve.hasWorkers) {
            decoder = try? DecoderProcess(launch)
        }
    }

    /// Runs a decode job: in this thread's worker process (started again if it died), or here.
    /// - Parameter directory: where a confined worker's outputs are sealed (the job's place in
    ///   the work store, where results are kept); nil: the worker's work directory.
    package func decode(_ job: DecodeJob, sealingIn directory: String? = nil, isAbandoned: () -> Bool) -> DecodeAnswer {
        if refuses { return DecodeAnswer(failure: Reason(code: .cancelled, message: "the pipeline was shut down")) }
        guard let launch else {
            // In this process: the same checks, for the same sizes and hashes either way.
            let answer = runHere?(job, isAbandoned) ?? DecodeAnswer(failure: Reason(code: .ioError, message: "no decoder to run the job"))
            switch AnswerCheck.verify(answer, for: job, sealingIn: nil, sniffer: magic) {
            case .success(let checked): return checked
            case .failure(let refusal): return DecodeAnswer(failure: refusal)
            }
        }
        // A worker near its own CPU limit is replaced first (its limit cannot be raised), and
        // so is one that spoke unasked since its last answer: it is ended, never given the job.
        if decoder?.isAlive == true, decoder?.hasCPUFor(job) == false { decoder = nil }
        if decoder?.spokeUnasked == true {
            decoder?.end()
            decoder = nil
        }
        if decoder?.isAlive != true {
            do throws(Reason) { decoder = try DecoderProcess(launch) } catch {
                return DecodeAnswer(failure: error)
            }
        }
        var answer = decoder!.run(job, isAbandoned: isAbandoned)
        if decoder?.answeredAnEarlierJob == true, !isAbandoned(), job.rewindUnnamedOutput(), let fresh = try? DecoderProcess(launch) {
            // The worker answered an earlier job in this one's place and was ended for it (it
            // is dead and reaped): the job runs once more, on a fresh worker.
            decoder = fresh
            answer = fresh.run(job, isAbandoned: isAbandoned)
        }
        switch AnswerCheck.verify(answer, for: job, sealingIn: launch.workDirectory.map { directory ?? $0 }, sniffer: magic) {
        case .success(let checked): answer = checked
        case .failure(let refusal):
            // Never given another job: ended now, its job's outputs removed.
            decoder?.end()
            job.possibleOutputs.forEach { _ = unlink($0) }
            answer = DecodeAnswer(failure: refusal)
        }
        // One that has had its share of jobs is ended after its last: its successor starts (and
        // loads) while the next download runs, off this job's path and the next one's.
        if let given = decoder?.jobsSent, Int(given) >= launch.jobsPerWorker { decoder?.end() }
        // A worker that died, was killed or retired is replaced now, before the next job needs it.
        if decoder?.isAlive != true, !isAbandoned() { decoder = try? DecoderProcess(launch) }
        return answer
    }
}

// The keeper's alone: the worker never runs a job again.
private extension DecodeJob {
    /// Before the job runs again on another worker: empties its unnamed output and sets its
    /// offset to the start (what the ended worker wrote there is gone). False when it cannot
    /// run again: its output is its source's file, or emptying it failed. A named output needs
    /// nothing: the keeper removed it (`possibleOutputs`).
    func rewindUnnamedOutput() -> Bool {
        guard let output = outputBase.flatMap(UnnamedFile.descriptor(in:)) else { return true }
        if UnnamedFile.descriptor(in: source) == output { return false }
        return SafeFile.rewind(output)
    }
}

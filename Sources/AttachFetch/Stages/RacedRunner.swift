import AttachFetchRuntime

internal import Tracing

/// Runs the stages for the pipeline: each decode on its worker threads (in decoder worker
/// processes when isolated), raced against the batch deadline and the caller's cancellation.
/// A stage still running at the deadline does what it declares (fail or degrade); on
/// cancellation the attachment fails as cancelled.
struct RacedRunner: Sendable {
    let configuration: AttachFetchConfiguration
    let imageWorkers: DecoderPool
    let probeWorkers: DecoderPool
    /// Probes and transcodes of work nobody waits for (a campaign's whole clip,
    /// `ResultCaching.wholeClipBudget`): one thread, its worker at a lower CPU priority, so
    /// that it never holds a probe thread fresh work needs.
    let backgroundWorkers: DecoderPool
    /// The thread for blocking file work (publishing).
    let fileWorkers: BlockingPool
    /// Uploads ready files, when an object store is configured.
    let objectPublisher: ObjectPublisher?

    /// Stops every pool once its queued jobs are done, and waits until their decoder worker
    /// processes are reaped (blocking: off the cooperative pool).
    func stopWorkers() {
        imageWorkers.stop()
        probeWorkers.stop()
        backgroundWorkers.stop()
        fileWorkers.stop()
    }

    /// Runs `stages` on `work`; returns why the attachment stopped, or nil when it passed them all.
    func run(_ stages: [Stage], on work: inout AttachmentWork, batch: Batch) async -> Reason? {
        for stage in stages {
            switch stage.body {
            case .check(let check):
                if let reason = check(&work, configuration) { return reason }
            case .files(let applies, let body):
                guard applies(configuration) else { continue }
                let span = stage.startSpan()
                defer { span.end() }
                let (done, reason) = await fileWorkers.run { [work, configuration] _ in
                    var copy = work
                    let reason = body(&copy, configuration)
                    return (copy, reason)
                }
                work = done
                if let reason { return Stage.failed(reason, span) }
            case .upload(let body):
                guard let objectPublisher else { continue }
                let span = stage.startSpan()
                defer { span.end() }
                // The store calls are the span's children.
                var copy = work
                let reason = await ServiceContext.withValue(span.context) { await body(&copy, objectPublisher, batch) }
                work = copy
                if let reason { return Stage.failed(reason, span) }
            case .decode(let workers, let whenLate, let timing, let job, let take, let ifFailed):
                // A transcode stops in time to finish what it encoded as a clip (`TranscodeBudget`).
                guard let job = job(work, configuration)?.budgeted(remaining: batch.remaining) else { continue }
                let span = stage.startSpan()
                defer { span.end() }
                let started = ContinuousClock.now
                let pool = workers == .image ? imageWorkers : work.plan.background ? backgroundWorkers : probeWorkers
                guard let answer = await decode(job, on: pool, ledger: work.ledger, sealingIn: work.plan.workDirectory) else {
                    switch (batch.stopCause, whenLate) {
                    case (.cancellation, _): return Stage.failed(batch.stopReason(queued: false), span)
                    case (.deadline, .fail(let reason)): return Stage.failed(reason, span)
                    case (.deadline, .degrade):
                        span.attributes["attach_fetch.skipped_at_deadline"] = true
                        work.descriptor.recordSkippedAtDeadline(timing)
                        if case .note(let note) = ifFailed { note(batch.stopReason(queued: false), &work) }
                        continue
                    }
                }
                if let reason = Stage.finish(answer, started: started, timing: timing, ifFailed: ifFailed, take: take, work: &work) {
                    return Stage.failed(reason, span)
                }
                if span.isRecording, let failure = answer.failure { span.attributes["error.type"] = failure.code.rawValue }
            }
        }
        return nil
    }

    /// Runs a decode job on the pool's threads. Returns nil when the task was cancelled (the
    /// deadline or the caller) first; a job still running then is stopped (its worker killed,
    /// when isolated), and whatever it made goes to the ledger, which removes it.
    private func decode(_ job: DecodeJob, on pool: DecoderPool, ledger: FileLedger, sealingIn directory: String?) async -> DecodeAnswer? {
        let result = OneShot<DecodeAnswer>()
        pool.submit { thread in
            // Abandoned while queued: do not start. (Handing the ledger nothing still tells a
            // batch that has ended that its last late work is done, so its directory can go.)
            if result.isAbandoned { return ledger.own([]) }
            let made = thread.decode(job, sealingIn: directory) { result.isAbandoned }
            // Late: its files go (a sealed copy with the answer, the worker's own by the ledger).
            if !result.deliver(made) { ledger.own(made.files + made.superseded) }
        }
        return await result.wait()
    }
}

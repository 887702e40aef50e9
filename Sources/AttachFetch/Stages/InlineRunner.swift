/// Runs the stages one after another on the calling thread, in this process, with no deadline:
/// for `LocalMediaInspector` and the fuzzer.
struct InlineRunner {
    let configuration: AttachFetchConfiguration

    /// Runs `stages` on `work`; returns why the attachment stopped, or nil when it passed them all.
    func run(_ stages: [Stage], on work: inout AttachmentWork) -> Reason? {
        for stage in stages {
            switch stage.body {
            case .check(let check):
                if let reason = check(&work, configuration) { return reason }
            case .decode(_, _, let timing, let job, let take):
                guard let job = job(work, configuration) else { continue }
                let started = ContinuousClock.now
                let answer = job.run()
                if let reason = Stage.finish(answer, started: started, timing: timing, take: take, work: &work) { return reason }
            }
        }
        return nil
    }
}

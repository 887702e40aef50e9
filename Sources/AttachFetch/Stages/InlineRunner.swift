/// Runs the stages one after another on the calling thread, with no deadline: for
/// `LocalMediaInspector` and the fuzzer. Decode jobs go to one decoder worker process when the
/// configuration isolates decoders (the default), or run in this process with `.none`.
struct InlineRunner {
    let configuration: AttachFetchConfiguration
    /// This runner's decoder: a worker process, started at the first job, or this thread.
    private let decoder: WorkerThread

    init(configuration: AttachFetchConfiguration) throws(AttachFetchError) {
        self.configuration = configuration
        self.decoder = WorkerThread(launch: try DecoderProcess.launch(for: configuration, workDirectory: nil), eager: false, runHere: WorkerThread.inThisProcess)
    }

    /// Runs `stages` on `work`; returns why the attachment stopped, or nil when it passed them all.
    func run(_ stages: [Stage], on work: inout AttachmentWork) -> Reason? {
        for stage in stages {
            switch stage.body {
            case .check(let body), .files(_, let body):
                if let reason = body(&work, configuration) { return reason }
            case .upload:
                // Local inspection publishes nothing.
                continue
            case .decode(_, _, let timing, let job, let take, let ifFailed):
                guard let job = job(work, configuration) else { continue }
                let started = ContinuousClock.now
                let answer = decoder.decode(job) { false }
                if let reason = Stage.finish(answer, started: started, timing: timing, ifFailed: ifFailed, take: take, work: &work) {
                    return reason
                }
            }
        }
        return nil
    }
}

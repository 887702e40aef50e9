import Testing
@testable import AttachFetchDecoderKeeper

/// A worker's lifetime CPU limit (the kernel's backstop) and each job's allowance (the keeper's
/// count): the keeper, not the kernel, ends a job that runs long, whatever the machine.
@Suite struct WorkerCPUTests {
    /// On any core count the largest allowance fits a fresh worker's lifetime limit with the
    /// keeper's margin: a transcode is never handed to a worker the kernel would end midway.
    @Test(arguments: [1, 2, 5, 26, 128, 1_024])
    func theLifetimeLimitCoversTheLargestAllowance(cores: Int) {
        for perJob in [1, 20, 300] {
            let inAll = DecoderProcess.cpuSecondsInAll(perJob: perJob, cores: cores)
            #expect(inAll >= 600)
            for seconds in [nil, 0, 120, 3_600, 36_000] as [Double?] {
                let allowance = DecoderProcess.cpuAllowance(perJob: perJob, secondsToStop: seconds, cores: cores)
                #expect(allowance < Double(inAll) - 5, "\(cores) cores, \(perJob) s per job, stop in \(seconds ?? -1) s: \(allowance) of \(inAll)")
            }
        }
    }

    /// An encoding budget counts every core, up to the longest budget there is.
    @Test func anAllowanceCountsTheBudgetOnEveryCore() {
        #expect(DecoderProcess.cpuAllowance(perJob: 20, secondsToStop: nil, cores: 8) == 20)
        #expect(DecoderProcess.cpuAllowance(perJob: 20, secondsToStop: 10, cores: 8) == 100)
        #expect(DecoderProcess.cpuAllowance(perJob: 20, secondsToStop: -3, cores: 8) == 20)
        #expect(DecoderProcess.cpuAllowance(perJob: 20, secondsToStop: 1e9, cores: 2) == 20 + DecoderProcess.longestBudgetSeconds * 2)
    }
}

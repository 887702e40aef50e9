extension DecoderProcess {
    /// How the pipeline's threads start their workers.
    package struct Launch: Sendable {
        package var executable: String
        package var memoryBytes: Int
        package var cpuSecondsPerJob: Int
        package var fileSizeBytes: Int
        /// Whether a worker the program started ahead of need (`DecoderReserve`) may be taken:
        /// only for the default worker, which is what a reserved one is.
        package var takesReserved: Bool
        /// How long a worker no longer needed may take to exit before it is killed.
        package var exitGraceMilliseconds = 0
        /// The directory a worker may write and read beside system files (Landlock), where what
        /// it makes is sealed before it is used (`AnswerCheck`); nil: neither (the local
        /// inspector, whose outputs are named files beside the caller's own, never published).
        package var workDirectory: String?
        /// How much lower than this process's the worker's CPU priority is (`setpriority`, 0–19):
        /// work nobody waits for yields the cores to work someone does. The worker cannot raise
        /// it again (no `CAP_SYS_NICE`).
        package var niceness: Int32 = 0
        /// How many jobs a worker is given before it is replaced: a worker a file took over
        /// answers no more than these, whoever's they are.
        package var jobsPerWorker = 1_000
        /// Whether a worker may run where the kernel has no Landlock: it keeps to no directory
        /// then. False: it is refused before its first job (`ConfinementCheck`).
        package var runsWithoutLandlock = false
        /// The kernel's Landlock ABI as the keeper takes it: the running kernel's. Tests set 0
        /// to stand for a kernel without Landlock; no setting of the program reaches it.
        package var kernelLandlockABI = ConfinementCheck.kernelLandlockABI

        package init(executable: String, memoryBytes: Int, cpuSecondsPerJob: Int, fileSizeBytes: Int,
                     takesReserved: Bool, exitGraceMilliseconds: Int = 0) {
            (self.executable, self.memoryBytes, self.cpuSecondsPerJob) = (executable, memoryBytes, cpuSecondsPerJob)
            (self.fileSizeBytes, self.takesReserved, self.exitGraceMilliseconds) = (fileSizeBytes, takesReserved, exitGraceMilliseconds)
        }
    }
}

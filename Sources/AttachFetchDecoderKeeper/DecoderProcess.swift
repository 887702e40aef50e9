internal import CAttachFetchShims
import AttachFetchCore
import AttachFetchDecoderProtocol
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One decoder worker process, seen from the pipeline: it is started, given a job, waited
/// for, and killed when nobody waits any more or when it stops answering. Owned and used by
/// one pipeline thread only, so not Sendable.
package final class DecoderProcess {
    let pid: pid_t
    /// Our end of the socket pair; the worker's end is its standard input and output.
    private let socket: Int32
    private var alive = true
    private let exitGraceMilliseconds: Int
    /// Each job's CPU time, and the worker's in all (`DecoderWorker.Limits.cpuSeconds`).
    let cpuSecondsPerJob: Int
    let cpuSecondsInAll: Int
    /// The worker's CPU seconds, as last read (`CPUTime`), and the jobs answered since.
    private(set) var cpuUsed = 0.0
    private var jobsSinceReading = 0
    /// The number of the last job sent (JobWire's numbered frames): the jobs it was given.
    package private(set) var jobsSent: UInt32 = 0
    /// Whether the worker was ended for answering an earlier job again: the job it was running
    /// was not answered, and may run again on a fresh worker (`DecoderPool.decode`).
    package private(set) var answeredAnEarlierJob = false
    private lazy var cpuTime = CPUTime(pid: pid)
    /// The executable this worker was started from; nil when it was forked (`DecoderReserve`),
    /// whose code is the fork server's, loaded when the program started.
    private var executable: String?
    /// Whether it has answered a job: one that ends before its first answer with
    /// `DecoderWorker.otherVersionStatus` refused this pipeline's start.
    private var answeredAny = false
    /// Its exit status, once it exited on its own (not from a signal).
    private var exitStatus: Int32?
    /// Its limits, and whether its confinement was checked: it gets no job before.
    private let limits: DecoderWorker.Limits
    /// The kernel's Landlock ABI as the keeper takes it, and whether a worker may do without.
    private let kernelLandlockABI: Int32, runsWithoutLandlock: Bool
    private var confined = false

    package init(_ launch: Launch) throws(Reason) {
        let inAll = Self.cpuSecondsInAll(perJob: launch.cpuSecondsPerJob)
        let limits = DecoderWorker.Limits(memoryBytes: launch.memoryBytes, cpuSeconds: inAll,
                                          fileSizeBytes: launch.fileSizeBytes, parent: getpid(), workDirectory: launch.workDirectory)
        exitGraceMilliseconds = launch.exitGraceMilliseconds
        (cpuSecondsPerJob, cpuSecondsInAll) = (launch.cpuSecondsPerJob, inAll)
        self.limits = limits
        (kernelLandlockABI, runsWithoutLandlock) = (launch.kernelLandlockABI, launch.runsWithoutLandlock)
        if launch.takesReserved, let reserved = DecoderReserve.take() {
            Frame.boundSends(on: reserved.socket, milliseconds: Self.sendMilliseconds)
            // Its limits first, applied before it reads any job.
            if Frame.write(limits.handshake, to: reserved.socket) {
                pid = reserved.pid
                socket = reserved.socket
                return
            }
            close(reserved.socket)
            kill(reserved.pid, SIGKILL)
            while waitpid(reserved.pid, nil, 0) < 0 && errno == EINTR {}
        }
        (pid, socket) = try WorkerExecution.spawn(launch.executable, arguments: limits.arguments)
        Frame.boundSends(on: socket, milliseconds: Self.sendMilliseconds)
        executable = launch.executable
        // Before its first job, which the socket's order guarantees: the worker reads no job
        // before this call returns.
        if launch.niceness > 0 {
            let which = __priority_which_t(PRIO_PROCESS.rawValue)
            _ = setpriority(which, id_t(pid), min(19, getpriority(which, 0) + launch.niceness))
        }
    }

    deinit { stop(waitingUpTo: exitGraceMilliseconds) }

    /// How long a send to the worker may wait for room in its socket: a job is a few hundred
    /// bytes and a worker reads each before its answer, so only one that stopped reading fills
    /// it. Past this the send fails and the worker is ended (`Frame.boundSends`).
    static let sendMilliseconds = 2_000

    /// The socket's send bound as the kernel holds it, in milliseconds (for tests).
    var sendBoundMilliseconds: Int {
        var wait = timeval()
        var size = socklen_t(MemoryLayout<timeval>.size)
        guard getsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &wait, &size) == 0 else { return -1 }
        return wait.tv_sec * 1000 + wait.tv_usec / 1000
    }

    var isAlive: Bool { alive }

    /// Sends the job and waits for its answer, checking `isAbandoned` every 10 ms; when it
    /// turns true the worker is killed at once. A worker that dies answers for itself:
    /// `decoderCrashed` with the signal. Either way the files the job may have made are removed
    /// when it did not answer.
    package func run(_ job: DecodeJob, isAbandoned: () -> Bool) -> DecodeAnswer {
        if !confined, let refusal = checkConfinement(job, isAbandoned: isAbandoned) { return refusal }
        // Unnamed files go as descriptors: the worker reads and writes them through its copies.
        let descriptors: [Int32]
        switch job.descriptorsForWorker() {
        case .success(let sent): descriptors = sent
        case .failure(let reason): return DecodeAnswer(failure: reason)
        }
        defer { job.closeDescriptorsForWorker(descriptors) }
        jobsSent &+= 1
        let number = jobsSent
        guard let request = JobWire.encode(job, number: number), Frame.write(request, to: socket, descriptors: descriptors) else {
            return died(job)
        }
        var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let allowance = cpuAllowance(job)
        var started: Double?
        var polls = 0
        while true {
            if isAbandoned() {
                stop(waitingUpTo: 0)
                job.possibleOutputs.forEach { _ = unlink($0) }
                return DecodeAnswer(failure: Reason(code: .cancelled, message: "abandoned"))
            }
            let ready = poll(&poller, 1, 10)
            if ready < 0 && errno != EINTR { return died(job) }
            if ready > 0 { break }
            // The job's CPU time, every 100 ms, counted from the first reading (a job shorter
            // than that is never read: its first 0.1 s per thread is not counted).
            polls += 1
            guard polls % Self.pollsPerCPUReading == 0, let used = cpuTime.seconds() else { continue }
            cpuUsed = used
            guard let first = started else {
                started = used
                continue
            }
            if used - first > allowance {
                stop(waitingUpTo: 0)
                job.possibleOutputs.forEach { _ = unlink($0) }
                return DecodeAnswer(failure: Reason(code: .decoderCrashed, message: "the decoder process used more than its \(Int(allowance.rounded(.up))) CPU seconds for this job and was stopped \(Reason.cpuAllowanceEnding)"))
            }
        }
        // The rest of the answer must follow at once: a worker that sends part of one and stops
        // is ended, not waited for. One that sends more than one answer is ended before its
        // next job when the extra one is there by then (`spokeUnasked`), and otherwise here,
        // when it comes in place of this job's: its number is an earlier job's.
        guard let reply = Frame.read(from: socket, withinMilliseconds: Self.answerArrivalMilliseconds) else { return died(job) }
        if let call = DecoderWorker.ForbiddenCall(reply) { return stopped(job, for: call) }
        guard let (answer, answered) = JobWire.decodeAnswer(numbered: reply) else { return died(job) }
        guard answered == number else {
            answeredAnEarlierJob = true
            stop(waitingUpTo: 0)
            job.possibleOutputs.forEach { _ = unlink($0) }
            return DecodeAnswer(failure: Reason(code: .decoderCrashed, message: "the decoder process answered an earlier job again and was stopped"))
        }
        answeredAny = true
        if let failure = answer.failure, let refusal = AnswerCheck.refusal(ofFailure: failure) {
            stop(waitingUpTo: 0)
            job.possibleOutputs.forEach { _ = unlink($0) }
            return DecodeAnswer(failure: refusal)
        }
        // Short jobs are never read while they run: every so often, after one.
        jobsSinceReading += 1
        if jobsSinceReading >= Self.jobsPerCPUReading, let used = cpuTime.seconds() {
            (cpuUsed, jobsSinceReading) = (used, 0)
        }
        return answer
    }

    /// How long the rest of an answer may take once its first byte is there.
    static let answerArrivalMilliseconds: Int32 = 2_000

    /// How long a new worker may take to report its confinement (an executed one loads its
    /// libraries first: 80 ms here, far more under valgrind).
    static let confinementReportMilliseconds = 30_000

    /// Waits for the worker's `ConfinementReport` while the job is wanted, and checks it and
    /// `/proc` (`ConfinementCheck`); nil when the worker may have jobs. One short of what is
    /// required is ended before any job: `ioError` (never cached), naming what it lacks.
    private func checkConfinement(_ job: DecodeJob, isAbandoned: () -> Bool) -> DecodeAnswer? {
        var waited = 0
        while !Frame.arrives(on: socket, withinMilliseconds: 10) {
            waited += 10
            if isAbandoned() {
                stop(waitingUpTo: 0)
                return DecodeAnswer(failure: Reason(code: .cancelled, message: "abandoned"))
            }
            guard waited < Self.confinementReportMilliseconds else {
                stop(waitingUpTo: 0)
                return DecodeAnswer(failure: Reason(code: .ioError, message: "the decoder process did not report its confinement within \(waited / 1_000) s and was ended"))
            }
        }
        // A hang-up: it exited before reporting (another version's, or a crash); `died` says which.
        guard let frame = Frame.read(from: socket, withinMilliseconds: Self.answerArrivalMilliseconds) else { return died(job) }
        if let call = DecoderWorker.ForbiddenCall(frame) { return stopped(job, for: call) }
        guard let report = DecoderWorker.ConfinementReport(frame) else { return died(job) }
        if let problem = ConfinementCheck.problem(pid: pid, report: report, limits: limits, kernelLandlockABI: kernelLandlockABI,
                                                  runsWithoutLandlock: runsWithoutLandlock) {
            stop(waitingUpTo: 0)
            return DecodeAnswer(failure: Reason(code: .ioError, message: "the decoder process is not confined as required: \(problem); it was ended before its first job"))
        }
        confined = true
        return nil
    }

    /// Ends the worker at once: its answer was refused.
    func end() { stop(waitingUpTo: 0) }

    /// Whether something waits on the socket between jobs: an answer nobody asked for (a
    /// second one to the last job), which would be read as the next job's, or a hang-up.
    /// Before its first job, its confinement report is what is waiting, and is asked for.
    var spokeUnasked: Bool { alive && confined && Frame.arrives(on: socket, withinMilliseconds: 0) }

    /// Polls (10 ms each) between readings of the worker's CPU time while a job runs, and
    /// jobs between readings after one.
    static let pollsPerCPUReading = 10
    static let jobsPerCPUReading = 16

    /// The worker stopped answering: reap it and say why.
    private func died(_ job: DecodeJob) -> DecodeAnswer {
        // Its end of the socket closed: it is exiting (or already has); give it a moment to.
        let cause = stop(waitingUpTo: 1_000)
        job.possibleOutputs.forEach { _ = unlink($0) }
        if let executable, !answeredAny, exitStatus == DecoderWorker.otherVersionStatus {
            // Not the media's fault (ioError is never cached): the file at the path this program
            // started its workers from is not the decoder it was built with.
            return DecodeAnswer(failure: Reason(code: .ioError, message: Self.otherVersionMessage(executable)))
        }
        // The message ends as `Reason.ownLimitEndings` says for the limits that are ours.
        return DecodeAnswer(failure: Reason(code: .decoderCrashed, message: "the decoder process \(cause)"))
    }

    /// The worker made a call its allow-list traps (a decoder taken over, or a path of a
    /// decoder's that was not measured): it is exiting; the job fails naming the call.
    private func stopped(_ job: DecodeJob, for call: DecoderWorker.ForbiddenCall) -> DecodeAnswer {
        stop(waitingUpTo: 1_000)
        job.possibleOutputs.forEach { _ = unlink($0) }
        return DecodeAnswer(failure: Reason(code: .decoderCrashed, message: "the decoder process made a system call outside its allow-list, \(call), and was ended"))
    }

    /// Reaps the worker, killing it if it has not ended within `milliseconds`; returns how it
    /// ended, in words.
    @discardableResult
    private func stop(waitingUpTo milliseconds: Int) -> String {
        guard alive else { return "had already stopped" }
        alive = false
        cpuTime.close()
        close(socket)
        var status: Int32 = 0
        var waited = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            guard waited < milliseconds else {
                kill(pid, SIGKILL)
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                return "stopped answering and was killed"
            }
            usleep(1_000)
            waited += 1
        }
        // WIFSIGNALED / WTERMSIG / WEXITSTATUS are macros: signal in bits 0-6, exit code in 8-15.
        let signal = status & 0x7F
        if signal != 0 {
            return "died from signal \(signal) (\(DecoderProcess.signalName(signal)))"
        }
        exitStatus = (status >> 8) & 0xFF
        return "exited with status \((status >> 8) & 0xFF)"
    }

    /// What a worker that refused this pipeline's start says: its executable was replaced.
    package static func otherVersionMessage(_ executable: String) -> String {
        "the decoder executable \(executable) refused this pipeline's start (protocol \(DecoderWorker.protocolVersion)): it was replaced by another version while this program ran; restart the program"
    }

    static func signalName(_ signal: Int32) -> String {
        let names: [Int32: String] = [SIGSEGV: "SIGSEGV", SIGABRT: "SIGABRT", SIGBUS: "SIGBUS", SIGILL: "SIGILL",
                                      SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGXCPU: Reason.cpuLimitSignal,
                                      SIGXFSZ: Reason.fileSizeLimitSignal, SIGTRAP: "SIGTRAP", SIGSYS: "SIGSYS: forbidden system call"]
        return names[signal] ?? String(cString: strsignal(signal))
    }
}

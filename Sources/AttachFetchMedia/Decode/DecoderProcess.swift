internal import CAttachFetchShims
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

    /// A worker's whole environment, started or forked (`DecoderReserve` sets the same).
    /// SWIFT_BACKTRACE=enable=no: the Swift runtime's crash handler would try to start its
    /// backtracer (an exec the seccomp filter refuses) and, for a signal sent from outside,
    /// return and carry on; a worker that faults must simply die, for the pipeline to see.
    /// VIPSHOME=/dev/null: libvips maps none of its optional modules at start (the HEIF one
    /// is loaded when first needed), which halves a worker's start.
    static let workerEnvironment: [(name: String, value: String)] = [
        ("LC_ALL", "C"), ("SWIFT_BACKTRACE", "enable=no"), ("VIPSHOME", "/dev/null"),
    ]

    /// How the pipeline's threads start their workers.
    package struct Launch: Sendable {
        package var executable: String
        package var memoryBytes: Int
        package var cpuSecondsPerJob: Int
        package var fileSizeBytes: Int
        /// Whether a worker the program forked at its start (`DecoderReserve`) may be taken:
        /// only for the default worker, which is what a reserved one is.
        package var takesReserved: Bool
        /// How long a worker no longer needed may take to exit before it is killed.
        package var exitGraceMilliseconds = 0

        package init(executable: String, memoryBytes: Int, cpuSecondsPerJob: Int, fileSizeBytes: Int,
                     takesReserved: Bool, exitGraceMilliseconds: Int = 0) {
            (self.executable, self.memoryBytes, self.cpuSecondsPerJob) = (executable, memoryBytes, cpuSecondsPerJob)
            (self.fileSizeBytes, self.takesReserved, self.exitGraceMilliseconds) = (fileSizeBytes, takesReserved, exitGraceMilliseconds)
        }
    }

    package init(_ launch: Launch) throws(Reason) {
        let limits = DecoderWorker.Limits(memoryBytes: launch.memoryBytes, cpuSecondsPerJob: launch.cpuSecondsPerJob,
                                          fileSizeBytes: launch.fileSizeBytes, parent: getpid())
        exitGraceMilliseconds = launch.exitGraceMilliseconds
        if launch.takesReserved, let reserved = DecoderReserve.take() {
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
        var pair: [Int32] = [-1, -1]
        guard af_socketpair_stream_cloexec(&pair) == 0 else {
            throw Reason(code: .ioError, message: "cannot make the decoder's socket: \(String(cString: strerror(errno)))")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pair[1], 0)
        posix_spawn_file_actions_adddup2(&actions, pair[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        // Nothing else of this process (transfers' sockets, other workers' sockets) is inherited.
        _ = withUnsafeMutablePointer(to: &actions) { af_spawn_close_from($0, 3) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Default dispositions and an empty mask, whatever this process ignores or blocks
        // (SIGXCPU and SIGXFSZ must end the worker at its limits).
        var all = sigset_t(), none = sigset_t()
        sigfillset(&all)
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        let arguments = [launch.executable] + limits.arguments
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var environment = DecoderProcess.workerEnvironment.map { strdup("\($0.name)=\($0.value)") } + [nil]
        defer { environment.forEach { free($0) } }
        var child: pid_t = 0
        let status = posix_spawn(&child, launch.executable, &actions, &attributes, argv, &environment)
        close(pair[1])
        guard status == 0 else {
            close(pair[0])
            throw Reason(code: .ioError, message: "cannot start \(launch.executable): \(String(cString: strerror(status)))")
        }
        pid = child
        socket = pair[0]
    }

    deinit { stop(waitingUpTo: exitGraceMilliseconds) }

    var isAlive: Bool { alive }

    /// Sends the job and waits for its answer, checking `isAbandoned` every 10 ms; when it
    /// turns true the worker is killed at once. A worker that dies answers for itself:
    /// `decoderCrashed` with the signal. Either way the files the job may have made are removed
    /// when it did not answer.
    package func run(_ job: DecodeJob, isAbandoned: () -> Bool) -> DecodeAnswer {
        // Unnamed files go as descriptors: the worker reads and writes them through its copies.
        guard let request = JobWire.encode(job), Frame.write(request, to: socket, descriptors: job.unnamedDescriptors) else {
            return died(job)
        }
        var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        while true {
            if isAbandoned() {
                stop(waitingUpTo: 0)
                job.possibleOutputs.forEach { _ = unlink($0) }
                return DecodeAnswer(failure: Reason(code: .cancelled, message: "abandoned"))
            }
            let ready = poll(&poller, 1, 10)
            if ready < 0 && errno != EINTR { return died(job) }
            if ready > 0 { break }
        }
        guard let reply = Frame.read(from: socket), let answer = JobWire.decodeAnswer(reply) else {
            return died(job)
        }
        return answer
    }

    /// The worker stopped answering: reap it and say why.
    private func died(_ job: DecodeJob) -> DecodeAnswer {
        // Its end of the socket closed: it is exiting (or already has); give it a moment to.
        let cause = stop(waitingUpTo: 1_000)
        job.possibleOutputs.forEach { _ = unlink($0) }
        return DecodeAnswer(failure: Reason(code: .decoderCrashed, message: "the decoder process \(cause)"))
    }

    /// Reaps the worker, killing it if it has not ended within `milliseconds`; returns how it
    /// ended, in words.
    @discardableResult
    private func stop(waitingUpTo milliseconds: Int) -> String {
        guard alive else { return "had already stopped" }
        alive = false
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
        return "exited with status \((status >> 8) & 0xFF)"
    }

    static func signalName(_ signal: Int32) -> String {
        let names: [Int32: String] = [SIGSEGV: "SIGSEGV", SIGABRT: "SIGABRT", SIGBUS: "SIGBUS", SIGILL: "SIGILL",
                                      SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGXCPU: "SIGXCPU: CPU time limit",
                                      SIGXFSZ: "SIGXFSZ: file size limit", SIGTRAP: "SIGTRAP", SIGSYS: "SIGSYS: forbidden system call"]
        return names[signal] ?? String(cString: strsignal(signal))
    }
}

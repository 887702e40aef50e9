internal import CAttachFetchShims
import AttachFetchCore
import AttachFetchDecoderProtocol
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// How a worker's executable is found and started: the decoder beside the program, executed
/// with nothing of this process but its socket and `DecoderWorker.environment`. Used for the
/// workers a pipeline executes (`DecoderProcess`) and for the fork server (`DecoderReserve`).
package enum WorkerExecution {
    /// This process made non-dumpable before its first worker starts: its memory, descriptors
    /// and environment under /proc (`/proc/PID/mem` is as strong as the `process_vm_writev`
    /// the workers' filter refuses) are then open only to a process with CAP_SYS_PTRACE, which
    /// no worker has (it drops every capability). Seccomp cannot match paths; this closes them.
    private static let closedToWorkers: Void = { _ = af_prctl_set_dumpable(0) }()

    /// The same, ahead of any worker (for a program that starts a confined process itself).
    package static func closeThisProcessToWorkers() { _ = closedToWorkers }

    /// `attach-fetch-decoder` in the running program's directory: the default worker.
    package static var executablePathBesideProgram: String {
        let own = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return ((own as NSString).deletingLastPathComponent as NSString).appendingPathComponent("attach-fetch-decoder")
    }

    /// The same, when it is there and executable.
    static func executableBesideProgram() -> String? {
        let path = executablePathBesideProgram
        return access(path, X_OK) == 0 ? path : nil
    }

    /// Starts `executable` as a decoder worker with `arguments`: its socket as standard input
    /// and output, standard error to /dev/null, no other descriptor of this process, default
    /// signal dispositions and an empty mask, and `DecoderWorker.environment` as its whole
    /// environment. Answers its pid and this side's end of the socket.
    /// - Parameter messages: a `SOCK_SEQPACKET` socket (the fork server's), not a stream.
    static func spawn(_ executable: String, arguments: [String], messages: Bool = false) throws(Reason) -> (pid: pid_t, socket: Int32) {
        _ = closedToWorkers
        var pair: [Int32] = [-1, -1]
        guard (messages ? af_socketpair_seqpacket_cloexec(&pair) : af_socketpair_stream_cloexec(&pair)) == 0 else {
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
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var environment = DecoderWorker.environment.map { strdup("\($0.name)=\($0.value)") } + [nil]
        defer { environment.forEach { free($0) } }
        var child: pid_t = 0
        let status = posix_spawn(&child, executable, &actions, &attributes, argv, &environment)
        close(pair[1])
        guard status == 0 else {
            close(pair[0])
            throw Reason(code: .ioError, message: "cannot start \(executable): \(String(cString: strerror(status)))")
        }
        return (child, pair[0])
    }
}

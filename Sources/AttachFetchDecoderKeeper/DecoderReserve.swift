internal import CAttachFetchShims
import AttachFetchCore
import AttachFetchDecoderProtocol
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The fork server: one `attach-fetch-decoder` the program executes when it starts, from which
/// its pipelines' workers are forked instead of each being executed.
///
/// Why: an executed worker spends about 80 ms of CPU before its first job, binding the symbols
/// of the 180-odd libraries libvips and FFmpeg bring (callgrind: 80 % of its start is the
/// dynamic loader's `do_lookup_x`). The fork server pays that once; a worker forked from it is
/// ready in about a millisecond (docs/performance.md#workers-from-the-fork-server). Started at
/// the top of `main`, its own start passes while the program parses its arguments and
/// downloads.
///
/// It is executed, never forked from the program: it holds nothing of the program's memory or
/// environment (credentials among them), only `DecoderWorker.environment` and its socket, and
/// the workers it forks hold only what it loaded. Each worker waits for the limits the pipeline
/// that takes it sends first, and applies them before it reads any job, so it is confined
/// exactly as a worker executed for a job. Each is the program's own child (`CLONE_PARENT`):
/// the pipeline reaps it and reads how it ended. A pipeline takes workers from the fork server
/// only when its configuration names no `decoderExecutable`; when the fork server is gone (or
/// never started), it executes its workers.
public enum DecoderReserve {
    package struct Worker {
        package let pid: Int32
        package let socket: Int32
    }

    private struct ForkServer {
        let pid: pid_t
        /// A `SOCK_SEQPACKET` socket: each request is one message, so the pool's threads send
        /// theirs at once without a lock. Never closed (another thread may be sending on it
        /// when the server is retired, and a closed number can be reused): one descriptor for
        /// the program's life.
        let socket: Int32
    }

    private struct State {
        var server: ForkServer?
        /// Workers still to be taken ahead of need (`start(count:)`): a lazy pool's thread
        /// takes one when it starts while any are left (`hasWorkers`), as it took a reserved
        /// worker; past them, workers are forked when a job needs one.
        var aheadOfNeed = 0
    }

    /// Read and replaced under the lock; every system call on it is made after.
    private static let state = Locked(State())

    /// How long a request waits for its worker. The first one also waits for the fork server's
    /// own start (seconds under valgrind); past this the server is taken for stuck and retired.
    static let forkMilliseconds: Int32 = 30_000

    /// Starts the fork server (`attach-fetch-decoder` beside the program) for the first
    /// pipelines that start workers. Call it early in `main`. Returns `count` when it started
    /// (or was already running), 0 when the decoder is not there or cannot be started; the
    /// count itself bounds nothing (a forked worker costs about a millisecond).
    @discardableResult
    public static func start(count: Int) -> Int {
        guard count > 0 else { return 0 }
        if state.withLock({ $0.server != nil }) { return count }
        guard let executable = WorkerExecution.executableBesideProgram(),
              let started = try? WorkerExecution.spawn(executable, arguments: [DecoderWorker.forkServerArgument, "--parent", "\(getpid())"],
                                                      messages: true) else { return 0 }
        let kept = state.withLock { state -> Bool in
            guard state.server == nil else { return false }
            state.server = ForkServer(pid: started.pid, socket: started.socket)
            state.aheadOfNeed = count
            return true
        }
        // Another thread started one first: this one is not needed.
        if !kept { end(started.pid, socket: started.socket) }
        return count
    }

    /// Whether workers ahead of need are left to take, from a running fork server.
    static var hasWorkers: Bool { state.withLock { $0.server != nil && $0.aheadOfNeed > 0 } }

    /// A worker forked for the caller, waiting for its limits; nil when there is no fork server
    /// or it did not answer (it is then retired, and the caller executes its worker).
    package static func take() -> Worker? {
        let taken = state.withLock { state -> ForkServer? in
            state.aheadOfNeed = max(0, state.aheadOfNeed - 1)
            return state.server
        }
        guard let current = taken else { return nil }
        var pair: [Int32] = [-1, -1]
        guard af_socketpair_stream_cloexec(&pair) == 0 else { return nil }
        var request: UInt8 = 1
        let sent = af_send_with_descriptors(current.socket, &request, 1, [pair[1]], 1)
        close(pair[1])
        // Its pid, which must be a live child of this process: anything else is not a worker.
        guard sent == 1, let hello = Frame.read(from: pair[0], withinMilliseconds: forkMilliseconds),
              let pid = DecoderWorker.ForkedHello(hello)?.pid, waitpid(pid, nil, WNOHANG) == 0 else {
            close(pair[0])
            retire(current)
            return nil
        }
        return Worker(pid: pid, socket: pair[0])
    }

    /// Ends the fork server, if one runs; later workers are executed (or forked from a server
    /// started again). Only while no pipeline of this process is starting a worker: its socket
    /// is closed here.
    package static func stop() {
        let stopped = state.withLock { state -> ForkServer? in
            defer { (state.server, state.aheadOfNeed) = (nil, 0) }
            return state.server
        }
        if let stopped { end(stopped.pid, socket: stopped.socket) }
    }

    /// The fork server failed a request: no later one is sent to it, and it is ended.
    private static func retire(_ failed: ForkServer) {
        let isCurrent = state.withLock { state -> Bool in
            guard state.server?.pid == failed.pid else { return false }
            state.server = nil
            return true
        }
        if isCurrent { end(failed.pid, socket: nil) }
    }

    /// Ends the fork server: with its socket, by closing it (it exits on its own, as valgrind
    /// needs to write its counts), killed if it has not within `stopMilliseconds`; without, killed.
    private static func end(_ pid: pid_t, socket: Int32?) {
        if let socket {
            close(socket)
            var waited = 0
            while waitpid(pid, nil, WNOHANG) == 0 {
                guard waited < stopMilliseconds else { break }
                usleep(1_000)
                waited += 1
            }
            guard waited >= stopMilliseconds else { return }
        }
        kill(pid, SIGKILL)
        while waitpid(pid, nil, 0) < 0 && errno == EINTR {}
    }

    /// How long a fork server whose socket was closed may take to exit (seconds under valgrind).
    static let stopMilliseconds = 30_000
}

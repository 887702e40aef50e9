internal import CAttachFetchShims
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Decoder workers forked from the program's own process before it has any other thread, for
/// its pipeline to take instead of starting `attach-fetch-decoder`.
///
/// Why: a started worker spends about 80 ms of CPU before its first job, binding the symbols of
/// the 180-odd libraries libvips and FFmpeg bring (measured with perf: mostly the dynamic
/// loader's lookups). A program that links the same libraries has already paid that; a fork of
/// it costs a millisecond or two. For a short CLI run that is most of what isolation costs.
///
/// Only a process with a single thread can fork safely (a lock held by another thread would
/// stay held in the child forever), so `fork(count:)` is for the top of `main`, and does
/// nothing once the process has other threads. A pipeline takes reserved workers only when
/// its configuration names no `decoderExecutable`; it starts its own for the rest, and for
/// every replacement. A reserved worker is confined exactly as a started one: it waits,
/// single-threaded and holding nothing of the program but its socket, for the limits the
/// pipeline sends first, then applies them before it sees any job.
public enum DecoderReserve {
    struct Worker {
        let pid: pid_t
        package let socket: Int32
    }

    private static let workers = Mutex<[Worker]>([])

    /// Forks `count` decoder workers to be taken by the first pipelines that start workers.
    /// Call it first thing in `main`. Returns how many were forked: none when the process
    /// already runs other threads, or when a fork fails.
    @discardableResult
    public static func fork(count: Int) -> Int {
        guard count > 0, threadCount() == 1 else { return 0 }
        // libvips and FFmpeg set up once, here, for every worker to inherit (libvips' start
        // registers a few hundred types), when that leaves the process with one thread.
        guard (try? Vips.ensureStarted()) != nil, threadCount() == 1 else { return 0 }
        _ = FFmpeg.startup
        var forked: [Worker] = []
        for _ in 0..<count {
            var pair: [Int32] = [-1, -1]
            guard af_socketpair_stream_cloexec(&pair) == 0 else { break }
            let parent = getpid()
            let child = Glibc.fork()
            if child == 0 { becomeWorker(socket: pair[1], parent: parent) }
            close(pair[1])
            guard child > 0 else {
                close(pair[0])
                break
            }
            forked.append(Worker(pid: child, socket: pair[0]))
        }
        workers.withLock { $0.append(contentsOf: forked) }
        return forked.count
    }

    /// Whether a reserved worker is left.
    static var hasWorkers: Bool { workers.withLock { !$0.isEmpty } }

    /// A reserved worker, no longer reserved; nil when none is left.
    static func take() -> Worker? {
        workers.withLock { $0.isEmpty ? nil : $0.removeFirst() }
    }

    /// The child's side, right after the fork: nothing here may take a lock another thread of
    /// the program could have held (there was none) or touch the program's state.
    private static func becomeWorker(socket: Int32, parent: pid_t) -> Never {
        // Gone with the program (the thread that forked it is its main thread), and not
        // started at all if the program is already gone.
        _ = af_prctl_set_parent_death_signal(SIGKILL)
        if getppid() != parent { _exit(5) }
        // Its socket as standard input and output, as a started worker has; nothing else of
        // the program's (its output, other workers' sockets) stays open.
        guard dup2(socket, 0) == 0, dup2(socket, 1) == 1 else { _exit(6) }
        let null = open("/dev/null", O_WRONLY)
        if null >= 0 { _ = dup2(null, 2) }
        _ = af_close_from(3)
        // Default dispositions and an empty mask: the program's crash handlers (Swift's
        // backtracer) must not catch a decoder's fault, and SIGXCPU / SIGXFSZ must end the
        // worker at its limits.
        for signal in 1..<Int32(65) where signal != SIGKILL && signal != SIGSTOP {
            _ = Glibc.signal(signal, SIG_DFL)
        }
        var none = sigset_t()
        sigemptyset(&none)
        sigprocmask(SIG_SETMASK, &none, nil)
        // What a started worker gets as its environment.
        for variable in DecoderProcess.workerEnvironment { setenv(variable.name, variable.value, 1) }
        _ = setlocale(LC_ALL, "C")
        _ = af_prctl_set_name("attach-fetch-decoder")
        // The pipeline that takes this worker sends its limits first; a program that exits
        // without taking it closes the socket, and the worker ends.
        guard let frame = Frame.read(from: 0),
              let limits = DecoderWorker.Limits(handshake: frame),
              limits.parent == parent else { _exit(0) }
        DecoderWorker.serve(limits)
    }

    /// Threads of this process, from /proc.
    private static func threadCount() -> Int {
        guard let directory = opendir("/proc/self/task") else { return Int.max }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            if entry.pointee.d_name.0 != 0x2E { count += 1 }  // not "." or ".."
        }
        return count
    }
}
